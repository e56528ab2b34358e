//! State transitions run hooks in a fixed order: the on_exit hooks of the states left
//! (innermost first), then the on_enter hooks of the states entered (outermost first),
//! following initial substates. Leaving a state for its ancestor does not re-enter the
//! ancestor; a transition to the current state runs nothing. An agent enters its initial state
//! (`start_in`, default `State::DEFAULT`) before `on_start`, and leaves every state after
//! `on_finish`.

mod common;

use agentry::{
    Agent, CoopDeregistered, Ctx, Define, DefineError, DeregReason, Env, Mbox, State, UserError,
};
use common::recv;
use std::sync::mpsc::{self, Sender};

/// The state tree:
///
/// ```text
/// default
/// a
/// ├── a1
/// └── a2
/// b            (initial substate b1)
/// ├── b1       (initial substate b1x)
/// │   └── b1x
/// └── b2
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
enum S {
    Default,
    A,
    A1,
    A2,
    B,
    B1,
    B1x,
    B2,
}

const ALL: [S; 8] = [S::Default, S::A, S::A1, S::A2, S::B, S::B1, S::B1x, S::B2];

fn name(s: S) -> &'static str {
    match s {
        S::Default => "default",
        S::A => "a",
        S::A1 => "a1",
        S::A2 => "a2",
        S::B => "b",
        S::B1 => "b1",
        S::B1x => "b1x",
        S::B2 => "b2",
    }
}

struct Go(S);
struct TakeLog;
struct Where;

struct Machine {
    handles: Vec<State>,
    start_in: Option<S>,
    log: Vec<String>,
    finished: Sender<Vec<String>>,
}

impl Machine {
    fn new(start_in: Option<S>, finished: Sender<Vec<String>>) -> Self {
        Machine {
            handles: Vec::new(),
            start_in,
            log: Vec::new(),
            finished,
        }
    }

    fn handle(&self, s: S) -> State {
        self.handles[ALL.iter().position(|x| *x == s).expect("listed")]
    }

    fn which(&self, state: State) -> S {
        ALL[self
            .handles
            .iter()
            .position(|h| *h == state)
            .expect("known")]
    }
}

impl Agent for Machine {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let a = def.state("a")?;
        let a1 = def.substate(a, "a1")?;
        let a2 = def.substate(a, "a2")?;
        let b = def.state("b")?;
        let b1 = def.substate(b, "b1")?;
        let b1x = def.substate(b1, "b1x")?;
        let b2 = def.substate(b, "b2")?;
        def.initial_substate(b, b1)?.initial_substate(b1, b1x)?;
        self.handles = vec![State::DEFAULT, a, a1, a2, b, b1, b1x, b2];
        for (s, h) in ALL.iter().zip(self.handles.clone()) {
            let n = name(*s);
            def.on_enter(h, move |m: &mut Machine, _: &mut Ctx<Machine>| {
                m.log.push(format!("enter {n}"))
            })?;
            def.on_exit(h, move |m: &mut Machine, _: &mut Ctx<Machine>| {
                m.log.push(format!("exit {n}"))
            })?;
        }
        if let Some(s) = self.start_in {
            def.start_in(self.handle(s))?;
        }
        // Every state inherits these from its top-level ancestor.
        let tops = [State::DEFAULT, a, b];
        def.in_states(&tops)
            .on(|m: &mut Machine, ctx: &mut Ctx<Machine>, Go(s): Go| {
                ctx.change_state(m.handle(s)).expect("known state")
            })?;
        def.in_states(&tops)
            .on_request(|m: &mut Machine, _: &mut Ctx<Machine>, _: TakeLog| {
                std::mem::take(&mut m.log)
            })?;
        def.in_states(&tops)
            .on_request(|m: &mut Machine, ctx: &mut Ctx<Machine>, _: Where| m.which(ctx.state()))?;
        Ok(())
    }
    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        let here = name(self.which(ctx.state()));
        self.log.push(format!("on_start in {here}"));
        Ok(())
    }
    fn on_finish(&mut self, ctx: &mut Ctx<Self>) {
        let here = name(self.which(ctx.state()));
        self.log.push(format!("on_finish in {here}"));
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = self.finished.send(std::mem::take(&mut self.log));
    }
}

