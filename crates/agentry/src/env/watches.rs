//! The env's side of death watch (`watch.rs` has the ground rules and the messages): making
//! and removing watches under the registry lock, and firing a watch of a target that is
//! already gone at once.

use super::EnvInner;
use crate::coop::registry::Actions;
use crate::error::WatchError;
use crate::ids::{CoopId, MboxId, WatchId};
use crate::mbox::Mbox;
use std::sync::Arc;

impl EnvInner {
    /// `watcher` watches the agent behind `target` (see the ground rules).
    pub(crate) fn watch_agent(
        self: &Arc<Self>,
        watcher: &Mbox,
        target: &Mbox,
    ) -> Result<WatchId, WatchError> {
        if watcher == target {
            return Err(WatchError::SelfWatch);
        }
        if target.shared().binding().is_none() {
            return Err(WatchError::NotRegistered(target.id()));
        }
        if !target.shared().is_of(Arc::as_ptr(self)) {
            return Err(WatchError::OtherEnv);
        }
        let (id, at_once) = self.registry.lock().watch_agent(watcher, target.shared());
        if let Some(t) = at_once {
            watcher.send(t);
        }
        Ok(id)
    }

    /// `watcher` watches the coop `coop`.
    pub(crate) fn watch_coop(self: &Arc<Self>, watcher: &Mbox, coop: CoopId) -> WatchId {
        let (id, at_once) = self.registry.lock().watch_coop(watcher, coop);
        if let Some(t) = at_once {
            watcher.send(t);
        }
        id
    }

    /// Removes `watcher`'s watch `id`.
    pub(crate) fn unwatch(&self, watcher: &Mbox, id: WatchId) -> Result<(), WatchError> {
        if self.registry.lock().watches.remove(watcher.id(), id) {
            Ok(())
        } else {
            Err(WatchError::UnknownWatch(id))
        }
    }

    /// Removes every watch `watcher` made (its incarnation finished for a restart).
    pub(crate) fn drop_watches_of(&self, watcher: MboxId) {
        self.registry.lock().watches.drop_watcher(watcher);
    }
}

/// Sends the `Terminated` messages of `actions` (outside the registry lock).
pub(crate) fn notify(actions: &mut Actions) {
    for (watcher, terminated) in actions.terminated.drain(..) {
        watcher.send(terminated);
    }
}
