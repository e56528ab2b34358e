//! Message limits (overload control).
//!
//! An agent may declare, per message type, how many demands of that type may wait in its
//! queue (`def.limit::<M>(max, reaction)`). The counter goes up when a message is queued and
//! down when the agent takes it; the message that would exceed the limit meets the limit's
//! [`Overload`] reaction. Every reaction is counted in the environment's stats, so nothing is
//! lost without a counter showing it.
//!
//! The limited type is the handler's parameter type: `M` for the agent's own mbox, `Arc<T>`
//! for messages from a [`MultiMbox`]. Insend handlers bypass limits.

use super::direct::{AgentShared, Refused};
use super::{Mbox, MultiMbox};
use crate::message::LimitSlot;
use crate::trace::{DropReason, Outcome, TraceRecord};
use std::any::{Any, TypeId};
use std::cell::Cell;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A redirect or transform chain longer than this is cut: the message is dropped and counted
/// in `EnvStats::redirect_loops` (limits that redirect to each other would otherwise loop).
pub const MAX_REDIRECT_DEPTH: u32 = 32;

/// What happens to a message that would exceed its receiver's limit.
pub enum Overload<M> {
    /// Drop it and count it (`EnvStats::limit_dropped`); `try_send` gives it back instead.
    Drop,
    /// Log it and abort the process (for limits that must never be hit).
    Abort,
    /// Send it to another agent instead (`EnvStats::limit_redirected`).
    Redirect(Mbox),
    /// Turn it into another message for another mbox (`EnvStats::limit_transformed`).
    Transform(Arc<dyn Fn(M) -> Transformed + Send + Sync>),
}

impl<M> Clone for Overload<M> {
    fn clone(&self) -> Self {
        match self {
            Overload::Drop => Overload::Drop,
            Overload::Abort => Overload::Abort,
            Overload::Redirect(to) => Overload::Redirect(to.clone()),
            Overload::Transform(f) => Overload::Transform(Arc::clone(f)),
        }
    }
}

impl<M> Overload<M> {
    /// A [`Transform`](Overload::Transform) reaction from a closure.
    pub fn transform(f: impl Fn(M) -> Transformed + Send + Sync + 'static) -> Self {
        Overload::Transform(Arc::new(f))
    }
}

impl<M> fmt::Debug for Overload<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Overload::Drop => f.write_str("Drop"),
            Overload::Abort => f.write_str("Abort"),
            Overload::Redirect(m) => f.debug_tuple("Redirect").field(m).finish(),
            Overload::Transform(_) => f.write_str("Transform(..)"),
        }
    }
}

/// The result of a [`Overload::Transform`] closure: a message bound for an mbox.
pub struct Transformed(Box<dyn FnOnce() + Send>);

impl Transformed {
    /// Send `message` to the direct mbox `to`.
    pub fn to<T: Send + 'static>(to: &Mbox, message: T) -> Self {
        let to = to.clone();
        Transformed(Box::new(move || to.send(message)))
    }

    /// Send `message` to the multi mbox `to`.
    pub fn to_multi<T: Send + Sync + 'static>(to: &MultiMbox, message: T) -> Self {
        let to = to.clone();
        Transformed(Box::new(move || to.send(message)))
    }
}

impl fmt::Debug for Transformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Transformed(..)")
    }
}

