//! Protocols: the message types an agent declares it handles, so that a typed address
//! ([`Addr<A>`](crate::Addr)) accepts those types — and only those — at compile time.
//!
//! An agent declares its protocol as a tuple of message types, requests included as
//! [`Request<Q, R>`](crate::Request):
//!
//! ```
//! use agentry::{Agent, Ctx, Define, DefineError, Env, protocol::Protocol, Request};
//! use std::time::Duration;
//!
//! struct Add(u64);
//! struct Total;
//!
//! #[derive(Default)]
//! struct Adder { sum: u64 }
//!
//! impl Agent for Adder {
//!     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
//!         def.on(|a: &mut Adder, _: &mut Ctx<Adder>, Add(n): Add| a.sum += n)?
//!             .on_request(|a: &mut Adder, _: &mut Ctx<Adder>, _: Total| a.sum)?;
//!         Ok(())
//!     }
//! }
//!
//! impl Protocol for Adder {
//!     type Messages = (Add, Request<Total, u64>);
//! }
//!
//! let env = Env::new()?;
//! let adder = env.handle().register_agent_addr(Adder::default())?;
//! adder.send(Add(40));
//! adder.send(Add(2));
//! let total = adder.request(Total, Duration::from_secs(5))?; // the reply type comes from the protocol
//! assert_eq!(total, 42u64);
//! env.handle().stop();
//! env.run();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A type outside the protocol does not compile:
//!
//! ```compile_fail,E0277
//! # use agentry::{Agent, Env, protocol::Protocol, Request};
//! struct Add(u64);
//! struct Total;
//! struct Reset;
//! struct Adder;
//! impl Agent for Adder {}
//! impl Protocol for Adder { type Messages = (Add, Request<Total, u64>); }
//! let env = Env::new().unwrap();
//! let adder = env.handle().register_agent_addr(Adder).unwrap();
//! adder.send(Reset); // error[E0277]: `Adder` does not declare `Reset` in its `Protocol`
//! ```
//!
//! # What is checked, and when
//!
//! - **At compile time**: [`Addr::send`](crate::Addr::send) (and `try_send`, `request`,
//!   `request_future`, [`recipient`](crate::Addr::recipient)) compile only for a type `M` of
//!   `A`'s protocol (error E0277, "`A` does not declare `M` in its `Protocol`"; with a
//!   one-type protocol the compiler infers that type and says "expected `Ping`, found
//!   `Pong`", E0308). For a request, `Request<Q, R>` must be declared: the query type selects
//!   the entry and the reply type `R` is taken from it.
//! - **At registration**: an agent registered through a typed call
//!   ([`Coop::add_addr`](crate::Coop::add_addr), [`Coop::add_addr_with`](crate::Coop::add_addr_with),
//!   [`Coop::add_supervised_addr`](crate::Coop::add_supervised_addr) and its `_with`,
//!   [`EnvHandle::register_agent_addr`](crate::EnvHandle::register_agent_addr),
//!   [`Ctx::spawn_addr`](crate::Ctx::spawn_addr)) must subscribe, on its own mbox, a handler
//!   (queued, in at least one of its states, or insend) for every type of its protocol;
//!   otherwise its `define` fails with
//!   [`DefineError::UnhandledProtocolMessage`](crate::DefineError::UnhandledProtocolMessage)
//!   and the registration with it. A supervised agent's later incarnations are checked as
//!   they restart: one that fails the check fails its start (its supervisor counts another
//!   failure). The check runs once per definition, on the defining thread; nothing is added
//!   to the send path (a typed send *is* the untyped send).
//!
//! Not promised:
//!
//! - **States.** A declared type is handled in *some* state; a message that arrives while the
//!   agent is in a state without a handler for it is still counted as `unhandled` (and a
//!   request answered [`RequestError::NoHandler`](crate::RequestError::NoHandler)), exactly as
//!   through an [`Mbox`](crate::Mbox).
//! - **Delivery.** A typed send is an untyped send: an agent that is gone, or a message limit,
//!   refuses it as it would any (counted; `try_send` gives it back).
//! - **Agents registered untyped.** [`Ctx::addr`](crate::Ctx::addr) gives any agent with a
//!   protocol its own typed address, even one added with [`Coop::add`](crate::Coop::add),
//!   whose definition was then not checked against its protocol: the compile-time check
//!   holds, the registration check did not run. Register such agents through the typed calls.
//!
//! There is no way to turn an arbitrary [`Mbox`](crate::Mbox) into an `Addr<A>` (a name
//! lookup or [`EnvHandle::mbox_of`](crate::EnvHandle::mbox_of) gives an untyped mbox): an
//! `Addr<A>` is only ever made for an agent of type `A`. The other way is free:
//! [`Addr::mbox`](crate::Addr::mbox), or `Mbox::from(addr)`.
//!
//! # Why a list, not a marker trait per message type
//!
//! A marker impl per type (`impl Handles<Ping> for Pinger {}`) would check sends as well, but
//! the compiler cannot enumerate trait impls, so nothing could verify at registration that
//! every declared type has a handler. One associated tuple is enumerable (the registration
//! check walks it), costs one line, and lets `request` infer the reply type from the
//! declaration. The price is a second, inferred type parameter on the sending methods (the
//! type's position in the tuple): write `addr.send(msg)`, or `send::<M, _>` with a turbofish.
//! For the same reason an `Addr` is not itself a [`Destination`](crate::Destination) (the
//! position would be unconstrained); [`Addr::recipient`](crate::Addr::recipient) makes one.
//! A handler trait implemented per message type (kameo's design) would tie declaration and
//! handler together, but not to states: a handler of this crate belongs to states, and one
//! message type may have several (one per state), which one method per type cannot express.
//! Protocols hold up to 16 types; a longer list is a sign to split the agent.

