//! An agent type that gives its definition (`Agent::DEFINITION`) is defined once per type: the
//! definition runs for the type's first agents only, and every agent still behaves as its
//! definition says — its own value, its states, its counts — on every dispatcher. A definition
//! that cannot be shared (a handler that captures something) runs for every agent; a
//! registration that checks the protocol still checks it.

use agentry::disp::ThreadPoolDispatcher;
use agentry::protocol::Protocol;
use agentry::{Agent, Ctx, DefineError, Definition, Env, Mbox, RegisterError, State, UserError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

struct Add(u64);
struct Close;
struct Report;

/// Totals reported by the agents: (agent's number, its total).
type Sink = Arc<Mutex<Vec<(u64, u64)>>>;

static COUNTER_DEFINITIONS: AtomicUsize = AtomicUsize::new(0);

/// Adds what it is sent while open; once closed, `Add` has no handler (it is unhandled).
struct Counter {
    number: u64,
    total: u64,
    sink: Sink,
}

/// The state a counter enters on `Close` (the second state its definition declares).
const CLOSED: &str = "closed";

impl Agent for Counter {
    const DEFINITION: Option<Definition<Self>> = Some(|def| {
        COUNTER_DEFINITIONS.fetch_add(1, Ordering::SeqCst);
        let closed = def.state(CLOSED)?;
        def.on(|c: &mut Counter, _: &mut Ctx<Counter>, Add(n): Add| c.total += n)?;
        def.on(Counter::on_close)?;
        def.in_states(&[State::DEFAULT, closed]).on(
            |c: &mut Counter, _: &mut Ctx<Counter>, Report| {
                c.sink.lock().expect("sink").push((c.number, c.total));
            },
        )?;
        Ok(())
    });

    fn define(&mut self, _: &mut agentry::Define<Self>) -> Result<(), DefineError> {
        unreachable!("a type that gives its definition is never asked to define an agent")
    }
}

impl Counter {
    fn on_close(&mut self, ctx: &mut Ctx<Self>, _: Close) {
        let closed = ctx.state_named(CLOSED).expect("declared");
        ctx.change_state(closed).expect("known state");
    }
}

/// Spawns `n` counters numbered from `first` as it starts, and hands their mboxes out.
struct Spawner {
    first: u64,
    n: u64,
    sink: Sink,
    spawned: Arc<Mutex<Vec<(u64, Mbox)>>>,
}

impl Agent for Spawner {
    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        for number in self.first..self.first + self.n {
            let sink = Arc::clone(&self.sink);
            let mbox = ctx
                .spawn(Counter {
                    number,
                    total: 0,
                    sink,
                })
                .map_err(UserError::new)?;
            self.spawned.lock().expect("spawned").push((number, mbox));
        }
        Ok(())
    }
}

