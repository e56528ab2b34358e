//! What senders see of an agent: its binding (where demands go), the insend handlers and
//! message limits (both fixed at registration), whether it accepts messages, and counters.
//!
//! A direct [`Mbox`](crate::Mbox) is an `Arc<AgentShared>`; it outlives the agent as a
//! tombstone, so a send to a dead agent is refused and counted, never misdelivered.

use super::insend::{InsendCtx, InsendTable};
use crate::coop::PanicReaction;
use crate::demand::{Demand, LimitSlot, Revocable};
use crate::disp::EventQueue;
use crate::env::EnvInner;
use crate::ids::{AgentId, CoopId, MboxId};
use crate::limit::{Acquire, LimitTable};
use crate::message::payload::Payload;
use crate::slab::AgentRef;
use crate::stats::EnvCounters;
use crate::timer::token::TimerToken;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

/// Everything fixed when the agent's coop is registered.
pub(crate) struct Binding {
    pub(crate) id: AgentId,
    pub(crate) coop: CoopId,
    pub(crate) target: AgentRef,
    pub(crate) queue: EventQueue,
    pub(crate) insend: InsendTable,
    pub(crate) limits: LimitTable,
    pub(crate) panic_reaction: PanicReaction,
    pub(crate) env: Weak<EnvInner>,
}

/// Per-agent counters, readable from any thread.
///
/// While the agent lives, `handled` and `unhandled` are counted in its slot (the line its
/// worker touches anyway, see `slab.rs`); they are copied here when it leaves.
#[derive(Default)]
pub(crate) struct AgentCounters {
    /// Final count, published when the agent leaves.
    pub(crate) handled: AtomicU64,
    /// Final count, published when the agent leaves.
    pub(crate) unhandled: AtomicU64,
    pub(crate) insend_handled: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) limit_dropped: AtomicU64,
    pub(crate) panics: AtomicU64,
}

/// A message the agent did not take, given back to the sender.
pub(crate) enum Refused<P> {
    /// The agent is not running.
    Gone(P),
    /// A message limit rejected it (reaction `Drop`).
    Overloaded(P),
}

pub(crate) struct AgentShared {
    pub(crate) mbox_id: MboxId,
    pub(crate) agent_type: &'static str,
    pub(crate) counters: Arc<EnvCounters>,
    pub(crate) stats: AgentCounters,
    binding: OnceLock<Binding>,
    accepting: AtomicBool,
}

impl AgentShared {
    pub(crate) fn new(agent_type: &'static str, counters: Arc<EnvCounters>) -> Self {
        AgentShared {
            mbox_id: MboxId::next(),
            agent_type,
            counters,
            stats: AgentCounters::default(),
            binding: OnceLock::new(),
            accepting: AtomicBool::new(false),
        }
    }

    /// Publishes the binding and starts accepting messages (registration commit).
    pub(crate) fn bind(&self, binding: Binding) {
        if self.binding.set(binding).is_err() {
            unreachable!("invariant: an agent is bound once (agents are moved into one coop)");
        }
        self.accepting.store(true, Ordering::Release);
    }

    /// Stops accepting messages (deregistration); later sends are refused and counted.
    pub(crate) fn stop_accepting(&self) {
        self.accepting.store(false, Ordering::Release);
    }

    pub(crate) fn binding(&self) -> Option<&Binding> {
        self.binding.get()
    }

    /// The binding, if the agent currently accepts messages.
    #[inline]
    pub(crate) fn live(&self) -> Option<&Binding> {
        let b = self.binding.get()?;
        self.accepting.load(Ordering::Acquire).then_some(b)
    }

    /// Hands `message` to the agent: to its insend handler if it has one for `P`, otherwise
    /// through its message limit (if any) into its event queue.
    ///
    /// A message sent by a timer carries the timer's token: the insend handler runs only if
    /// the token allows it, and a queued message travels as a [`Revocable`] demand that the
    /// dispatcher checks when it takes it (`timer.rs` ground rules).
    #[inline]
    pub(crate) fn deliver<P: Send + 'static>(
        self: &Arc<Self>,
        source: MboxId,
        message: P,
        wrap: impl FnOnce(P) -> Payload,
        timer: Option<&Arc<TimerToken>>,
    ) -> Result<(), Refused<P>> {
        let Some(b) = self.live() else {
            return Err(Refused::Gone(message));
        };
        if let Some(handler) = b.insend.find::<P>() {
            if timer.is_some_and(|t| !t.may_deliver()) {
                self.counters.timers_revoked.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            self.run_insend(b, handler, message);
            return Ok(());
        }
        let limit = if b.limits.is_empty() {
            LimitSlot::NONE
        } else {
            match b.limits.acquire::<P>() {
                Acquire::Unlimited => LimitSlot::NONE,
                Acquire::Slot(slot) => slot,
                Acquire::Exceeded(entry) => return entry.react(self, message),
            }
        };
        let demand = match timer {
            None => Demand::message(b.target, source, wrap(message), limit),
            Some(token) => Demand::revocable(
                b.target,
                source,
                Revocable {
                    token: Arc::clone(token),
                    inner: wrap(message),
                },
                limit,
            ),
        };
        match b.queue.push(demand) {
            Ok(()) => Ok(()),
            Err(demand) => {
                b.limits.release(limit);
                Err(Refused::Gone(demand.into_message::<P>()))
            }
        }
    }

    /// Runs an insend handler on the calling (sender's) thread, catching a panic.
    pub(crate) fn run_insend<P: Send + 'static>(
        self: &Arc<Self>,
        b: &Binding,
        handler: &super::insend::InsendFn<P>,
        message: P,
    ) {
        let ctx = InsendCtx::new(self, b.id);
        if catch_unwind(AssertUnwindSafe(|| handler(&ctx, message))).is_ok() {
            self.stats.insend_handled.fetch_add(1, Ordering::Relaxed);
        } else {
            self.stats.panics.fetch_add(1, Ordering::Relaxed);
            self.counters.panics.fetch_add(1, Ordering::Relaxed);
            tracing::error!(agent = %b.id, agent_type = self.agent_type, "insend handler panicked");
            if let Some(env) = b.env.upgrade() {
                env.react_to_panic(b.panic_reaction, b.coop);
            }
        }
    }

    /// Counts and disposes of a refused message.
    pub(crate) fn count_refused<P: Send + 'static>(
        &self,
        refused: Refused<P>,
        wrap: fn(P) -> Payload,
    ) {
        use crate::message::Undelivered;
        let (payload, why) = match refused {
            Refused::Gone(m) => {
                self.stats.refused.fetch_add(1, Ordering::Relaxed);
                self.counters.dead_letters.fetch_add(1, Ordering::Relaxed);
                (wrap(m), Undelivered::AgentGone)
            }
            Refused::Overloaded(m) => (wrap(m), Undelivered::Overloaded),
        };
        tracing::debug!(
            target: "agentry::delivery",
            mbox = %self.mbox_id,
            agent_type = self.agent_type,
            message = payload.type_name(),
            reason = ?why,
            "message not delivered"
        );
        payload.reject(why);
    }
}
