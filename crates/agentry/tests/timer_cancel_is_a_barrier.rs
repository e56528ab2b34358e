//! `TimerHandle::cancel()` is a barrier, whichever thread calls it: once it returns, no
//! handler for the timer's message is running and none will start — except the delivery the
//! calling thread is itself inside (a handler cancelling its own timer does not wait for
//! itself). Dropping the handle revokes the timer without waiting.
//!
//! The race these tests close: a dispatcher takes a timer's message, checks that the timer is
//! not cancelled and goes on to the handler; another thread's `cancel()` lands right then and
//! returns; the handler starts after it (or is still running when it returns). Each test makes
//! a cancel land in that window, and counts the handlers that start — or are still running —
//! after their timer's `cancel()` returned (before the barrier, each of these failed):
//! - `a_cancel_between_the_check_and_the_handler_waits_for_the_handler`: deterministic. A
//!   `tracing` subscriber holds the dispatcher thread inside the window (the `handle` span is
//!   entered after the check, before the handler), as a slow subscriber would;
//! - `a_cancel_swept_across_the_moment_a_tick_is_taken_never_lets_it_start_late`: the same
//!   race with nothing held: a tick waits behind a spinning handler; the test releases it and
//!   cancels after a delay swept from 0 to 2 µs, so the cancel falls before, inside and after
//!   the window (before the barrier, 6 to 24 of its 4,400 ticks started late);
//! - `no_handler_is_still_running_when_cancel_returns` (queued handlers, every dispatcher),
//!   `no_insend_handler_is_still_running_when_cancel_returns` (the timer thread),
//!   `a_test_env_handler_is_not_running_when_cancel_returns` (the testing kit) and
//!   `a_deferred_tick_handled_after_a_restart_is_waited_for` (a supervised agent's deferred
//!   message, taken by its next incarnation).
//!
//! And that the barrier deadlocks nowhere it must not: a handler cancelling its own timer
//! (queued or insend), another agent on the same dispatcher thread cancelling, a handler of a
//! multi-mbox timer cancelling it while another subscriber handles it (it waits for the other
//! delivery, not for its own), and dropping a handle while its handler runs.

mod common;

use agentry::testing::TestEnv;
use agentry::{
    Agent, Ctx, Define, DefineError, Env, EnvHandle, InsendCtx, Mbox, MultiMbox, UserError,
    timer::Clock, timer::ManualClock, timer::TimerHandle,
};
use common::{DEADLINE, EXPECTED, Gate, GateKey, gate, wait_stats, wait_until};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);

/// How long a handler (or the window hook) holds, waiting to see whether `cancel()` returns
/// meanwhile. With the barrier it never does: every hold lasts this long.
const HOLD: Duration = Duration::from_millis(20);

/// The timer's message: the number of the timer it belongs to.
#[derive(Clone)]
struct Tick(usize);
/// Holds the probe spinning until the test releases it.
struct Spin;
struct Count;
/// Makes the probe fail (a supervised probe is then restarted).
struct Boom;

/// What the handlers see of the cancelling thread.
#[derive(Default)]
struct Watch {
    /// Timers `0..returned` were cancelled and their `cancel()` has returned.
    returned: AtomicUsize,
    /// Handlers that started after their timer's `cancel()` returned.
    late_starts: AtomicUsize,
    /// Handlers still running when their timer's `cancel()` returned.
    late_ends: AtomicUsize,
    /// `1 + i` once the handler of timer `i` (or the `Spin` number `i`) is inside.
    entered: AtomicUsize,
    /// `1 + i` releases the spinning handler number `i`.
    go: AtomicUsize,
}

impl Watch {
    fn cancelled(&self, i: usize) -> bool {
        self.returned.load(Ordering::SeqCst) > i
    }