use super::Agent;
use std::any::TypeId;

/// Every sending method of [`Addr`](crate::Addr) refuses an undeclared type at compile time,
/// and accepts a declared one (the same program with the declared type compiles: the module's
/// and `Addr`'s examples). The error codes are those rustc gives (checked by hand: stable
/// rustdoc does not compare them); with a one-type protocol an undeclared type is E0308.
///
/// ```
/// # use agentry::{Agent, Env, protocol::Protocol, Recipient, Request};
/// # use std::time::Duration;
/// struct Ping;
/// struct Status;
/// struct Pinger;
/// impl Agent for Pinger {}
/// impl Protocol for Pinger { type Messages = (Ping, Request<Status, u32>); }
/// let env = Env::new().unwrap();
/// let pinger = env.handle().new_coop().add_addr(Pinger); // never registered: sends refused
/// pinger.send(Ping);
/// let _ = pinger.try_send(Ping);
/// let pings: Recipient<Ping> = pinger.recipient();
/// let reply: Result<u32, _> = pinger.request(Status, Duration::ZERO);
/// assert!(reply.is_err());
/// ```
///
/// ```compile_fail,E0308
/// # use agentry::{Agent, Env, protocol::Protocol, Recipient};
/// struct Ping;
/// struct Pong;
/// struct Pinger;
/// impl Agent for Pinger {}
/// impl Protocol for Pinger { type Messages = (Ping,); }
/// let env = Env::new().unwrap();
/// let pinger = env.handle().register_agent_addr(Pinger).unwrap();
/// let _ = pinger.try_send(Pong);
/// ```
///
/// ```compile_fail,E0308
/// # use agentry::{Agent, Env, protocol::Protocol, Recipient};
/// # struct Ping;
/// # struct Pong;
/// # struct Pinger;
/// # impl Agent for Pinger {}
/// # impl Protocol for Pinger { type Messages = (Ping,); }
/// # let env = Env::new().unwrap();
/// # let pinger = env.handle().register_agent_addr(Pinger).unwrap();
/// let pongs: Recipient<Pong> = pinger.recipient();
/// ```
///
/// ```compile_fail,E0277
/// # use agentry::{Agent, Env, protocol::Protocol, Request};
/// # use std::time::Duration;
/// # struct Ping;
/// # struct Status;
/// # struct Pinger;
/// # impl Agent for Pinger {}
/// # impl Protocol for Pinger { type Messages = (Ping,); }
/// # let env = Env::new().unwrap();
/// # let pinger = env.handle().register_agent_addr(Pinger).unwrap();
/// // A query is declared as a request, with its reply type:
/// let _ = pinger.request::<Status, u32, _>(Status, Duration::ZERO);
/// ```
///
/// The reply type is the declared one:
///
/// ```compile_fail,E0308
/// # use agentry::{Agent, Env, protocol::Protocol, Request};
/// # use std::time::Duration;
/// # struct Status;
/// # struct Pinger;
/// # impl Agent for Pinger {}
/// # impl Protocol for Pinger { type Messages = (Request<Status, u32>,); }
/// # let env = Env::new().unwrap();
/// # let pinger = env.handle().register_agent_addr(Pinger).unwrap();
/// let reply: Result<String, _> = pinger.request(Status, Duration::ZERO);
/// ```
///
/// An agent without a protocol has no typed address:
///
/// ```compile_fail,E0277
/// # use agentry::{Agent, Env};
/// struct Plain;
/// impl Agent for Plain {}
/// let env = Env::new().unwrap();
/// let _ = env.handle().register_agent_addr(Plain);
/// ```
///
/// And an untyped mbox does not become a typed address:
///
/// ```compile_fail,E0308
/// # use agentry::{Addr, Agent, Env, protocol::Protocol};
/// # struct Ping;
/// # struct Pinger;
/// # impl Agent for Pinger {}
/// # impl Protocol for Pinger { type Messages = (Ping,); }
/// let env = Env::new().unwrap();
/// let mbox = env.handle().register_agent(Pinger).unwrap();
/// let addr = Addr::<Pinger>::from(mbox);
/// ```
///
/// ```compile_fail,E0624
/// # use agentry::{Addr, Agent, Env, protocol::Protocol};
/// # struct Ping;
/// # struct Pinger;
/// # impl Agent for Pinger {}
/// # impl Protocol for Pinger { type Messages = (Ping,); }
/// let env = Env::new().unwrap();
/// let mbox = env.handle().register_agent(Pinger).unwrap();
/// let addr = Addr::<Pinger>::new(mbox);
/// ```
#[cfg(doctest)]
struct SendsAreChecked;

