//! The synchronized queue behind an [`Mchain`](super::Mchain): one mutex over the messages,
//! the closed flag, the waiting receivers, the multi-mbox subscriptions and the counters; a
//! condition variable for senders blocked on a full chain.
//!
//! Lock order: a chain's lock, then a multi mbox's subscriber lock (subscribing and closing
//! update the multi mbox under the chain's lock; a multi mbox never holds its lock while it
//! pushes to a chain). Messages and wake-ups are dropped / sent after the lock is released.

use super::stats::ChainStats;
use super::waiter::Waiter;
use super::{Close, Overflow};
use crate::error::MchainError;
use crate::ids::MboxId;
use crate::mbox::MultiMbox;
use crate::message::payload::Payload;
use crate::timer::token::TimerToken;
use parking_lot::{Condvar, Mutex};
use std::any::TypeId;
use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use std::time::Instant;

/// One queued message and, for a timer's message, the timer's token.
struct Entry {
    payload: Payload,
    token: Option<Arc<TimerToken>>,
}

/// Whether a push may wait for room (`Overflow::Block`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// A direct send: it may block.
    Allowed,
    /// A timer or a multi mbox: never blocks.
    Never,
}

/// Why a push was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    Full,
    Closed,
}

/// What a receiver found.
pub(super) enum Take {
    Message(Payload),
    /// Open and empty (the waiter, if any, was registered).
    Empty,
    /// Closed and empty.
    Closed,
}

struct State {
    queue: VecDeque<Entry>,
    closed: bool,
    /// Receivers waiting for a message or the close; taken (and woken) by the next push.
    waiters: Vec<Arc<Waiter>>,
    /// (multi mbox, message type) pairs this chain subscribes to.
    subscriptions: Vec<(MultiMbox, TypeId)>,
    stats: ChainStats,
}

pub(crate) struct Chain {
    pub(super) id: MboxId,
    pub(super) name: Option<Box<str>>,
    pub(super) capacity: Option<usize>,
    overflow: Overflow,
    state: Mutex<State>,
    /// Senders blocked on a full chain wait here.
    room: Condvar,
}