    /// The handler of timer `i` starts: counted if its cancel already returned.
    fn start(&self, i: usize) {
        if self.cancelled(i) {
            self.late_starts.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Waits up to [`HOLD`] for timer `i`'s cancel to return; counted if it did.
    fn hold(&self, i: usize) {
        self.entered.store(i + 1, Ordering::SeqCst);
        let until = Instant::now() + HOLD;
        while !self.cancelled(i) && Instant::now() < until {
            std::thread::yield_now();
        }
        if self.cancelled(i) {
            self.late_ends.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The test thread: waits until the handler of timer (or spin) `i` is inside.
    fn wait_entered(&self, i: usize) {
        let until = Instant::now() + DEADLINE;
        while self.entered.load(Ordering::SeqCst) <= i {
            assert!(Instant::now() < until, "handler {i} did not start");
            std::hint::spin_loop();
        }
    }

    /// The cancelling thread: timer `i`'s `cancel()` returned.
    fn cancel_returned(&self, i: usize) {
        self.returned.store(i + 1, Ordering::SeqCst);
    }

    fn assert_none_late(&self, what: &str) {
        assert_eq!(
            (
                self.late_starts.load(Ordering::SeqCst),
                self.late_ends.load(Ordering::SeqCst)
            ),
            (0, 0),
            "{what}: handlers that (started, were still running) after cancel() returned"
        );
    }
}

/// Checks each tick against its timer's cancel; holds in the tick handler if `hold`.
struct Probe {
    watch: Arc<Watch>,
    hold: bool,
    handled: usize,
}

impl Agent for Probe {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|p: &mut Probe, _: &mut Ctx<Probe>, Tick(i): Tick| {
            p.watch.start(i);
            if p.hold {
                p.watch.hold(i);
            }
            p.handled += 1;
        })?;
        def.on(|p: &mut Probe, _: &mut Ctx<Probe>, _: Spin| {
            let i = p.watch.entered.load(Ordering::SeqCst);
            p.watch.entered.store(i + 1, Ordering::SeqCst);
            let until = Instant::now() + DEADLINE;
            while p.watch.go.load(Ordering::SeqCst) <= i {
                assert!(Instant::now() < until, "the test did not release the spin");
                std::hint::spin_loop();
            }
        })?;
        def.on(|_: &mut Probe, _: &mut Ctx<Probe>, _: Boom| panic!("{EXPECTED}: boom"))?;
        def.on_request(|p: &mut Probe, _: &mut Ctx<Probe>, _: Count| p.handled)?;
        Ok(())
    }
}

fn manual_env(clock: &ManualClock, spans: bool) -> Env {
    Env::builder()
        .autoshutdown(false)
        .tracing_spans(spans)
        .clock(Clock::Manual(clock.clone()))
        .build()
        .expect("env")
}

/// A probe bound through `disp`.
fn probe(h: &EnvHandle, disp: &common::Disp, watch: &Arc<Watch>, hold: bool) -> Mbox {
    let mut coop = h.new_coop();
    let probe = coop.add_with(
        Probe {
            watch: Arc::clone(watch),
            hold,
            handled: 0,
        },
        &disp.binder(0),
    );
    h.register_coop(coop).expect("registered");
    probe
}

fn handled(probe: &Mbox) -> usize {
    probe
        .request::<Count, usize>(Count, DEADLINE)
        .expect("probe answers")
}

/// Timer `i`: one-shot for even `i`, periodic (every millisecond) for odd `i`; due in 1 ms.
fn schedule(h: &EnvHandle, to: &Mbox, i: usize) -> TimerHandle {
    if i.is_multiple_of(2) {
        h.send_delayed(to, MS, Tick(i))
    } else {
        h.send_periodic(to, MS, MS, Tick(i))
    }
}

mod window {
    //! A `tracing` subscriber that, when armed, holds the next `handle` span's thread at its
    //! entry — after the dispatcher checked the timer's token, before the handler runs — until
    //! the test says `cancel()` returned, or for [`HOLD`](super::HOLD).

    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::Instant;
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    pub static ARMED: AtomicBool = AtomicBool::new(false);
    pub static INSIDE: AtomicBool = AtomicBool::new(false);
    pub static RETURNED: AtomicBool = AtomicBool::new(false);

    /// Span ids: odd for `handle` spans.
    struct Hold(AtomicU64);

    impl Subscriber for Hold {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }

        fn new_span(&self, span: &Attributes<'_>) -> Id {
            let n = self.0.fetch_add(1, Ordering::Relaxed);
            let handle = span.metadata().name() == "handle";
            Id::from_u64(2 * n + 2 + u64::from(handle))
        }

        fn record(&self, _: &Id, _: &Record<'_>) {}

        fn record_follows_from(&self, _: &Id, _: &Id) {}

        fn event(&self, _: &Event<'_>) {}

        fn enter(&self, id: &Id) {
            if id.into_u64() % 2 == 1 && ARMED.swap(false, Ordering::SeqCst) {
                INSIDE.store(true, Ordering::SeqCst);
                let until = Instant::now() + super::HOLD;
                while !RETURNED.load(Ordering::SeqCst) && Instant::now() < until {
                    std::thread::yield_now();
                }
            }
        }

        fn exit(&self, _: &Id) {}
    }

    pub fn install() {
        tracing::subscriber::set_global_default(Hold(AtomicU64::new(0)))
            .expect("the only subscriber of this test binary");
    }
}

#[test]
fn a_cancel_between_the_check_and_the_handler_waits_for_the_handler() {
    window::install();
    let clock = ManualClock::new();
    let env = manual_env(&clock, true);
    let h = env.handle();
    let watch = Arc::new(Watch::default());
    let mut next = 0;
    for disp in common::dispatchers(h) {
        let probe = probe(h, &disp, &watch, false);
        let before = handled(&probe);
        // A one-shot timer, then a periodic one.
        for _ in 0..2 {
            let i = next;
            next += 1;
            let timer = schedule(h, &probe, i);
            window::RETURNED.store(false, Ordering::SeqCst);
            window::ARMED.store(true, Ordering::SeqCst);
            clock.advance(MS); // queued; the dispatcher takes it and stops in the window
            wait_until("the dispatcher is in the window", || {
                window::INSIDE.swap(false, Ordering::SeqCst)
            });
            timer.cancel();
            window::RETURNED.store(true, Ordering::SeqCst);
            watch.cancel_returned(i);
        }
        assert_eq!(
            handled(&probe) - before,
            2,
            "{}: a tick past its check when cancel() came is handled (cancel waited)",
            disp.name
        );
        watch.assert_none_late(disp.name);
    }
    h.stop();
}

#[test]
fn a_cancel_swept_across_the_moment_a_tick_is_taken_never_lets_it_start_late() {
    const ROUNDS: usize = 400;
    let clock = ManualClock::new();
    let env = manual_env(&clock, false);
    let h = env.handle();
    let watch = Arc::new(Watch::default());
    let (mut next, mut spins) = (0, 0);
    let mut report = Vec::new();
    for disp in common::dispatchers(h) {
        let probe = probe(h, &disp, &watch, false);
        let before = handled(&probe);
        for round in 0..ROUNDS {
            let i = next;
            next += 1;
            // The probe spins in a handler; the tick queues behind it.
            probe.send(Spin);
            watch.wait_entered(spins);
            let timer = schedule(h, &probe, i);
            clock.advance(MS);
            // Release the spin, then cancel 0 to 2 µs later: the dispatcher is finishing the
            // spin, taking the tick, checking its token or starting its handler.
            watch.go.store(spins + 1, Ordering::SeqCst);
            spins += 1;
            let delay = Duration::from_nanos((round % 41) as u64 * 50);
            let released = Instant::now();
            while released.elapsed() < delay {
                std::hint::spin_loop();
            }
            timer.cancel();
            watch.cancel_returned(i);
        }
        let got = handled(&probe) - before;
        report.push(format!("{}: {got} handled", disp.name));
        // The tick of the last round is the probe's last message: `handled` has seen it.
    }
    let late = watch.late_starts.load(Ordering::SeqCst);
    assert_eq!(
        late, 0,
        "ticks whose handler started after cancel() returned, of {next}; {report:?}"
    );
    h.stop();
}

#[test]
fn no_handler_is_still_running_when_cancel_returns() {
    let clock = ManualClock::new();
    let env = manual_env(&clock, false);
    let h = env.handle();
    let watch = Arc::new(Watch::default());
    let mut next = 0;
    for disp in common::dispatchers(h) {
        let probe = probe(h, &disp, &watch, true);
        for _ in 0..2 {
            let i = next;
            next += 1;
            let timer = schedule(h, &probe, i);
            clock.advance(MS);
            watch.wait_entered(i);
            timer.cancel();
            watch.cancel_returned(i);
        }
        handled(&probe);
        watch.assert_none_late(disp.name);
    }
    h.stop();
}

#[test]
fn a_deferred_tick_handled_after_a_restart_is_waited_for() {
    use agentry::supervision::{Backoff, Strategy, Supervision};
    common::quiet_expected_panics();
    let clock = ManualClock::new();
    let env = manual_env(&clock, false);
    let h = env.handle();
    let watch = Arc::new(Watch::default());
    let mut coop = h.new_coop();
    coop.supervise(Supervision::new(Strategy::OneForOne).backoff(Backoff::Fixed(1000 * MS)));
    let for_probe = Arc::clone(&watch);
    let probe = coop.add_supervised(move || Probe {
        watch: Arc::clone(&for_probe),
        hold: true,
        handled: 0,
    });
    h.register_coop(coop).expect("registered");
    probe.send(Boom);
    wait_stats(h, "the restart's backoff is scheduled", |s| s.timers == 1);
    // The failed agent defers the tick; the next incarnation takes it (agent/restart.rs).
    let timer = h.send_delayed(&probe, MS, Tick(0));
    clock.advance(MS);
    clock.advance(1000 * MS);
    watch.wait_entered(0);
    timer.cancel();
    watch.cancel_returned(0);
    assert_eq!(handled(&probe), 1, "handled by the next incarnation");
    watch.assert_none_late("a deferred tick");
    h.stop();
}

/// Holds in its insend handler (on the timer thread) for each tick.
struct Fast(Arc<Watch>);

impl Agent for Fast {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let watch = Arc::clone(&self.0);
        def.insend(move |_: &InsendCtx<'_>, Tick(i): Tick| {
            watch.start(i);
            watch.hold(i);
        })?;
        Ok(())
    }
}

/// Moves `clock` on a helper thread (an insend handler holds the timer thread, and with it
/// `advance`); returns what tells when it is done.
fn advance_aside(clock: &ManualClock, by: Duration) -> mpsc::Receiver<()> {
    let (done_tx, done_rx) = mpsc::channel();
    let clock = clock.clone();
    std::thread::spawn(move || {
        clock.advance(by);
        let _ = done_tx.send(());
    });
    done_rx
}

#[test]
fn no_insend_handler_is_still_running_when_cancel_returns() {
    let clock = ManualClock::new();
    let env = manual_env(&clock, false);
    let h = env.handle();
    let watch = Arc::new(Watch::default());
    let fast = h
        .register_agent(Fast(Arc::clone(&watch)))
        .expect("registered");
    for i in 0..4 {
        let timer = schedule(h, &fast, i);
        let advanced = advance_aside(&clock, MS);
        watch.wait_entered(i);
        timer.cancel();
        watch.cancel_returned(i);
        common::recv(&advanced);
    }
    watch.assert_none_late("insend on the timer thread");
    h.stop();
}

#[test]
fn a_test_env_handler_is_not_running_when_cancel_returns() {
    let mut env = TestEnv::new().expect("test env");
    let watch = Arc::new(Watch::default());
    let probe = env
        .handle()
        .register_agent(Probe {
            watch: Arc::clone(&watch),
            hold: true,
            handled: 0,
        })
        .expect("registered");
    for i in 0..2 {
        let timer = schedule(env.handle(), &probe, i);
        // The test thread runs the handler (inside `advance`); another thread cancels.
        let canceller = {
            let watch = Arc::clone(&watch);
            std::thread::spawn(move || {
                watch.wait_entered(i);
                timer.cancel();
                watch.cancel_returned(i);
            })
        };
        env.advance(MS).expect("advance");
        canceller.join().expect("canceller");
    }
    watch.assert_none_late("TestEnv");
}

/// Cancels its own periodic timer in the handler of its third tick.
struct SelfStopping {
    timer: Option<TimerHandle>,
    ticks: usize,
}

impl Agent for SelfStopping {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|a: &mut SelfStopping, _: &mut Ctx<SelfStopping>, _: Tick| {
            a.ticks += 1;
            if a.ticks == 3 {
                a.timer.take().expect("scheduled in on_start").cancel();
            }
        })?;
        def.on_request(|a: &mut SelfStopping, _: &mut Ctx<SelfStopping>, _: Count| a.ticks)?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        let me = ctx.mbox().clone();
        self.timer = Some(ctx.send_periodic(&me, MS, MS, Tick(0)));
        Ok(())
    }
}

