//! What nearly every program that uses agents names: `use agentry::prelude::*;`.
//!
//! Only the vocabulary of defining, registering and messaging agents is here; dispatchers
//! (`agentry::disp`), timers, chains, supervision, the testing kit and the error types of the
//! less common calls keep their own paths.
//!
//! ```
//! use agentry::prelude::*;
//!
//! struct Hello;
//! struct Greet(&'static str);
//!
//! impl Agent for Hello {
//!     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
//!         def.on(|_: &mut Hello, ctx: &mut Ctx<Hello>, Greet(who)| {
//!             assert_eq!(who, "world");
//!             ctx.stop_env();
//!         })?;
//!         Ok(())
//!     }
//! }
//!
//! let env = Env::new().expect("env");
//! let hello: Mbox = env.handle().register_agent(Hello).expect("registered");
//! hello.send(Greet("world"));
//! env.run();
//! ```

pub use crate::{
    Addr, Agent, Coop, Ctx, Define, DefineError, Definition, DeregReason, Env, EnvHandle, Mbox,
    MultiMbox, RegisterError, RequestError, State, UserError, protocol::Protocol,
};