/// The message types an agent handles through its typed address, [`Addr<Self>`](crate::Addr):
/// a tuple of up to 16 distinct `Send + 'static` types — `(Ping,)` for one, `()` for none.
/// A request is declared as [`Request<Q, R>`](crate::Request). See the [module](self) for what
/// is checked.
///
/// ```
/// use agentry::{Agent, protocol::Protocol, Request};
///
/// struct Ping;
/// struct Status;
/// struct Pinger;
/// impl Agent for Pinger {}
/// impl Protocol for Pinger {
///     type Messages = (Ping, Request<Status, &'static str>);
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no typed address: it does not implement `Protocol`",
    note = "declare the message types it handles: `impl Protocol for {Self} {{ type Messages = (..); }}`"
)]
pub trait Protocol: Agent {
    /// The declared message types, as a tuple.
    type Messages: MessageList;
}

/// `A: Handles<M, I>` holds when `M` is one of the message types of `A`'s [`Protocol`]; `I`
/// (its position in the list) is inferred. Sealed: only a protocol makes it true.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not declare `{M}` in its `Protocol`",
    label = "not a message type of `{Self}`",
    note = "add `{M}` to `<{Self} as Protocol>::Messages`, and a handler for it to its `define`"
)]
pub trait Handles<M, I>: Protocol + sealed::Handles<M, I> {}

#[diagnostic::do_not_recommend]
impl<A, M, I> Handles<M, I> for A where A: Protocol + sealed::Handles<M, I> {}

/// A tuple of message types ([`Protocol::Messages`]). Sealed: implemented for tuples of up to
/// 16 `Send + 'static` types.
pub trait MessageList: sealed::List {}

impl<L: sealed::List> MessageList for L {}

/// The registration check (module docs): `Some(the first type of `L` that `handles` says has
/// no handler)`, `None` if every type has one.
pub(crate) fn first_unhandled<L: MessageList>(
    handles: impl Fn(TypeId) -> bool,
) -> Option<&'static str> {
    L::first_unhandled(&handles)
}

mod sealed {
    use super::Protocol;
    use std::any::TypeId;