/// Sends `Go(to)`, then returns the hooks it ran and where the agent ended.
fn go(m: &Mbox, to: S) -> (Vec<String>, S) {
    m.send(Go(to));
    let log = m
        .request::<TakeLog, Vec<String>>(TakeLog, common::DEADLINE)
        .expect("log");
    let at = m
        .request::<Where, S>(Where, common::DEADLINE)
        .expect("where");
    (log, at)
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn hooks_run_outermost_in_innermost_out() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let (fin_tx, fin_rx) = mpsc::channel();
    let (gone_tx, gone_rx) = mpsc::channel::<CoopDeregistered>();
    let mut coop = h.new_coop();
    let m = coop.add(Machine::new(None, fin_tx));
    coop.on_dereg(move |e| {
        let _ = gone_tx.send(e);
    });
    let id = h.register_coop(coop).expect("register");

    let start = m
        .request::<TakeLog, Vec<String>>(TakeLog, common::DEADLINE)
        .expect("log");
    assert_eq!(start, strings(&["enter default", "on_start in default"]));

    // Into a nested state from a top-level sibling.
    assert_eq!(
        go(&m, S::A1),
        (strings(&["exit default", "enter a", "enter a1"]), S::A1)
    );
    // Between siblings: the common parent is neither left nor entered.
    assert_eq!(go(&m, S::A2), (strings(&["exit a1", "enter a2"]), S::A2));
    // Into a state with initial substates: followed down to the leaf.
    assert_eq!(
        go(&m, S::B),
        (
            strings(&["exit a2", "exit a", "enter b", "enter b1", "enter b1x"]),
            S::B1x
        )
    );
    // Up two levels and down one.
    assert_eq!(
        go(&m, S::B2),
        (strings(&["exit b1x", "exit b1", "enter b2"]), S::B2)
    );
    // To an ancestor with an initial substate: its subtree is re-entered, it is not.
    assert_eq!(
        go(&m, S::B),
        (strings(&["exit b2", "enter b1", "enter b1x"]), S::B1x)
    );
    // To the state the agent is already in (after following initial substates): nothing.
    assert_eq!(go(&m, S::B), (Vec::new(), S::B1x));
    assert_eq!(go(&m, S::B1x), (Vec::new(), S::B1x));
    // Cousins in different top-level subtrees.
    assert_eq!(
        go(&m, S::A1),
        (
            strings(&["exit b1x", "exit b1", "exit b", "enter a", "enter a1"]),
            S::A1
        )
    );
    // To an ancestor without an initial substate: only the child is left.
    assert_eq!(go(&m, S::A), (strings(&["exit a1"]), S::A));
    assert_eq!(go(&m, S::A), (Vec::new(), S::A));
    // Back to the default state.
    assert_eq!(go(&m, S::A2), (strings(&["enter a2"]), S::A2));
    assert_eq!(
        go(&m, S::Default),
        (strings(&["exit a2", "exit a", "enter default"]), S::Default)
    );
    assert_eq!(
        go(&m, S::A2),
        (strings(&["exit default", "enter a", "enter a2"]), S::A2)
    );

    // Finishing: on_finish, then every state is left, innermost first.
    h.deregister_coop(id, DeregReason::Normal)
        .expect("deregister");
    recv(&gone_rx);
    assert_eq!(
        recv(&fin_rx),
        strings(&["on_finish in a2", "exit a2", "exit a"])
    );
    common::run_env(env);
}

#[test]
fn start_in_enters_the_path_before_on_start() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let (fin_tx, fin_rx) = mpsc::channel();
    let m = h
        .register_agent(Machine::new(Some(S::A1), fin_tx.clone()))
        .expect("register");
    let start = m
        .request::<TakeLog, Vec<String>>(TakeLog, common::DEADLINE)
        .expect("log");
    assert_eq!(start, strings(&["enter a", "enter a1", "on_start in a1"]));
    // Starting in a state with initial substates follows them.
    let m2 = h
        .register_agent(Machine::new(Some(S::B), fin_tx))
        .expect("register");
    let start = m2
        .request::<TakeLog, Vec<String>>(TakeLog, common::DEADLINE)
        .expect("log");
    assert_eq!(
        start,
        strings(&["enter b", "enter b1", "enter b1x", "on_start in b1x"])
    );
    drop(env);
    let mut finished = vec![recv(&fin_rx), recv(&fin_rx)];
    finished.sort();
    assert_eq!(
        finished,
        vec![
            strings(&["on_finish in a1", "exit a1", "exit a"]),
            strings(&["on_finish in b1x", "exit b1x", "exit b1", "exit b"]),
        ]
    );
}
