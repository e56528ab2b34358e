//! Mistakes in an agent's definition are typed `DefineError`s, reported by `register_coop` as
//! `RegisterError::Define { index, agent_type, source }`, and nothing is registered.

mod common;

use agentry::{
    Agent, Ctx, Define, DefineError, Env, EnvHandle, HookKind, MultiMbox, Priority, RegisterError,
    State, limit::Overload,
};
use std::sync::Arc;
use std::sync::mpsc;

struct Msg;

/// Each variant makes one mistake (or none).
#[derive(Clone, Copy, Debug)]
enum Mistake {
    None,
    SameHandlerTwice,
    SameStateListedTwice,
    SameMultiHandlerTwice,
    LimitTwice,
    FilterTwice,
    ForeignStateInSubscription,
    ForeignStateHook,
    ForeignStartIn,
    ForeignParent,
    NotASubstate,
    TooManyStates,
    EnterHookTwice,
    ExitHookTwice,
    PriorityTwice,
    MultiPriorityTwice,
}

struct Careless {
    mistake: Mistake,
    topic: MultiMbox,
    foreign: State,
}

impl Agent for Careless {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let s = def.state("s")?;
        let t = def.state("t")?;
        let s1 = def.substate(s, "s1")?;
        let topic = self.topic.clone();
        // Legal: one type in several states, through the own mbox and a multi mbox.
        def.on(|_: &mut Careless, _: &mut Ctx<Careless>, _: Msg| {})?;
        def.in_state(s)
            .on(|_: &mut Careless, _: &mut Ctx<Careless>, _: Msg| {})?;
        def.in_state(s1)
            .in_state(t)
            .on(|_: &mut Careless, _: &mut Ctx<Careless>, _: Msg| {})?;
        def.from(&topic)
            .filter(|_: &Msg| true)
            .event_priority(Priority::P2)
            .on(|_: &mut Careless, _: &mut Ctx<Careless>, _: Arc<Msg>| {})?;
        def.from(&topic)
            .in_state(s)
            .event_priority(Priority::P2)
            .on(|_: &mut Careless, _: &mut Ctx<Careless>, _: Arc<Msg>| {})?;
        // Legal: the same event priority declared again; the own mbox and the multi mbox are
        // different subscriptions.
        def.event_priority::<Msg>(Priority::P5)?
            .event_priority::<Msg>(Priority::P5)?;
        def.limit::<Msg>(10, Overload::Drop)?;
        def.limit::<Arc<Msg>>(10, Overload::Drop)?;
        def.initial_substate(s, s1)?;
        // Legal: one hook of each kind per state.
        def.on_enter(s, |_: &mut Careless, _: &mut Ctx<Careless>| {})?;
        def.on_exit(s, |_: &mut Careless, _: &mut Ctx<Careless>| {})?;
        match self.mistake {
            Mistake::None => {}
            Mistake::SameHandlerTwice => {
                def.in_state(s)
                    .on(|_: &mut Careless, _: &mut Ctx<Careless>, _: Msg| {})?;
            }
            Mistake::SameStateListedTwice => {
                def.in_states(&[s, s])
                    .on(|_: &mut Careless, _: &mut Ctx<Careless>, _: u8| {})?;
            }
            Mistake::SameMultiHandlerTwice => {
                def.from(&topic)
                    .on(|_: &mut Careless, _: &mut Ctx<Careless>, _: Arc<Msg>| {})?;
            }
            Mistake::EnterHookTwice => {
                def.on_enter(s, |_: &mut Careless, _: &mut Ctx<Careless>| {})?;
            }
            Mistake::ExitHookTwice => {
                def.on_exit(s, |_: &mut Careless, _: &mut Ctx<Careless>| {})?;
            }
            Mistake::PriorityTwice => {
                def.event_priority::<Msg>(Priority::P6)?;
            }
            Mistake::MultiPriorityTwice => {
                def.from(&topic)
                    .in_state(t)
                    .event_priority(Priority::P3)
                    .on(|_: &mut Careless, _: &mut Ctx<Careless>, _: Arc<Msg>| {})?;
            }
            Mistake::LimitTwice => {
                def.limit::<Msg>(1, Overload::Drop)?;
            }
            Mistake::FilterTwice => {
                def.from(&topic)
                    .filter(|_: &Msg| false)
                    .in_state(t)
                    .on(|_: &mut Careless, _: &mut Ctx<Careless>, _: Arc<Msg>| {})?;
            }
            Mistake::ForeignStateInSubscription => {
                def.in_state(self.foreign)
                    .on(|_: &mut Careless, _: &mut Ctx<Careless>, _: u8| {})?;
            }
            Mistake::ForeignStateHook => {
                def.on_enter(self.foreign, |_: &mut Careless, _: &mut Ctx<Careless>| {})?;
            }
            Mistake::ForeignStartIn => {
                def.start_in(self.foreign)?;
            }
            Mistake::ForeignParent => {
                def.substate(self.foreign, "orphan")?;
            }
            Mistake::NotASubstate => {
                def.initial_substate(t, s1)?;
            }
            Mistake::TooManyStates => loop {
                def.state("one more")?;
            },
        }
        Ok(())
    }
}