    /// The position of a type in a message list.
    #[derive(Debug)]
    pub struct At<const N: usize>;

    /// A tuple of message types.
    pub trait List {
        fn first_unhandled(handles: &dyn Fn(TypeId) -> bool) -> Option<&'static str>;
    }

    /// `M` is the type at position `I` of the list.
    pub trait Includes<M, I> {}

    pub trait Handles<M, I> {}

    #[diagnostic::do_not_recommend]
    impl<A, M, I> Handles<M, I> for A
    where
        A: Protocol,
        A::Messages: Includes<M, I>,
    {
    }

    impl List for () {
        fn first_unhandled(_: &dyn Fn(TypeId) -> bool) -> Option<&'static str> {
            None
        }
    }

    /// `List` for the tuple of the types given, and `Includes` for each of its positions.
    macro_rules! message_list {
        (@at [$($all:ident),+] $T:ident $n:literal) => {
            impl<$($all: Send + 'static),+> Includes<$T, At<$n>> for ($($all,)+) {}
        };
        ($all:tt $($T:ident $n:literal)+) => {
            impl<$($T: Send + 'static),+> List for ($($T,)+) {
                fn first_unhandled(handles: &dyn Fn(TypeId) -> bool) -> Option<&'static str> {
                    $(
                        if !handles(TypeId::of::<$T>()) {
                            return Some(std::any::type_name::<$T>());
                        }
                    )+
                    None
                }
            }
            $( message_list!(@at $all $T $n); )+
        };
    }

    message_list!([T0] T0 0);
    message_list!([T0, T1] T0 0 T1 1);
    message_list!([T0, T1, T2] T0 0 T1 1 T2 2);
    message_list!([T0, T1, T2, T3] T0 0 T1 1 T2 2 T3 3);
    message_list!([T0, T1, T2, T3, T4] T0 0 T1 1 T2 2 T3 3 T4 4);
    message_list!([T0, T1, T2, T3, T4, T5] T0 0 T1 1 T2 2 T3 3 T4 4 T5 5);
    message_list!([T0, T1, T2, T3, T4, T5, T6] T0 0 T1 1 T2 2 T3 3 T4 4 T5 5 T6 6);
    message_list!([T0, T1, T2, T3, T4, T5, T6, T7] T0 0 T1 1 T2 2 T3 3 T4 4 T5 5 T6 6 T7 7);
    message_list!(
        [T0, T1, T2, T3, T4, T5, T6, T7, T8]
        T0 0 T1 1 T2 2 T3 3 T4 4 T5 5 T6 6 T7 7 T8 8
    );
    message_list!(
        [T0, T1, T2, T3, T4, T5, T6, T7, T8, T9]
        T0 0 T1 1 T2 2 T3 3 T4 4 T5 5 T6 6 T7 7 T8 8 T9 9
    );
    message_list!(
        [T0, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10]
        T0 0 T1 1 T2 2 T3 3 T4 4 T5 5 T6 6 T7 7 T8 8 T9 9 T10 10
    );
    message_list!(
        [T0, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11]
        T0 0 T1 1 T2 2 T3 3 T4 4 T5 5 T6 6 T7 7 T8 8 T9 9 T10 10 T11 11
    );
    message_list!(
        [T0, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12]
        T0 0 T1 1 T2 2 T3 3 T4 4 T5 5 T6 6 T7 7 T8 8 T9 9 T10 10 T11 11 T12 12
    );
    message_list!(
        [T0, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13]
        T0 0 T1 1 T2 2 T3 3 T4 4 T5 5 T6 6 T7 7 T8 8 T9 9 T10 10 T11 11 T12 12 T13 13
    );
    message_list!(
        [T0, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14]
        T0 0 T1 1 T2 2 T3 3 T4 4 T5 5 T6 6 T7 7 T8 8 T9 9 T10 10 T11 11 T12 12 T13 13 T14 14
    );
    message_list!(
        [T0, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14, T15]
        T0 0 T1 1 T2 2 T3 3 T4 4 T5 5 T6 6 T7 7 T8 8 T9 9 T10 10 T11 11 T12 12 T13 13 T14 14
        T15 15
    );
}
