//! The state an agent is in, published by its worker for readers on other threads
//! ([`EnvHandle::snapshot`](crate::EnvHandle::snapshot)). It lives in the agent's direct
//! mbox (its shared part) as one word; the names of the states come from the agent layer
//! through [`StateNames`], so this layer names no agent type.
//!
//! # Ground rules
//!
//! - Only the agent's worker writes it: when the agent has entered its initial states
//!   ([`started`](PublishedState::started), once per incarnation, with the incarnation's
//!   layout), after a handler's state change has been applied and after a state time limit
//!   switched the state ([`set`](PublishedState::set)). Nothing is written per message: an
//!   agent that never changes state writes it once per incarnation.
//! - The word packs the state's index with *whose* layout names it: its class's
//!   ([`StateNamesOf::class`], the layout of the first agent of its type that started: nearly
//!   every agent of a type shares its type's layout, `agent/layout.rs`) or the agent's own,
//!   kept beside its class by mbox id ([`StateNamesOf::own`]) for the rare agent whose
//!   definition differs. So an agent keeps 4 bytes for it, and starting one takes no lock and
//!   copies no reference unless its layout is not its class's.
//! - A state change is one relaxed store of the word: no lock, no fence. A word is always a
//!   consistent pair: the layout a class-layout word names never changes (`started` publishes
//!   the word with `Release` after setting it, readers load it with `Acquire`), and an
//!   own-layout word is written under the lock of the own layouts together with the layout it
//!   names — as is the word that replaces one — and read again under that lock by readers (a
//!   reader never pairs an index with another incarnation's layout, nor finds its layout gone).
//! - It is a report, not a synchronisation point: a reader sees the state as of the last
//!   publication, which may be one transition behind the worker.

use crate::ids::{IdHash, MboxId};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

/// The names of an agent's states by index (its layout, in the agent layer).
pub(crate) trait StateNames: Send + Sync {
    fn state_name(&self, index: u16) -> &str;
}

// The word's layout part: 0 before the agent started, else one of these.
/// The word's layout part: the class's layout names the state.
const CLASS: u32 = 1 << 16;
/// The word's layout part: the agent's own layout names the state.
const OWN: u32 = 2 << 16;
const INDEX: u32 = 0xFFFF;

/// Where the state names of the agents of one class are (kept in the class, `mbox/class.rs`).
#[derive(Default)]
pub(crate) struct StateNamesOf {
    /// The layout of the first agent of the class that started.
    class: OnceLock<Arc<dyn StateNames>>,
    /// The layouts of the agents whose layout is not the class's, by mbox.
    own: Mutex<HashMap<MboxId, Arc<dyn StateNames>, IdHash>>,
}

/// An agent's current state as its worker last published it (module docs).
#[derive(Default)]
pub(crate) struct PublishedState {
    word: AtomicU32,
}

impl PublishedState {
    /// The incarnation of the agent `me` of a class whose names are `names` has entered its
    /// initial state `state` of its layout `layout` (compared with the class's by address:
    /// nothing is cloned when it is the class's).
    pub(crate) fn started<L: StateNames + 'static>(
        &self,
        names: &StateNamesOf,
        me: MboxId,
        layout: &Arc<L>,
        state: u16,
    ) {
        let class = names
            .class
            .get_or_init(|| Arc::clone(layout) as Arc<dyn StateNames>);
        if std::ptr::addr_eq(Arc::as_ptr(class), Arc::as_ptr(layout)) {
            // An own layout it had is dropped, and the word replaced, under the lock: a reader
            // of the own-layout word never finds its layout gone.
            let _own = (self.word.load(Ordering::Relaxed) & !INDEX == OWN).then(|| {
                let mut own = names.own.lock();
                own.remove(&me);
                own
            });
            self.word.store(CLASS | u32::from(state), Ordering::Release);
            return;
        }
        let mut own = names.own.lock();
        own.insert(me, Arc::clone(layout) as Arc<dyn StateNames>);
        self.word.store(OWN | u32::from(state), Ordering::Release);
    }

    /// The agent is now in `state` (of the layout published by `started`).
    #[inline]
    pub(crate) fn set(&self, state: u16) {
        let word = self.word.load(Ordering::Relaxed);
        self.word
            .store((word & !INDEX) | u32::from(state), Ordering::Relaxed);
    }

    /// Calls `f` with the name of the published state of the agent `me` whose class's names
    /// are `names` (`None` before the agent started).
    pub(crate) fn with_name<R>(
        &self,
        names: &StateNamesOf,
        me: MboxId,
        f: impl FnOnce(Option<&str>) -> R,
    ) -> R {
        // Acquire: a class-layout word is read with the class's layout it was published after.
        let word = self.word.load(Ordering::Acquire);
        match word & !INDEX {
            CLASS => {
                let class = names.class.get();
                f(class.map(|layout| layout.state_name((word & INDEX) as u16)))
            }
            OWN => {
                let own = names.own.lock();
                // Read again under the lock: the pair the worker wrote together.
                let word = self.word.load(Ordering::Relaxed);
                let layout = (word & !INDEX == OWN).then(|| own.get(&me)).flatten();
                f(layout.map(|layout| layout.state_name((word & INDEX) as u16)))
            }
            _ => f(None),
        }
    }

    /// The agent `me` is gone for good: its own layout, if it had one, is dropped.
    pub(crate) fn forget(&self, names: &StateNamesOf, me: MboxId) {
        if self.word.load(Ordering::Relaxed) & !INDEX == OWN {
            names.own.lock().remove(&me);
        }
    }
}

#[cfg(test)]
mod tests;