thread_local! {
    static REDIRECT_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f` one redirect level deeper, or returns `None` when the chain is too long.
fn one_level_deeper(f: impl FnOnce()) -> Option<()> {
    REDIRECT_DEPTH.with(|d| {
        if d.get() >= MAX_REDIRECT_DEPTH {
            return None;
        }
        d.set(d.get() + 1);
        f();
        d.set(d.get() - 1);
        Some(())
    })
}

/// One declared limit.
pub(crate) struct LimitEntry {
    type_id: TypeId,
    type_name: &'static str,
    max: usize,
    queued: AtomicUsize,
    reaction: Box<dyn Any + Send + Sync>,
}

impl LimitEntry {
    pub(crate) fn new<M: Send + 'static>(max: usize, reaction: Overload<M>) -> Self {
        LimitEntry {
            type_id: TypeId::of::<M>(),
            type_name: std::any::type_name::<M>(),
            max,
            queued: AtomicUsize::new(0),
            reaction: Box::new(reaction),
        }
    }

    pub(crate) fn type_id(&self) -> TypeId {
        self.type_id
    }

    /// Applies the reaction to a message that exceeded this limit.
    pub(crate) fn react<P: Send + 'static>(
        &self,
        agent: &Arc<AgentShared>,
        message: P,
    ) -> Result<(), Refused<P>> {
        let counters = &agent.counters();
        let Some(reaction) = self.reaction.downcast_ref::<Overload<P>>() else {
            unreachable!("invariant: a limit is stored under the TypeId of its reaction's type")
        };
        tracing::debug!(
            target: "agentry::delivery",
            mbox = %agent.mbox_id,
            message = self.type_name,
            limit = self.max,
            reaction = ?reaction,
            "message limit reached"
        );
        match reaction {
            Overload::Drop => {
                counters.limit_dropped.fetch_add(1, Ordering::Relaxed);
                agent.stats.count_limit_dropped();
                self.trace(agent, Outcome::Dropped(DropReason::Overloaded));
                Err(Refused::Overloaded(message))
            }
            Overload::Abort => {
                tracing::error!(
                    message = self.type_name,
                    limit = self.max,
                    "message limit reached: aborting"
                );
                eprintln!(
                    "agentry: message limit {} for {} reached (reaction Abort): aborting",
                    self.max, self.type_name
                );
                std::process::abort()
            }
            Overload::Redirect(to) => {
                let mut message = Some(message);
                match one_level_deeper(|| to.send(message.take().expect("invariant: taken once"))) {
                    Some(()) => {
                        counters.limit_redirected.fetch_add(1, Ordering::Relaxed);
                        agent
                            .stats
                            .rare()
                            .redirected
                            .fetch_add(1, Ordering::Relaxed);
                        self.trace(agent, Outcome::Redirected);
                        Ok(())
                    }
                    None => self.cut_loop(agent, message.expect("invariant: not sent")),
                }
            }
            Overload::Transform(f) => {
                let mut message = Some(message);
                let mut panicked = false;
                // The closure is user code on the sender's thread: a send never panics.
                let transform = || {
                    let m = message.take().expect("invariant: taken once");
                    match catch_unwind(AssertUnwindSafe(|| f(m))) {
                        Ok(transformed) => (transformed.0)(),
                        Err(_) => panicked = true,
                    }
                };
                match one_level_deeper(transform) {
                    Some(()) if panicked => {
                        counters.panics.fetch_add(1, Ordering::Relaxed);
                        agent.stats.rare().panics.fetch_add(1, Ordering::Relaxed);
                        agent.stats.rare().dropped.fetch_add(1, Ordering::Relaxed);
                        self.trace(agent, Outcome::Dropped(DropReason::TransformPanicked));
                        tracing::error!(
                            message = self.type_name,
                            "overload transform panicked: message dropped"
                        );
                        Ok(())
                    }
                    Some(()) => {
                        counters.limit_transformed.fetch_add(1, Ordering::Relaxed);
                        agent
                            .stats
                            .rare()
                            .redirected
                            .fetch_add(1, Ordering::Relaxed);
                        self.trace(agent, Outcome::Transformed);
                        Ok(())
                    }
                    None => self.cut_loop(agent, message.expect("invariant: not sent")),
                }
            }
        }
    }

    fn cut_loop<P>(&self, agent: &AgentShared, message: P) -> Result<(), Refused<P>> {
        agent
            .counters()
            .redirect_loops
            .fetch_add(1, Ordering::Relaxed);
        agent.stats.count_limit_dropped();
        self.trace(agent, Outcome::Dropped(DropReason::RedirectLoop));
        tracing::warn!(
            message = self.type_name,
            "redirect chain too long: message dropped"
        );
        Err(Refused::Overloaded(message))
    }

    fn trace(&self, agent: &AgentShared, outcome: Outcome<'static>) {
        agent.counters().trace(|| TraceRecord {
            agent: agent.binding().map(|b| b.id()),
            agent_type: Some(agent.agent_type()),
            mbox: Some(agent.mbox_id),
            message: self.type_name,
            message_type: self.type_id,
            outcome,
        });
    }
}

/// Outcome of taking a place under a limit.
pub(crate) enum Acquire<'a> {
    /// The type has no limit.
    Unlimited,
    /// A place was taken; release it when the demand is taken.
    Slot(LimitSlot),
    /// The limit is full.
    Exceeded(&'a LimitEntry),
}

/// The limits of one agent, fixed at registration, and its queue depth if tracked.
///
/// Depth tracking rides on the limits' accounting: with it, every message takes a place (the
/// [`LimitSlot::DEPTH`] place for a type without a limit) that is given back when the agent
/// takes the message. An agent with neither limits nor tracking — most agents — holds one
/// null pointer, and the send path's single `is_empty` test reads it.
pub(crate) struct LimitTable(Option<Box<Limits>>);

struct Limits {
    entries: Box<[LimitEntry]>,
    /// Messages queued, if tracked.
    depth: Option<Depth>,
}

/// A tracked queue's depth: the places senders took, less those given back. The agent's
/// worker — the one thread that takes the agent's messages at a time — gives its places back
/// with a load and a store (no locked instruction on the hot side); places given back
/// anywhere else (a send refused by a closed queue, a dropped message) are counted apart,
/// atomically.
#[derive(Default)]
struct Depth {
    taken: AtomicUsize,
    /// Written by the agent's worker only.
    handled: AtomicUsize,
    given_back: AtomicUsize,
}

impl Depth {
    fn read(&self) -> usize {
        // Given back before taken: every place given back was taken before, so `taken`, read
        // last, covers them (a moment's sends may be counted, never a negative depth).
        let back = self.handled.load(Ordering::Acquire) + self.given_back.load(Ordering::Acquire);
        self.taken.load(Ordering::Acquire).saturating_sub(back)
    }
}

impl LimitTable {
    /// No limits, depth not tracked.
    pub(crate) const NONE: LimitTable = LimitTable(None);

    pub(crate) fn new(entries: Vec<LimitEntry>, track_depth: bool) -> Self {
        assert!(
            entries.len() < usize::from(u16::MAX) - 1,
            "invariant: limits are indexed by u16"
        );
        if entries.is_empty() && !track_depth {
            return LimitTable::NONE;
        }
        LimitTable(Some(Box::new(Limits {
            entries: entries.into_boxed_slice(),
            depth: track_depth.then(Depth::default),
        })))
    }

    /// True if no message of the agent takes a place (no limits, depth not tracked).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// Takes a place for a message of type `P`. Kept out of line: only agents with limits or
    /// depth tracking get here, and the send path it would be inlined into must stay small.
    #[inline(never)]
    pub(crate) fn acquire<P: 'static>(&self) -> Acquire<'_> {
        let Some(limits) = &self.0 else {
            return Acquire::Unlimited;
        };
        let wanted = TypeId::of::<P>();
        let Some((index, entry)) = limits
            .entries
            .iter()
            .enumerate()
            .find(|(_, e)| e.type_id == wanted)
        else {
            return match &limits.depth {
                Some(depth) => {
                    depth.taken.fetch_add(1, Ordering::Release);
                    Acquire::Slot(LimitSlot::DEPTH)
                }
                None => Acquire::Unlimited,
            };
        };
        if entry.queued.fetch_add(1, Ordering::AcqRel) >= entry.max {
            entry.queued.fetch_sub(1, Ordering::AcqRel);
            return Acquire::Exceeded(entry);
        }
        if let Some(depth) = &limits.depth {
            depth.taken.fetch_add(1, Ordering::Release);
        }
        Acquire::Slot(LimitSlot::new(index as u16))
    }

    /// Gives back a place taken by [`acquire`](Self::acquire), from any thread.
    pub(crate) fn release(&self, slot: LimitSlot) {
        self.give_back(slot, |depth| {
            depth.given_back.fetch_add(1, Ordering::Release);
        });
    }

    /// Gives back the place of a message the agent's worker takes to handle (called by that
    /// worker only: the agent's one consumer at a time).
    pub(crate) fn release_taken(&self, slot: LimitSlot) {
        self.give_back(slot, |depth| {
            let handled = depth.handled.load(Ordering::Relaxed);
            depth.handled.store(handled + 1, Ordering::Release);
        });
    }

    fn give_back(&self, slot: LimitSlot, count_depth: impl FnOnce(&Depth)) {
        let Some(limits) = &self.0 else {
            return;
        };
        if slot == LimitSlot::NONE {
            return;
        }
        if let Some(depth) = &limits.depth {
            count_depth(depth);
        }
        if let Some(index) = slot.index() {
            limits.entries[index].queued.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Messages queued, if tracked.
    pub(crate) fn depth(&self) -> Option<u64> {
        let depth = self.0.as_ref()?.depth.as_ref()?;
        Some(depth.read() as u64)
    }

    /// The limited types and their maxima (a restarted agent must declare the same).
    pub(crate) fn shape(&self) -> Vec<(TypeId, usize)> {
        self.0
            .as_ref()
            .map_or_else(Vec::new, |l| shape_of(&l.entries))
    }
}

/// The limited types and maxima of a definition's limits (compared with [`LimitTable::shape`]).
pub(crate) fn shape_of(entries: &[LimitEntry]) -> Vec<(TypeId, usize)> {
    entries.iter().map(|e| (e.type_id, e.max)).collect()
}

#[cfg(test)]
mod tests;
