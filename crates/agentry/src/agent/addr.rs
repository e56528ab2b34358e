//! `Addr<A>`: an agent's direct mbox, typed by the agent, whose sends compile only for the
//! message types of the agent's [`Protocol`] (see [`protocol`](crate::protocol)).

use super::protocol::{Handles, Protocol};
use crate::error::{RequestError, SendError};
use crate::mbox::{Mbox, Recipient};
use crate::request::{PendingReply, Request};
use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

/// The typed address of an agent of type `A`: its direct [`Mbox`], whose sends compile only
/// for the message types `A` declares in its [`Protocol`].
///
/// Obtained when the agent is added ([`Coop::add_addr`](crate::Coop::add_addr),
/// [`EnvHandle::register_agent_addr`](crate::EnvHandle::register_agent_addr),
/// [`Ctx::spawn_addr`](crate::Ctx::spawn_addr)) or from inside it
/// ([`Ctx::addr`](crate::Ctx::addr)); never from an untyped mbox. As cheap to clone as an
/// `Mbox` and the same size: a send through it *is* the `Mbox` send, nothing is checked at run
/// time. [`mbox`](Self::mbox) gives the untyped mbox back (for a multi-type destination, a
/// name, [`Ctx::watch`](crate::Ctx::watch)).
///
/// ```
/// use agentry::{Addr, Agent, Ctx, Define, DefineError, Env, protocol::Protocol};
///
/// struct Ping(u32);
/// struct Pinger { seen: u32 }
///
/// impl Agent for Pinger {
///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
///         def.on(|p: &mut Pinger, ctx: &mut Ctx<Pinger>, Ping(n): Ping| {
///             p.seen += n;
///             if p.seen == 6 {
///                 ctx.stop_env();
///             }
///         })?;
///         Ok(())
///     }
/// }
/// impl Protocol for Pinger {
///     type Messages = (Ping,);
/// }
///
/// let env = Env::new().expect("env");
/// let pinger: Addr<Pinger> = env.handle().register_agent_addr(Pinger { seen: 0 })?;
/// for n in 1..=3 {
///     pinger.send(Ping(n));
/// }
/// env.run();
/// assert_eq!(pinger.mbox().stats().handled, 3);
/// # Ok::<(), agentry::RegisterError>(())
/// ```
///
/// A type the agent does not declare does not compile:
///
/// ```compile_fail,E0308
/// # use agentry::{Agent, Env, protocol::Protocol};
/// struct Ping;
/// struct Pong;
/// struct Pinger;
/// impl Agent for Pinger {}
/// impl Protocol for Pinger { type Messages = (Ping,); }
/// let env = Env::new().unwrap();
/// let pinger = env.handle().register_agent_addr(Pinger).unwrap();
/// pinger.send(Pong); // error[E0308]: expected `Ping`, found `Pong` (the only declared type)
/// ```
pub struct Addr<A> {
    mbox: Mbox,
    _agent: PhantomData<fn() -> A>,
}

impl<A: Protocol> Addr<A> {
    /// `mbox`, which must be the direct mbox of an agent of type `A`.
    pub(crate) fn new(mbox: Mbox) -> Self {
        Addr {
            mbox,
            _agent: PhantomData,
        }
    }

    /// Sends `message` (see [`Mbox::send`]): dropped and counted if the agent is not running
    /// or its message limit drops it.
    #[inline]
    pub fn send<M: Send + 'static, I>(&self, message: M)
    where
        A: Handles<M, I>,
    {
        self.mbox.send(message);
    }

    /// Sends `message`, giving it back if the agent is not running or its limit refuses it
    /// (see [`Mbox::try_send`]).
    pub fn try_send<M: Send + 'static, I>(&self, message: M) -> Result<(), SendError<M>>
    where
        A: Handles<M, I>,
    {
        self.mbox.try_send(message)
    }

    /// Sends the request `query` and blocks until the reply or `timeout` (see
    /// [`Mbox::request`]). The protocol declares `Request<Q, R>`: the reply type `R` is
    /// inferred from it.
    pub fn request<Q: Send + 'static, R: Send + 'static, I>(
        &self,
        query: Q,
        timeout: Duration,
    ) -> Result<R, RequestError>
    where
        A: Handles<Request<Q, R>, I>,
    {
        self.mbox.request(query, timeout)
    }

    /// Sends the request `query` and returns its reply as a future (see
    /// [`Mbox::request_future`]); `R` is inferred as for [`request`](Self::request).
    pub fn request_future<Q: Send + 'static, R: Send + 'static, I>(
        &self,
        query: Q,
    ) -> PendingReply<R>
    where
        A: Handles<Request<Q, R>, I>,
    {
        self.mbox.request_future(query)
    }

    /// A handle that sends only `M`s to this agent, without naming the agent's type: a reply
    /// address to put in a message, or a destination for a timer
    /// ([`EnvHandle::send_delayed`](crate::EnvHandle::send_delayed) takes any
    /// [`Destination`](crate::Destination)).
    pub fn recipient<M: Send + 'static, I>(&self) -> Recipient<M>
    where
        A: Handles<M, I>,
    {
        Recipient::new(self.mbox.clone())
    }
}

impl<A> Addr<A> {
    /// The untyped direct mbox (its id, stats, liveness; every send of any type).
    pub fn mbox(&self) -> &Mbox {
        &self.mbox
    }
}

impl<A> From<Addr<A>> for Mbox {
    fn from(addr: Addr<A>) -> Mbox {
        addr.mbox
    }
}

impl<A> Clone for Addr<A> {
    fn clone(&self) -> Self {
        Addr {
            mbox: self.mbox.clone(),
            _agent: PhantomData,
        }
    }
}

impl<A> PartialEq for Addr<A> {
    fn eq(&self, other: &Self) -> bool {
        self.mbox == other.mbox
    }
}

impl<A> Eq for Addr<A> {}

impl<A> fmt::Debug for Addr<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Addr").field(&self.mbox).finish()
    }
}