/// Defines 20 states and hands out its last handle (foreign to `Careless`).
struct Big(mpsc::Sender<State>);
impl Agent for Big {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let mut last = State::DEFAULT;
        for _ in 0..20 {
            last = def.state("x")?;
        }
        let _ = self.0.send(last);
        Ok(())
    }
}

fn fixture() -> (Env, EnvHandle, MultiMbox, State) {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let (tx, rx) = mpsc::channel();
    h.register_agent(Big(tx)).expect("big");
    let foreign = common::recv(&rx);
    let topic = h.create_mbox();
    (env, h, topic, foreign)
}

fn define_error(mistake: Mistake) -> DefineError {
    let (_env, h, topic, foreign) = fixture();
    let mut coop = h.new_coop();
    coop.add(Careless {
        mistake: Mistake::None,
        topic: topic.clone(),
        foreign,
    });
    coop.add(Careless {
        mistake,
        topic: topic.clone(),
        foreign,
    });
    let error = match h.register_coop(coop) {
        Err(RegisterError::Define {
            index,
            agent_type,
            source,
        }) => {
            assert_eq!(index, 1, "{mistake:?}");
            assert!(agent_type.ends_with("Careless"), "{agent_type}");
            source
        }
        other => panic!("{mistake:?}: expected a Define error, got {other:?}"),
    };
    assert_eq!(
        h.stats().coops,
        1,
        "{mistake:?}: only the helper is registered"
    );
    assert_eq!(topic.subscriber_count::<Msg>(), 0, "{mistake:?}");
    error
}

#[test]
fn a_correct_definition_registers() {
    let (_env, h, topic, foreign) = fixture();
    h.register_agent(Careless {
        mistake: Mistake::None,
        topic: topic.clone(),
        foreign,
    })
    .expect("no mistake");
    assert_eq!(topic.subscriber_count::<Msg>(), 1);
}

#[test]
fn duplicate_subscriptions() {
    for mistake in [
        Mistake::SameHandlerTwice,
        Mistake::SameStateListedTwice,
        Mistake::SameMultiHandlerTwice,
    ] {
        match define_error(mistake) {
            DefineError::DuplicateSubscription { state, .. } => {
                let expected = if matches!(mistake, Mistake::SameMultiHandlerTwice) {
                    "default"
                } else {
                    "s"
                };
                assert_eq!(state, expected, "{mistake:?}");
            }
            other => panic!("{mistake:?}: {other:?}"),
        }
    }
}

#[test]
fn duplicate_limit_and_filter() {
    match define_error(Mistake::LimitTwice) {
        DefineError::DuplicateLimit(ty) => assert!(ty.ends_with("Msg"), "{ty}"),
        other => panic!("{other:?}"),
    }
    match define_error(Mistake::FilterTwice) {
        DefineError::DuplicateFilter { message, .. } => assert!(message.ends_with("Msg")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_second_different_event_priority_for_one_subscription() {
    for mistake in [Mistake::PriorityTwice, Mistake::MultiPriorityTwice] {
        match define_error(mistake) {
            DefineError::ConflictingPriority { message, .. } => {
                assert!(message.ends_with("Msg"), "{mistake:?}: {message}");
            }
            other => panic!("{mistake:?}: {other:?}"),
        }
    }
}

#[test]
fn a_second_hook_for_a_state_is_refused_not_a_silent_replacement() {
    assert_eq!(
        define_error(Mistake::EnterHookTwice),
        DefineError::DuplicateHook {
            hook: HookKind::Enter,
            state: "s".to_owned()
        }
    );
    assert_eq!(
        define_error(Mistake::ExitHookTwice),
        DefineError::DuplicateHook {
            hook: HookKind::Exit,
            state: "s".to_owned()
        }
    );
}

#[test]
fn unknown_states() {
    for mistake in [
        Mistake::ForeignStateInSubscription,
        Mistake::ForeignStateHook,
        Mistake::ForeignStartIn,
        Mistake::ForeignParent,
    ] {
        assert_eq!(
            define_error(mistake),
            DefineError::UnknownState(20),
            "{mistake:?}"
        );
    }
}

#[test]
fn bad_state_structure() {
    assert_eq!(
        define_error(Mistake::NotASubstate),
        DefineError::NotASubstate {
            parent: "t".to_owned(),
            child: "s1".to_owned()
        }
    );
    assert_eq!(
        define_error(Mistake::TooManyStates),
        DefineError::TooManyStates
    );
}
