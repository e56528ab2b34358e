//! The churn's agent: one type, [`Worker`], whose [`AgentPlan`] decides what it does —
//! how it starts and finishes, how it reacts to panics, its message limit, which multi
//! mboxes it reads — and its messages. Every queued handler starts with [`Worker::enter`],
//! which counts the run and checks the guarantees visible at handler entry.

use super::ledger::{Ledger, Target};
use super::plan::{AgentPlan, ChildOrder, LimitPlan, StartPlan};
use crate::soak::provoked::Provoker;
use agentry::limit::Transformed;
use agentry::{
    Agent, Ctx, Define, DefineError, DeregReason, InsendCtx, MultiMbox, PanicReaction, State,
    UserError, limit::Overload, timer::TimerHandle,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Sender threads that number their `Work` (per-sender FIFO is checked for them).
pub const SENDERS: usize = 2;
/// The sender id of `Work` sent from a handler (not checked for order).
pub const FROM_HANDLER: u8 = u8::MAX;

/// Plain work; `seq` grows per sender.
pub struct Work {
    pub sender: u8,
    pub seq: u64,
}
/// Limited to [`BURST_LIMIT`] waiting; the rest meets the agent's overload reaction.
pub struct Burst(pub u64);
/// Handled in the default state only (unhandled in `away`).
pub struct OnlyDefault;
/// Go to `away` (unhandled there).
pub struct GoAway;
/// Go back to the default state (unhandled there).
pub struct GoHome;
/// The handler panics.
pub struct Boom;
/// Taken by an insend handler, which panics on `Tap(true)`.
pub struct Tap(pub bool);
/// A request, answered with `n + 1`.
pub struct Ask(pub u64);
/// The handler sends `n` `Work` to `to`.
pub struct Relay {
    pub to: Target,
    pub n: u32,
}
/// The handler deregisters its own coop.
pub struct Quit;
/// The handler registers a child coop (from a dispatcher thread).
pub struct SpawnChild(pub Box<ChildOrder>);
/// The handler cancels a timer, then marks it cancelled.
pub struct CancelTimer(pub TimerHandle, pub Arc<AtomicBool>);
/// Published to the topics; each subscriber's filter counts what it accepts.
pub struct News(pub u64);
/// A timer's message (to the tick topics); `cancelled` is set once its `cancel()` returned.
#[derive(Clone)]
pub struct Tick(pub Arc<AtomicBool>);

/// At most this many `Burst` wait in a limited agent's queue.
pub const BURST_LIMIT: usize = 2;

/// The deregistration reason `Quit` uses.
pub const QUIT_REASON: DeregReason = DeregReason::User(7);

/// Counters of one agent that the soak keeps beside the runtime's.
#[derive(Debug, Default)]
pub struct AgentProbe {
    /// Messages the soak sent to the agent (direct sends, requests, and multi-mbox
    /// deliveries its filters accepted), counted before each send.
    pub sent: AtomicU64,
    /// Queued handler runs.
    pub runs: AtomicU64,
}

/// Counters of one coop.
#[derive(Debug, Default)]
pub struct CoopProbe {
    /// Queued handler runs of its agents.
    pub runs: AtomicU64,
    /// Deregistration notifications (`on_dereg` calls) and the last reason.
    pub notified: AtomicU64,
    pub reason: Mutex<Option<DeregReason>>,
}

impl CoopProbe {
    /// The `on_dereg` callback's work.
    pub fn deregistered(&self, reason: DeregReason) {
        *self
            .reason
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(reason);
        self.notified.fetch_add(1, Ordering::SeqCst);
    }

    /// The reason it was deregistered with, if it was.
    pub fn reason(&self) -> Option<DeregReason> {
        *self
            .reason
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Violations seen inside handlers, and what the environment's agents share.
#[derive(Debug, Default)]
pub struct Shared {
    pub provoker: Provoker,
    /// Handler runs of an agent after it panicked with `DeregisterCoop`.
    pub runs_after_failure: AtomicU64,
    /// Tick handlers that started after their timer's `cancel()` had returned.
    pub ticks_after_cancel: AtomicU64,
    /// `Work` of one sender handled out of order.
    pub fifo_violations: AtomicU64,
    /// Ticks handled.
    pub ticks: AtomicU64,
    /// Timers cancelled from handlers.
    pub cancels_in_handlers: AtomicU64,
}

/// What a worker needs besides its plan.
pub struct WorkerCtx {
    pub probe: Arc<AgentProbe>,
    pub coop: Arc<CoopProbe>,
    pub shared: Arc<Shared>,
    pub ledger: Arc<Ledger>,
    /// The agent that takes its limit's overflow (its coop's first agent).
    pub sink: Option<Target>,
    pub topic: Option<MultiMbox>,
    pub ticks: Option<MultiMbox>,
}

/// The churn's agent.
pub struct Worker {
    plan: AgentPlan,
    cx: WorkerCtx,
    away: State,
    /// It panicked with the reaction `DeregisterCoop`: it must handle nothing more.
    failed: bool,
    last_seq: [u64; SENDERS],
}

impl Worker {
    pub fn new(plan: AgentPlan, cx: WorkerCtx) -> Self {
        Worker {
            plan,
            cx,
            away: State::DEFAULT,
            failed: false,
            last_seq: [0; SENDERS],
        }
    }

    /// The start of every queued handler.
    fn enter(&mut self) {
        self.cx.probe.runs.fetch_add(1, Ordering::Relaxed);
        self.cx.coop.runs.fetch_add(1, Ordering::Relaxed);
        if self.failed {
            self.cx
                .shared
                .runs_after_failure
                .fetch_add(1, Ordering::SeqCst);
        }
    }

    fn on_work(&mut self, _: &mut Ctx<Self>, w: Work) {
        self.enter();
        if let Some(last) = self.last_seq.get_mut(usize::from(w.sender)) {
            if w.seq <= *last {
                self.cx
                    .shared
                    .fifo_violations
                    .fetch_add(1, Ordering::SeqCst);
            }
            *last = w.seq;
        }
    }

    fn on_boom(&mut self, _: &mut Ctx<Self>, _: Boom) {
        self.enter();
        if self.plan.reaction == PanicReaction::DeregisterCoop {
            self.failed = true;
        }
        self.cx.shared.provoker.panic()
    }

    fn on_tick(&mut self, _: &mut Ctx<Self>, tick: Arc<Tick>) {
        // Checked before anything else: cancel() must have waited for a handler that began.
        if tick.0.load(Ordering::SeqCst) {
            self.cx
                .shared
                .ticks_after_cancel
                .fetch_add(1, Ordering::SeqCst);
        }
        self.enter();
        self.cx.shared.ticks.fetch_add(1, Ordering::Relaxed);
    }

    fn on_spawn(&mut self, ctx: &mut Ctx<Self>, SpawnChild(order): SpawnChild) {
        self.enter();
        let ledger = Arc::clone(&self.cx.ledger);
        ledger.register_child(ctx, *order);
    }

    fn define_limit(&self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let (Some(limit), Some(sink)) = (self.plan.limit, &self.cx.sink) else {
            return Ok(());
        };
        let reaction = match limit {
            LimitPlan::Drop => Overload::Drop,
            LimitPlan::Redirect => Overload::Redirect(sink.mbox.clone()),
            LimitPlan::Transform => {
                let sink = sink.mbox.clone();
                let shared = Arc::clone(&self.cx.shared);
                Overload::transform(move |Burst(n): Burst| {
                    if n.is_multiple_of(53) {
                        shared.provoker.panic();
                    }
                    Transformed::to(
                        &sink,
                        Work {
                            sender: FROM_HANDLER,
                            seq: n,
                        },
                    )
                })
            }
        };
        def.limit::<Burst>(BURST_LIMIT, reaction)?;
        Ok(())
    }

    fn define_multi(&self, def: &mut Define<Self>, both: &[State]) -> Result<(), DefineError> {
        if let Some(topic) = &self.cx.topic {
            let probe = Arc::clone(&self.cx.probe);
            let shared = Arc::clone(&self.cx.shared);
            let salt = self.plan.salt;
            let mut from = def.from(topic);
            for s in both {
                from = from.in_state(*s);
            }
            from.filter(move |n: &News| {
                let x = n.0 ^ salt;
                if x.is_multiple_of(997) {
                    shared.provoker.panic();
                }
                let accept = !x.is_multiple_of(4);
                if accept {
                    probe.sent.fetch_add(1, Ordering::SeqCst);
                }
                accept
            })
            .on(|w: &mut Worker, _: &mut Ctx<Worker>, _: Arc<News>| w.enter())?;
        }
        if let Some(ticks) = &self.cx.ticks {
            let probe = Arc::clone(&self.cx.probe);
            let mut from = def.from(ticks);
            for s in both {
                from = from.in_state(*s);
            }
            from.filter(move |_: &Tick| {
                probe.sent.fetch_add(1, Ordering::SeqCst);
                true
            })
            .on(Worker::on_tick)?;
        }
        Ok(())
    }
}

impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        self.away = def.state("away")?;
        let both = [State::DEFAULT, self.away];
        def.panic_reaction(self.plan.reaction)
            .priority(self.plan.priority);
        def.in_states(&both).on(Worker::on_work)?;
        def.in_states(&both)
            .on(|w: &mut Worker, _: &mut Ctx<Worker>, _: Burst| w.enter())?;
        def.on(|w: &mut Worker, _: &mut Ctx<Worker>, _: OnlyDefault| w.enter())?;
        def.on(|w: &mut Worker, ctx: &mut Ctx<Worker>, _: GoAway| {
            w.enter();
            ctx.change_state(w.away)
                .expect("invariant: `away` is this agent's state");
        })?;
        def.in_state(self.away)
            .on(|w: &mut Worker, ctx: &mut Ctx<Worker>, _: GoHome| {
                w.enter();
                ctx.change_state(State::DEFAULT)
                    .expect("invariant: the default state exists");
            })?;
        def.in_states(&both).on(Worker::on_boom)?;
        def.in_states(&both)
            .on_request(|w: &mut Worker, _: &mut Ctx<Worker>, Ask(n): Ask| {
                w.enter();
                n + 1
            })?;
        def.in_states(&both)
            .on(|w: &mut Worker, _: &mut Ctx<Worker>, r: Relay| {
                w.enter();
                for seq in 0..u64::from(r.n) {
                    r.to.send(Work {
                        sender: FROM_HANDLER,
                        seq,
                    });
                }
            })?;
        def.in_states(&both)
            .on(|w: &mut Worker, ctx: &mut Ctx<Worker>, _: Quit| {
                w.enter();
                ctx.deregister_coop(QUIT_REASON);
            })?;
        def.in_states(&both).on(Worker::on_spawn)?;
        def.in_states(&both).on(
            |w: &mut Worker, _: &mut Ctx<Worker>, CancelTimer(timer, cancelled): CancelTimer| {
                w.enter();
                timer.cancel();
                cancelled.store(true, Ordering::SeqCst);
                w.cx.shared
                    .cancels_in_handlers
                    .fetch_add(1, Ordering::Relaxed);
            },
        )?;
        let shared = Arc::clone(&self.cx.shared);
        def.insend(move |_: &InsendCtx<'_>, Tap(panics): Tap| {
            if panics {
                shared.provoker.panic();
            }
        })?;
        self.define_limit(def)?;
        self.define_multi(def, &both)?;
        Ok(())
    }

    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        match self.plan.start {
            StartPlan::Ok => Ok(()),
            StartPlan::Error => Err(UserError::msg("soak: planned start failure")),
            StartPlan::Panic => self.cx.shared.provoker.panic(),
        }
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        if self.plan.finish_panics {
            self.cx.shared.provoker.panic();
        }
    }
}