#[test]
fn a_handler_cancelling_its_own_periodic_timer_does_not_wait_for_itself_on_every_dispatcher() {
    let clock = ManualClock::new();
    let env = manual_env(&clock, false);
    let h = env.handle();
    for disp in common::dispatchers(h) {
        let mut coop = h.new_coop();
        let agent = coop.add_with(
            SelfStopping {
                timer: None,
                ticks: 0,
            },
            &disp.binder(0),
        );
        h.register_coop(coop).expect("registered");
        // Started (its timer is scheduled) once it answers.
        assert_eq!(agent.request::<Count, usize>(Count, DEADLINE), Ok(0));
        for _ in 0..6 {
            clock.advance(MS);
            // Each tick handled before the next is sent: the third cancels with nothing queued.
            agent
                .request::<Count, usize>(Count, DEADLINE)
                .expect("not stuck in its own cancel");
        }
        assert_eq!(
            agent.request::<Count, usize>(Count, DEADLINE),
            Ok(3),
            "{}",
            disp.name
        );
    }
    h.stop();
}

#[test]
fn an_insend_handler_cancelling_its_own_timer_does_not_wait_for_itself() {
    /// Cancels its own periodic timer from its insend handler, on the timer thread.
    struct FastStopping {
        timer: Arc<Mutex<Option<TimerHandle>>>,
        seen: Arc<AtomicUsize>,
    }
    impl Agent for FastStopping {
        fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
            let (timer, seen) = (Arc::clone(&self.timer), Arc::clone(&self.seen));
            def.insend(move |_: &InsendCtx<'_>, _: Tick| {
                if seen.fetch_add(1, Ordering::SeqCst) + 1 == 2 {
                    let handle = timer.lock().expect("timer").take();
                    handle.expect("scheduled").cancel();
                }
            })?;
            Ok(())
        }
    }
    let clock = ManualClock::new();
    let env = manual_env(&clock, false);
    let h = env.handle();
    let timer = Arc::new(Mutex::new(None));
    let seen = Arc::new(AtomicUsize::new(0));
    let fast = h
        .register_agent(FastStopping {
            timer: Arc::clone(&timer),
            seen: Arc::clone(&seen),
        })
        .expect("registered");
    *timer.lock().expect("timer") = Some(h.send_periodic(&fast, MS, MS, Tick(0)));
    for _ in 0..4 {
        // Bounded: a timer thread stuck in its own cancel fails the test instead of hanging it.
        common::recv(&advance_aside(&clock, MS));
    }
    assert_eq!(seen.load(Ordering::SeqCst), 2);
    h.stop();
}