impl Chain {
    pub(super) fn new(name: Option<Box<str>>, capacity: Option<usize>, overflow: Overflow) -> Self {
        Chain {
            id: MboxId::next(),
            name,
            capacity,
            overflow,
            state: Mutex::new(State {
                queue: VecDeque::new(),
                closed: false,
                waiters: Vec::new(),
                subscriptions: Vec::new(),
                stats: ChainStats::default(),
            }),
            room: Condvar::new(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    pub(super) fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    pub(super) fn stats(&self) -> ChainStats {
        let state = self.state.lock();
        ChainStats {
            queued: state.queue.len(),
            ..state.stats
        }
    }

    fn may_block(&self) -> bool {
        matches!(self.overflow, Overflow::Block { .. })
    }

    /// Queues a message, applying the overflow reaction; gives it back if refused (counted).
    pub(crate) fn push(
        &self,
        payload: Payload,
        token: Option<Arc<TimerToken>>,
        wait: Wait,
    ) -> Result<(), (Payload, Refusal)> {
        let mut state = self.state.lock();
        let mut evicted = None;
        if !state.closed
            && let Some(capacity) = self.capacity
            && state.queue.len() >= capacity
        {
            state.stats.overflow += 1;
            match self.overflow {
                Overflow::DropNewest => {
                    state.stats.dropped += 1;
                    drop(state);
                    drop(payload);
                    return Ok(());
                }
                Overflow::RemoveOldest => {
                    evicted = state.queue.pop_front();
                    state.stats.dropped += 1;
                }
                Overflow::Fail => {
                    state.stats.refused += 1;
                    return Err((payload, Refusal::Full));
                }
                Overflow::Block { timeout } => {
                    if wait == Wait::Never {
                        state.stats.refused += 1;
                        return Err((payload, Refusal::Full));
                    }
                    let deadline = Instant::now().checked_add(timeout);
                    crate::disp::before_blocking();
                    while !state.closed && state.queue.len() >= capacity {
                        let timed_out = match deadline {
                            Some(d) => self.room.wait_until(&mut state, d).timed_out(),
                            None => {
                                self.room.wait(&mut state);
                                false
                            }
                        };
                        if timed_out && !state.closed && state.queue.len() >= capacity {
                            state.stats.refused += 1;
                            return Err((payload, Refusal::Full));
                        }
                    }
                }
            }
        }
        if state.closed {
            state.stats.refused += 1;
            return Err((payload, Refusal::Closed));
        }
        state.queue.push_back(Entry { payload, token });
        state.stats.pushed += 1;
        let waiters = std::mem::take(&mut state.waiters);
        drop(state);
        for w in waiters {
            w.wake();
        }
        drop(evicted);
        Ok(())
    }

    /// Takes the next message a receiver may have, discarding revoked timer messages on the
    /// way. If the chain is open and empty, registers `waiter` (woken by the next push or the
    /// close) unless it is registered already.
    pub(super) fn take(&self, waiter: Option<&Arc<Waiter>>) -> Take {
        let mut state = self.state.lock();
        let mut revoked = Vec::new();
        let took = loop {
            match state.queue.pop_front() {
                Some(entry) if entry.token.as_ref().is_some_and(|t| !t.may_deliver()) => {
                    state.stats.revoked += 1;
                    revoked.push(entry);
                }
                Some(entry) => {
                    state.stats.received += 1;
                    break Take::Message(entry.payload);
                }
                None if state.closed => break Take::Closed,
                None => {
                    if let Some(w) = waiter
                        && !state.waiters.iter().any(|x| Arc::ptr_eq(x, w))
                    {
                        state.waiters.push(Arc::clone(w));
                    }
                    break Take::Empty;
                }
            }
        };
        let freed = !revoked.is_empty() || matches!(took, Take::Message(_));
        drop(state);
        if freed && self.may_block() {
            self.room.notify_all();
        }
        drop(revoked);
        took
    }

    /// Removes `waiter` (a receiver that stopped waiting).
    pub(super) fn forget(&self, waiter: &Arc<Waiter>) {
        self.state
            .lock()
            .waiters
            .retain(|w| !Arc::ptr_eq(w, waiter));
    }

    /// Counts a received message no handler wanted, and drops it.
    pub(super) fn count_unhandled(&self, payload: Payload) {
        self.state.lock().stats.unhandled += 1;
        tracing::debug!(
            target: "agentry::delivery",
            chain = %self.id,
            name = self.name.as_deref().unwrap_or(""),
            message = payload.type_name(),
            "no handler for a message received from a chain"
        );
        drop(payload);
    }

    /// Logs a refused message (already counted) before it is dropped.
    pub(super) fn log_refused(&self, payload: &Payload, why: Refusal) {
        tracing::debug!(
            target: "agentry::delivery",
            chain = %self.id,
            name = self.name.as_deref().unwrap_or(""),
            message = payload.type_name(),
            reason = ?why,
            "message refused by a chain"
        );
    }

    pub(super) fn close(&self, mode: Close) {
        let mut state = self.state.lock();
        let dropped = match mode {
            Close::DropContent => {
                let content = std::mem::take(&mut state.queue);
                state.stats.dropped += content.len() as u64;
                content
            }
            Close::RetainContent => VecDeque::new(),
        };
        state.closed = true;
        let waiters = std::mem::take(&mut state.waiters);
        for (multi, type_id) in std::mem::take(&mut state.subscriptions) {
            multi.remove_subscriber(type_id, self.id);
        }
        drop(state);
        self.room.notify_all();
        for w in waiters {
            w.wake();
        }
        drop(dropped);
    }

    pub(super) fn subscribe(
        this: &Arc<Chain>,
        multi: &MultiMbox,
        type_id: TypeId,
        type_name: &'static str,
    ) -> Result<(), MchainError> {
        let mut state = this.state.lock();
        if state.closed {
            return Err(MchainError::Closed);
        }
        if state
            .subscriptions
            .iter()
            .any(|(m, t)| m == multi && *t == type_id)
        {
            return Err(MchainError::AlreadySubscribed(type_name));
        }
        let chain: Weak<dyn crate::mbox::multi::ChainSubscriber> = Arc::downgrade(this) as _;
        multi.add_chain_subscriber(type_id, chain, this.id);
        state.subscriptions.push((multi.clone(), type_id));
        Ok(())
    }

    pub(super) fn unsubscribe(&self, multi: &MultiMbox, type_id: TypeId) -> bool {
        let mut state = self.state.lock();
        let before = state.subscriptions.len();
        state
            .subscriptions
            .retain(|(m, t)| !(m == multi && *t == type_id));
        let found = state.subscriptions.len() != before;
        if found {
            multi.remove_subscriber(type_id, self.id);
        }
        found
    }
}

impl Drop for Chain {
    fn drop(&mut self) {
        // The last handle is gone: nobody can receive any more, so stop the fan-out here.
        for (multi, type_id) in self.state.get_mut().subscriptions.drain(..) {
            multi.remove_subscriber(type_id, self.id);
        }
    }
}

impl crate::mbox::multi::ChainSubscriber for Chain {
    fn push_fanned_out(&self, payload: Payload, timer: Option<Arc<TimerToken>>) {
        // A refused copy is counted in the chain's `refused` and dropped here.
        let _ = self.push(payload, timer, Wait::Never);
    }
}
