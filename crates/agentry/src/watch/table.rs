//! The watches of one environment, indexed both ways: by target (to fire them) and by watcher
//! (to drop them with their watcher). Plain data inside the registry, under its lock.

use super::{Terminated, WatchTarget};
use crate::ids::{IdHash, MboxId, WatchId};
use crate::mbox::Mbox;
use crate::reason::ExitReason;
use std::collections::HashMap;

#[derive(Default)]
pub(crate) struct WatchTable {
    by_target: HashMap<WatchTarget, Vec<(WatchId, Mbox)>, IdHash>,
    by_watcher: HashMap<MboxId, Vec<(WatchId, WatchTarget)>, IdHash>,
    len: usize,
}

impl WatchTable {
    /// Watches alive.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn add(&mut self, id: WatchId, watcher: &Mbox, target: WatchTarget) {
        self.by_target
            .entry(target)
            .or_default()
            .push((id, watcher.clone()));
        self.by_watcher
            .entry(watcher.id())
            .or_default()
            .push((id, target));
        self.len += 1;
    }

    /// Removes `watcher`'s watch `id`; false if it has no such watch.
    pub(crate) fn remove(&mut self, watcher: MboxId, id: WatchId) -> bool {
        let Some(mine) = self.by_watcher.get_mut(&watcher) else {
            return false;
        };
        let Some(pos) = mine.iter().position(|&(w, _)| w == id) else {
            return false;
        };
        let (_, target) = mine.swap_remove(pos);
        if mine.is_empty() {
            self.by_watcher.remove(&watcher);
        }
        remove_entry(&mut self.by_target, target, |&(w, _)| w == id);
        self.len -= 1;
        true
    }

    /// Removes the watches of `target`, adding their `Terminated` messages to `out`.
    pub(crate) fn fire(
        &mut self,
        target: WatchTarget,
        reason: ExitReason,
        out: &mut Vec<(Mbox, Terminated)>,
    ) {
        // Most environments watch nothing: no hashing on every agent's departure then.
        if self.len == 0 {
            return;
        }
        let Some(watches) = self.by_target.remove(&target) else {
            return;
        };
        for (id, watcher) in watches {
            remove_entry(&mut self.by_watcher, watcher.id(), |&(w, _)| w == id);
            self.len -= 1;
            out.push((
                watcher,
                Terminated {
                    watch: id,
                    target,
                    reason,
                },
            ));
        }
    }

    /// Removes every watch `watcher` made.
    pub(crate) fn drop_watcher(&mut self, watcher: MboxId) {
        if self.len == 0 {
            return;
        }
        let Some(mine) = self.by_watcher.remove(&watcher) else {
            return;
        };
        for (id, target) in mine {
            remove_entry(&mut self.by_target, target, |&(w, _)| w == id);
            self.len -= 1;
        }
    }
}

/// Removes the first element matching `is` from the list under `key`, and the list if it
/// becomes empty.
fn remove_entry<K: std::hash::Hash + Eq, V>(
    map: &mut HashMap<K, Vec<V>, IdHash>,
    key: K,
    is: impl Fn(&V) -> bool,
) {
    if let Some(list) = map.get_mut(&key) {
        if let Some(pos) = list.iter().position(is) {
            list.swap_remove(pos);
        }
        if list.is_empty() {
            map.remove(&key);
        }
    }
}