/// Cancels (or drops) a timer it was given, when asked.
struct Canceller {
    timer: Option<TimerHandle>,
    drop_only: bool,
}

struct Arm(TimerHandle);
struct CancelIt;
struct Block(Gate);

impl Agent for Canceller {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|c: &mut Canceller, _: &mut Ctx<Canceller>, Arm(t): Arm| c.timer = Some(t))?;
        def.on(|c: &mut Canceller, _: &mut Ctx<Canceller>, _: CancelIt| {
            let timer = c.timer.take().expect("armed");
            if c.drop_only {
                drop(timer);
            } else {
                timer.cancel();
            }
        })?;
        def.on(|_: &mut Canceller, _: &mut Ctx<Canceller>, Block(g): Block| g.pass())?;
        def.on_request(|_: &mut Canceller, _: &mut Ctx<Canceller>, _: Count| ())?;
        Ok(())
    }
}

/// Holds `agent` inside a handler until the key opens.
fn hold(agent: &Mbox) -> GateKey {
    let (gate, key) = gate();
    agent.send(Block(gate));
    key.wait_entered();
    key
}

#[test]
fn another_agent_on_the_same_thread_cancels_a_queued_tick_on_every_one_thread_dispatcher() {
    let clock = ManualClock::new();
    let env = manual_env(&clock, false);
    let h = env.handle();
    let watch = Arc::new(Watch::default());
    // Where the two agents run on one thread (or one queue), one after the other.
    let shared = common::dispatchers(h)
        .into_iter()
        .filter(|d| d.sharing != common::Sharing::Parallel);
    for disp in shared {
        let revoked = h.stats().timers_revoked;
        let mut coop = h.new_coop();
        let target = coop.add_with(
            Probe {
                watch: Arc::clone(&watch),
                hold: false,
                handled: 0,
            },
            &disp.binder(0),
        );
        let canceller = coop.add_with(
            Canceller {
                timer: None,
                drop_only: false,
            },
            &disp.binder(0),
        );
        h.register_coop(coop).expect("registered");
        canceller.send(Arm(h.send_delayed(&target, MS, Tick(0))));
        // The canceller is held while the tick is queued; on a one-thread dispatcher the tick
        // waits behind it, so the cancel comes from the thread that will run the tick.
        let key = hold(&canceller);
        canceller.send(CancelIt);
        clock.advance(MS);
        key.open();
        canceller
            .request::<Count, ()>(Count, DEADLINE)
            .expect("the canceller is not stuck in cancel");
        assert_eq!(handled(&target), 0, "{}", disp.name);
        assert_eq!(h.stats().timers_revoked - revoked, 1, "{}", disp.name);
    }
    h.stop();
}

