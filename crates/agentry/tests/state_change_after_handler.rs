//! `Ctx::change_state` takes effect when the current handler (or `on_start`) returns: the
//! handler still sees the old state, the last call wins, hooks run after it, and the next
//! message is handled in the new state. Unknown states are refused with
//! `StateError::UnknownState`, changes inside on_enter / on_exit hooks with
//! `StateError::InTransition`.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox, State, StateError, UserError};
use common::recv;
use std::sync::mpsc::{self, Sender};

struct TakeLog;
/// Change to `first`, then to `second` (if any), logging what the handler sees.
struct Change {
    first: &'static str,
    second: Option<&'static str>,
}
/// Try to change to a state handle from another agent.
struct Foreign(State);
/// Log which handler runs.
struct Probe;

struct Switcher {
    named: Vec<(&'static str, State)>,
    log: Vec<String>,
    /// on_enter of "x" tries to change state (refused) and logs the result.
    start_in_y: bool,
}

impl Switcher {
    fn state(&self, n: &str) -> State {
        self.named.iter().find(|(m, _)| *m == n).expect("named").1
    }
    fn name(&self, s: State) -> &'static str {
        self.named.iter().find(|(_, t)| *t == s).expect("known").0
    }
}

impl Agent for Switcher {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let x = def.state("x")?;
        let y = def.state("y")?;
        self.named = vec![("default", State::DEFAULT), ("x", x), ("y", y)];
        def.on_enter(x, |s: &mut Switcher, ctx: &mut Ctx<Switcher>| {
            let r = ctx.change_state(State::DEFAULT);
            s.log.push(format!("enter x: change_state -> {r:?}"));
        })?;
        def.on_exit(x, |s: &mut Switcher, ctx: &mut Ctx<Switcher>| {
            let r = ctx.change_state(State::DEFAULT);
            s.log.push(format!("exit x: change_state -> {r:?}"));
        })?;
        def.on_enter(y, |s: &mut Switcher, _: &mut Ctx<Switcher>| {
            s.log.push("enter y".into())
        })?;
        def.on_exit(State::DEFAULT, |s: &mut Switcher, _: &mut Ctx<Switcher>| {
            s.log.push("exit default".into())
        })?;
        let all = [State::DEFAULT, x, y];
        def.in_states(&all)
            .on(|s: &mut Switcher, ctx: &mut Ctx<Switcher>, c: Change| {
                let before = s.name(ctx.state());
                ctx.change_state(s.state(c.first)).expect("known");
                if let Some(second) = c.second {
                    ctx.change_state(s.state(second)).expect("known");
                }
                let still = s.name(ctx.state());
                s.log.push(format!("handler: {before} -> still {still}"));
            })?;
        def.in_states(&all).on(
            |s: &mut Switcher, ctx: &mut Ctx<Switcher>, Foreign(f): Foreign| {
                let r = ctx.change_state(f);
                s.log.push(format!("foreign: {r:?}"));
            },
        )?;
        def.in_states(&all)
            .on_request(|s: &mut Switcher, _: &mut Ctx<Switcher>, _: TakeLog| {
                std::mem::take(&mut s.log)
            })?;
        def.on(|s: &mut Switcher, _: &mut Ctx<Switcher>, _: Probe| {
            s.log.push("probe in default".into())
        })?;
        def.in_state(x)
            .on(|s: &mut Switcher, _: &mut Ctx<Switcher>, _: Probe| {
                s.log.push("probe in x".into())
            })?;
        def.in_state(y)
            .on(|s: &mut Switcher, _: &mut Ctx<Switcher>, _: Probe| {
                s.log.push("probe in y".into())
            })?;
        Ok(())
    }
    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        if self.start_in_y {
            ctx.change_state(self.state("y")).expect("known");
            let still = self.name(ctx.state());
            self.log.push(format!("on_start: still {still}"));
        }
        Ok(())
    }
}

fn switcher(start_in_y: bool) -> Switcher {
    Switcher {
        named: Vec::new(),
        log: Vec::new(),
        start_in_y,
    }
}

fn take_log(m: &Mbox) -> Vec<String> {
    m.request(TakeLog, common::DEADLINE).expect("log")
}

#[test]
fn the_change_applies_after_the_handler_returns() {
    let env = Env::new().expect("env");
    let m = env
        .handle()
        .register_agent(switcher(false))
        .expect("register");
    m.send(Probe);
    m.send(Change {
        first: "y",
        second: None,
    });
    m.send(Probe);
    assert_eq!(
        take_log(&m),
        vec![
            "probe in default",
            "handler: default -> still default",
            "exit default",
            "enter y",
            "probe in y",
        ]
    );
}

#[test]
fn the_last_change_in_a_handler_wins() {
    let env = Env::new().expect("env");
    let m = env
        .handle()
        .register_agent(switcher(false))
        .expect("register");
    m.send(Change {
        first: "x",
        second: Some("y"),
    });
    m.send(Probe);
    assert_eq!(
        take_log(&m),
        vec![
            "handler: default -> still default",
            "exit default",
            "enter y",
            "probe in y",
        ],
        "x was never entered"
    );
}

#[test]
fn a_change_requested_in_on_start_applies_after_it() {
    let env = Env::new().expect("env");
    let m = env
        .handle()
        .register_agent(switcher(true))
        .expect("register");
    m.send(Probe);
    assert_eq!(
        take_log(&m),
        vec![
            "on_start: still default",
            "exit default",
            "enter y",
            "probe in y"
        ]
    );
}

#[test]
fn hooks_cannot_change_state() {
    let env = Env::new().expect("env");
    let m = env
        .handle()
        .register_agent(switcher(false))
        .expect("register");
    m.send(Change {
        first: "x",
        second: None,
    });
    m.send(Probe);
    m.send(Change {
        first: "y",
        second: None,
    });
    m.send(Probe);
    let refused = format!("{:?}", Err::<(), _>(StateError::InTransition));
    assert_eq!(
        take_log(&m),
        vec![
            "handler: default -> still default".to_owned(),
            "exit default".to_owned(),
            format!("enter x: change_state -> {refused}"),
            "probe in x".to_owned(),
            "handler: x -> still x".to_owned(),
            format!("exit x: change_state -> {refused}"),
            "enter y".to_owned(),
            "probe in y".to_owned(),
        ]
    );
}

/// Defines many states and hands its last state handle out.
struct Many {
    out: Sender<State>,
}
impl Agent for Many {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let mut last = State::DEFAULT;
        for i in 0..9 {
            last = def.state(format!("s{i}"))?;
        }
        let _ = self.out.send(last);
        Ok(())
    }
}

#[test]
fn a_state_of_another_agent_is_unknown() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let (tx, rx) = mpsc::channel();
    h.register_agent(Many { out: tx }).expect("many");
    let foreign = recv(&rx);
    let m = h.register_agent(switcher(false)).expect("register");
    m.send(Foreign(foreign));
    m.send(Probe);
    assert_eq!(
        take_log(&m),
        vec!["foreign: Err(UnknownState(9))", "probe in default"]
    );
}
