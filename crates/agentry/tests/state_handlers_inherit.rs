//! Handlers are chosen by the agent's current state. A substate inherits its ancestors'
//! handlers unless it subscribes its own for the same (mbox, type). A message with no handler
//! in the current state is not handled: it is counted in `EnvStats::unhandled` and
//! `AgentStats::unhandled`, and a request gets `RequestError::NoHandler`.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox, RequestError, State};
use common::wait_until;

/// Answered by whichever handler the current state selects.
struct Who;
/// Switch to the named state.
struct Go(&'static str);
/// Handled only in the default state.
struct DefaultOnly;
struct Count;

/// States: default; p (handler "p") with children c1 (inherits) and c2 (own handler "c2"),
/// c2 with child g (inherits "c2"); q (no handler for `Who`).
struct Layered {
    states: Vec<(&'static str, State)>,
    default_only: u32,
}

impl Agent for Layered {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let p = def.state("p")?;
        let c1 = def.substate(p, "c1")?;
        let c2 = def.substate(p, "c2")?;
        let g = def.substate(c2, "g")?;
        let q = def.state("q")?;
        self.states = vec![
            ("default", State::DEFAULT),
            ("p", p),
            ("c1", c1),
            ("c2", c2),
            ("g", g),
            ("q", q),
        ];
        def.on_request(|_: &mut Layered, _: &mut Ctx<Layered>, _: Who| "default")?;
        def.in_state(p)
            .on_request(|_: &mut Layered, _: &mut Ctx<Layered>, _: Who| "p")?;
        def.in_state(c2)
            .on_request(|_: &mut Layered, _: &mut Ctx<Layered>, _: Who| "c2")?;
        let all = [State::DEFAULT, p, q];
        def.in_states(&all)
            .on(|l: &mut Layered, ctx: &mut Ctx<Layered>, Go(to): Go| {
                let s = l.states.iter().find(|(n, _)| *n == to).expect("named").1;
                ctx.change_state(s).expect("known");
            })?;
        def.on(|l: &mut Layered, _: &mut Ctx<Layered>, _: DefaultOnly| l.default_only += 1)?;
        def.in_states(&all)
            .on_request(|l: &mut Layered, _: &mut Ctx<Layered>, _: Count| l.default_only)?;
        Ok(())
    }
}

fn who(m: &Mbox, state: &'static str) -> Result<&'static str, RequestError> {
    m.send(Go(state));
    m.request(Who, common::DEADLINE)
}

#[test]
fn substates_inherit_unless_they_override() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let m = h
        .register_agent(Layered {
            states: Vec::new(),
            default_only: 0,
        })
        .expect("register");
    assert_eq!(m.request::<Who, &str>(Who, common::DEADLINE), Ok("default"));
    assert_eq!(who(&m, "p"), Ok("p"));
    assert_eq!(who(&m, "c1"), Ok("p"), "c1 inherits p's handler");
    assert_eq!(who(&m, "c2"), Ok("c2"), "c2 overrides it");
    assert_eq!(
        who(&m, "g"),
        Ok("c2"),
        "g inherits from its nearest ancestor"
    );
    assert_eq!(who(&m, "default"), Ok("default"));
    assert_eq!(h.stats().unhandled, 0);
    // q is a top-level state: it does not inherit the default state's handlers.
    assert_eq!(who(&m, "q"), Err(RequestError::NoHandler));
    assert_eq!(h.stats().unhandled, 1);
    // The agent's own counter is updated once the demand is done (after the rejection woke
    // the requester).
    wait_until("the agent counted the unhandled request", || {
        m.stats().unhandled == 1
    });
}

#[test]
fn a_message_without_a_handler_in_the_current_state_is_counted() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let m = h
        .register_agent(Layered {
            states: Vec::new(),
            default_only: 0,
        })
        .expect("register");
    m.send(DefaultOnly);
    m.send(Go("p"));
    m.send(DefaultOnly);
    m.send(DefaultOnly);
    m.send(Go("c1"));
    m.send(DefaultOnly);
    m.send(Go("default"));
    m.send(DefaultOnly);
    assert_eq!(m.request::<Count, u32>(Count, common::DEADLINE), Ok(2));
    assert_eq!(h.stats().unhandled, 3);
    assert_eq!(m.stats().unhandled, 3);
    // A message type the agent never subscribed to is unhandled in every state.
    m.send(42u8);
    assert_eq!(
        m.request::<u8, u8>(1, common::DEADLINE),
        Err(RequestError::NoHandler)
    );
    assert_eq!(h.stats().unhandled, 5);
    wait_until("the agent counted the unhandled request", || {
        m.stats().unhandled == 5
    });
    assert_eq!(h.stats().dead_letters, 0);
}