/// Holds in its tick handler until its gate opens.
struct Held(Option<Gate>);

impl Agent for Held {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|a: &mut Held, _: &mut Ctx<Held>, _: Tick| {
            if let Some(g) = a.0.take() {
                g.pass();
            }
        })?;
        Ok(())
    }
}

#[test]
fn dropping_the_handle_while_its_handler_runs_does_not_wait() {
    let clock = ManualClock::new();
    let env = manual_env(&clock, false);
    let h = env.handle();
    let ao = agentry::disp::ActiveObjDispatcher::new(h, "ao")
        .expect("dispatcher")
        .binder();
    let (g, key) = gate();
    let mut coop = h.new_coop();
    let held = coop.add_with(Held(Some(g)), &ao);
    let dropper = coop.add_with(
        Canceller {
            timer: None,
            drop_only: true,
        },
        &ao,
    );
    h.register_coop(coop).expect("registered");
    dropper.send(Arm(h.send_periodic(&held, MS, MS, Tick(0))));
    clock.advance(MS);
    key.wait_entered();
    // In a handler of another agent, on another thread: the drop returns at once (waiting
    // for the held handler would keep the gate shut until the deadline).
    dropper.send(CancelIt);
    let dropped = dropper.request::<Count, ()>(Count, Duration::from_secs(5));
    key.open();
    dropped.expect("the drop did not wait for the running handler");
    h.stop();
}

