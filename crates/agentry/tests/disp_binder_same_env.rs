//! A dispatcher belongs to the environment that created it: binding an agent of another
//! environment to it is refused at registration (`RegisterError::Bind`), and nothing of the
//! coop is registered. (Such a binding would run the agent against the wrong environment's
//! agent slab.)

mod common;

use agentry::disp::OneThreadDispatcher;
use agentry::{Agent, BindError, Ctx, Define, DefineError, Env, RegisterError};

struct Ping;
struct Echo;
impl Agent for Echo {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|_: &mut Echo, _: &mut Ctx<Echo>, _: Ping| "pong")?;
        Ok(())
    }
}

#[test]
fn a_dispatcher_of_another_env_is_refused() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let other = Env::builder()
        .autoshutdown(false)
        .build()
        .expect("other env");
    let foreign = OneThreadDispatcher::new(other.handle(), "foreign").expect("dispatcher");
    let h = env.handle().clone();

    let mut coop = h.new_coop();
    let fine = coop.add(Echo);
    let misbound = coop.add_with(Echo, &foreign.binder());
    match h.register_coop(coop) {
        Err(RegisterError::Bind {
            index,
            source: BindError::OtherEnv(name),
            ..
        }) => {
            assert_eq!(index, 1);
            assert_eq!(name, "foreign");
        }
        other => panic!("expected a Bind error, got {other:?}"),
    }
    assert!(!fine.is_alive());
    assert!(!misbound.is_alive());
    assert_eq!(h.stats().agents, 0);
    assert_eq!(other.handle().stats().agents, 0);

    // A coop-wide binder is checked the same way.
    let mut coop = h.new_coop();
    coop.set_binder(&foreign.binder()).add(Echo);
    assert!(matches!(
        h.register_coop(coop),
        Err(RegisterError::Bind { index: 0, .. })
    ));

    // The positive path: each environment's own dispatcher works.
    let own = OneThreadDispatcher::new(&h, "own").expect("dispatcher");
    let mut coop = h.new_coop();
    let a = coop.add_with(Echo, &own.binder());
    h.register_coop(coop).expect("own dispatcher");
    assert_eq!(a.request::<Ping, &str>(Ping, common::DEADLINE), Ok("pong"));
    let mut coop = other.handle().new_coop();
    let b = coop.add_with(Echo, &foreign.binder());
    other.handle().register_coop(coop).expect("its own env");
    assert_eq!(b.request::<Ping, &str>(Ping, common::DEADLINE), Ok("pong"));
}