fn wait_for(sink: &Sink, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while sink.lock().expect("sink").len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "only some agents reported"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

#[test]
fn a_type_definition_runs_for_its_first_agents_only_and_every_agent_behaves_as_it_says() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let pool = ThreadPoolDispatcher::builder("counters")
        .threads(2)
        .build(&h)
        .expect("pool");
    let sink: Sink = Arc::default();
    // 100 counters in one coop on the pool, 100 spawned from a handler on the default
    // dispatcher.
    let mut coop = h.new_coop();
    let mut counters: Vec<(u64, Mbox)> = (0..100)
        .map(|number| {
            let counter = Counter {
                number,
                total: 0,
                sink: Arc::clone(&sink),
            };
            (number, coop.add_with(counter, &pool.binder()))
        })
        .collect();
    h.register_coop(coop).expect("coop registered");
    let spawned = Arc::default();
    h.register_agent(Spawner {
        first: 100,
        n: 100,
        sink: Arc::clone(&sink),
        spawned: Arc::clone(&spawned),
    })
    .expect("spawner registered");
    let runner = std::thread::spawn(move || env.run());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while spawned.lock().expect("spawned").len() < 100 {
        assert!(
            std::time::Instant::now() < deadline,
            "spawns did not finish"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    counters.extend(spawned.lock().expect("spawned").drain(..));

    // Each counter adds its own numbers, closes, then takes one more `Add` it has no handler
    // for in its closed state, and reports from there.
    for (number, mbox) in &counters {
        mbox.send(Add(*number));
        mbox.send(Add(1));
        mbox.send(Close);
        mbox.send(Add(1_000));
        mbox.send(Report);
    }
    wait_for(&sink, 200);
    let mut reports = sink.lock().expect("sink").clone();
    reports.sort_unstable();
    let expected: Vec<(u64, u64)> = (0..200).map(|n| (n, n + 1)).collect();
    assert_eq!(reports, expected, "each agent kept its own total");
    for (number, mbox) in &counters {
        let stats = mbox.stats();
        assert_eq!(stats.handled, 4, "agent {number}: Add, Add, Close, Report");
        assert_eq!(
            stats.unhandled, 1,
            "agent {number}: the Add sent once closed"
        );
    }
    let runs = COUNTER_DEFINITIONS.load(Ordering::SeqCst);
    assert!(
        runs <= 2,
        "the definition ran {runs} times for 200 agents of one type"
    );
    h.stop();
    runner.join().expect("env thread");
}

static SCALED_DEFINITIONS: AtomicUsize = AtomicUsize::new(0);

/// Its handler captures a value its definition computed: not shareable.
struct Scaled {
    total: u64,
    sink: Sink,
    number: u64,
}

impl Agent for Scaled {
    const DEFINITION: Option<Definition<Self>> = Some(|def| {
        SCALED_DEFINITIONS.fetch_add(1, Ordering::SeqCst);
        let factor = 3u64;
        def.on(move |s: &mut Scaled, _: &mut Ctx<Scaled>, Add(n): Add| {
            s.total += n * factor;
            s.sink.lock().expect("sink").push((s.number, s.total));
        })?;
        Ok(())
    });
}

#[test]
fn a_type_definition_whose_handler_captures_runs_for_every_agent() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let sink: Sink = Arc::default();
    let mboxes: Vec<Mbox> = (0..20)
        .map(|number| {
            h.register_agent(Scaled {
                total: 0,
                sink: Arc::clone(&sink),
                number,
            })
            .expect("registered")
        })
        .collect();
    let runner = std::thread::spawn(move || env.run());
    for (number, mbox) in (0u64..).zip(&mboxes) {
        mbox.send(Add(number));
    }
    wait_for(&sink, 20);
    let mut reports = sink.lock().expect("sink").clone();
    reports.sort_unstable();
    let expected: Vec<(u64, u64)> = (0..20).map(|n| (n, 3 * n)).collect();
    assert_eq!(reports, expected);
    assert_eq!(SCALED_DEFINITIONS.load(Ordering::SeqCst), 20);
    h.stop();
    runner.join().expect("env thread");
}

struct Ping;
struct Pong;

/// Declares `(Ping, Pong)` but its definition handles only `Ping`.
struct HalfPlayer;

impl Agent for HalfPlayer {
    const DEFINITION: Option<Definition<Self>> = Some(|def| {
        def.on(|_: &mut HalfPlayer, _: &mut Ctx<HalfPlayer>, Ping| {})?;
        Ok(())
    });
}

impl Protocol for HalfPlayer {
    type Messages = (Ping, Pong);
}

#[test]
fn a_typed_registration_checks_the_protocol_after_unchecked_agents_of_its_type_registered() {
    let env = Env::new().expect("env");
    let h = env.handle();
    // Unchecked registrations of the type: its definition may be recorded unchecked.
    for _ in 0..3 {
        h.register_agent(HalfPlayer)
            .expect("unchecked registration");
    }
    for _ in 0..2 {
        match h.register_agent_addr(HalfPlayer) {
            Err(RegisterError::Define {
                source: DefineError::UnhandledProtocolMessage(message),
                ..
            }) => assert!(message.ends_with("Pong"), "{message}"),
            other => panic!("expected the protocol check to fail, got {other:?}"),
        }
    }
    h.stop();
    env.run();
}

struct Open;

/// Opens on `Open`; its definition closes it again after 10 s (a state time limit).
struct Door {
    number: u64,
    sink: Sink,
}

impl Agent for Door {
    const DEFINITION: Option<Definition<Self>> = Some(|def| {
        let open = def.state("open")?;
        def.time_limit(open, std::time::Duration::from_secs(10), State::DEFAULT)?;
        def.on(|_: &mut Door, ctx: &mut Ctx<Door>, Open| {
            let open = ctx.state_named("open").expect("declared");
            ctx.change_state(open).expect("known state");
        })?;
        def.in_states(&[State::DEFAULT, open]).on(
            |d: &mut Door, ctx: &mut Ctx<Door>, Report| {
                let open = u64::from(ctx.state_name() == "open");
                d.sink.lock().expect("sink").push((d.number, open));
            },
        )?;
        Ok(())
    });
}

#[test]
fn a_recorded_definition_keeps_its_states_time_limits() {
    let mut env = agentry::testing::TestEnv::new().expect("test env");
    let sink: Sink = Arc::default();
    let doors: Vec<Mbox> = (0..5)
        .map(|number| {
            let door = Door {
                number,
                sink: Arc::clone(&sink),
            };
            env.handle().register_agent(door).expect("registered")
        })
        .collect();
    for door in &doors {
        door.send(Open);
        door.send(Report);
    }
    env.run_until_idle().expect("idle");
    env.advance(std::time::Duration::from_secs(10))
        .expect("advanced");
    for door in &doors {
        door.send(Report);
    }
    env.run_until_idle().expect("idle");
    let mut reports = sink.lock().expect("sink").clone();
    reports.sort_unstable();
    let expected: Vec<(u64, u64)> = (0..5).flat_map(|n| [(n, 0), (n, 1)]).collect();
    assert_eq!(
        reports, expected,
        "every door was open, then closed by its time limit"
    );
}