/// Subscribes to ticks published on a multi mbox.
struct Subscriber {
    news: MultiMbox,
    on_tick: Box<dyn FnMut() + Send>,
}

impl Agent for Subscriber {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let news = self.news.clone();
        def.from(&news)
            .on(|s: &mut Subscriber, _: &mut Ctx<Subscriber>, _: Arc<Tick>| (s.on_tick)())?;
        Ok(())
    }
}

#[test]
fn a_handler_cancelling_its_multi_mbox_timer_waits_for_the_other_subscriber_only() {
    let clock = ManualClock::new();
    let env = manual_env(&clock, false);
    let h = env.handle();
    let ao = agentry::disp::ActiveObjDispatcher::new(h, "ao")
        .expect("dispatcher")
        .binder();
    let news = h.create_mbox();
    let timer: Arc<Mutex<Option<TimerHandle>>> = Arc::default();
    let other_entered = Arc::new(AtomicBool::new(false));
    let other_done = Arc::new(AtomicBool::new(false));
    let cancel_returned = Arc::new(AtomicBool::new(false));
    let (seen_tx, seen_rx) = mpsc::channel();

    // The other subscriber holds until the cancel returns (it must not) or for HOLD.
    let other = {
        let (entered, done, returned) = (
            Arc::clone(&other_entered),
            Arc::clone(&other_done),
            Arc::clone(&cancel_returned),
        );
        move || {
            entered.store(true, Ordering::SeqCst);
            let until = Instant::now() + HOLD;
            while !returned.load(Ordering::SeqCst) && Instant::now() < until {
                std::thread::yield_now();
            }
            done.store(true, Ordering::SeqCst);
        }
    };
    // The cancelling subscriber waits for the other to be inside, cancels, and reports
    // whether the other delivery had ended by then.
    let cancelling = {
        let (timer, entered, done, returned) = (
            Arc::clone(&timer),
            Arc::clone(&other_entered),
            Arc::clone(&other_done),
            Arc::clone(&cancel_returned),
        );
        move || {
            let until = Instant::now() + DEADLINE;
            while !entered.load(Ordering::SeqCst) {
                assert!(Instant::now() < until, "the other subscriber did not start");
                std::thread::yield_now();
            }
            let handle = timer.lock().expect("timer").take();
            handle.expect("scheduled").cancel();
            returned.store(true, Ordering::SeqCst);
            let _ = seen_tx.send(done.load(Ordering::SeqCst));
        }
    };
    let mut coop = h.new_coop();
    coop.add_with(
        Subscriber {
            news: news.clone(),
            on_tick: Box::new(other),
        },
        &ao,
    );
    coop.add_with(
        Subscriber {
            news: news.clone(),
            on_tick: Box::new(cancelling),
        },
        &ao,
    );
    h.register_coop(coop).expect("registered");
    *timer.lock().expect("timer") = Some(h.send_delayed(&news, MS, Tick(0)));
    clock.advance(MS);
    assert!(
        common::recv(&seen_rx),
        "cancel() returned while the other subscriber was still handling the tick"
    );
    h.stop();
}
