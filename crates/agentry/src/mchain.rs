//! Message chains: CSP-style channels that let plain threads (anything that is not an agent)
//! exchange typed messages with agents and with each other.
//!
//! An [`Mchain`] is a queue of messages of *any* types, like an agent's mailbox but read by
//! whoever calls [`receive`](Mchain::receive) — a thread's loop, a test, a `main`. It is the
//! way back from agents to the rest of the program: an agent sends to a chain exactly as it
//! sends to an mbox (`chain.send(msg)`), and code that only sends takes a
//! [`Destination`](crate::Destination), which mboxes and chains both are.
//!
//! ```
//! use agentry::mchain::{Handlers, Mchain};
//! use std::time::Duration;
//!
//! struct Progress(u32);
//! struct Done;
//!
//! let chain = Mchain::unbounded();
//! let worker = {
//!     let chain = chain.clone();
//!     std::thread::spawn(move || {
//!         for n in 1..=3 {
//!             chain.send(Progress(n));
//!         }
//!         chain.send(Done);
//!     })
//! };
//!
//! // Each handler returns what the loop needs to know (handlers do not share borrows).
//! let mut handlers = Handlers::new();
//! handlers
//!     .on(|Progress(n): Progress| Some(n))?
//!     .on(|_: Done| None)?;
//! let mut seen = Vec::new();
//! while let Some(n) = chain.receive(Duration::from_secs(10), &mut handlers)? {
//!     seen.push(n);
//! }
//! assert_eq!(seen, [1, 2, 3]);
//! worker.join().expect("worker");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Why a trait, not `as_mbox()`
//!
//! An [`Mbox`](crate::Mbox) *is* an agent's mailbox: a handle to the agent's send path, which
//! is kept free of any branch that would not serve agents. Making a chain pass for an `Mbox`
//! would put such a branch on every send to every agent. Instead both are a
//! [`Destination`](crate::Destination) — the one thing code that only sends needs — and a
//! chain joins the other places an `Mbox` is used where it makes sense: timers
//! ([`EnvHandle::send_delayed`](crate::EnvHandle::send_delayed) takes any destination) and
//! multi mboxes ([`subscribe`](Mchain::subscribe)).
//!
//! # Ground rules
//!
//! - **Any message type.** A chain carries any `Send + 'static` values, in the order they were
//!   pushed (per sender FIFO; different senders interleave). A receiver gets them as an
//!   [`Envelope`] to downcast, or dispatched to typed closures ([`Handlers`]).
//! - **Nothing is lost silently.** Every message sent to a chain ends in exactly one of:
//!   *received* (taken by a receiver — of these, the ones a [`Handlers`] set had no closure
//!   for are also counted as *unhandled*), *revoked* (a cancelled timer's message, see
//!   below), still *queued*, *dropped* by the chain's own policy (an overflow reaction, or
//!   [`Close::DropContent`]), or *refused* (the chain was closed, or full with
//!   [`Overflow::Fail`] / a timed-out [`Overflow::Block`]; `try_send` gives a refused message
//!   back, `send` drops it). Each is a counter of [`ChainStats`].
//! - **Bounded chains react to overflow explicitly** ([`Overflow`]): drop the newest message,
//!   remove the oldest, fail (a typed error giving the message back), or block the sender up
//!   to a timeout. Only a direct `send` / `try_send` ever blocks: a timer's message and a
//!   message fanned out by a [`MultiMbox`] never wait (a full `Block` chain refuses them), so
//!   neither the timer thread nor a publishing agent can be stalled by a slow reader. An
//!   agent that sends to a `Block` chain blocks its dispatcher's thread while it waits.
//! - **Receiving** waits up to a timeout; `Duration::ZERO` only looks. A [`Handlers`] receive
//!   takes messages until one has a closure (the others are counted as unhandled and
//!   dropped, or given to the catch-all [`Handlers::otherwise`]), so a timeout bounds the
//!   whole call. Handlers run on the receiving thread, outside the chain's lock: they may
//!   send to the same chain.
//! - **Select** ([`Select`]) waits on several chains at once and takes from the first that
//!   has a message, going round the chains fairly (it starts after the one served last).
//! - **Closing** ([`close`](Mchain::close)) refuses every later send and wakes every waiting
//!   receiver and blocked sender. With [`Close::RetainContent`] receivers still get what was
//!   queued, then [`RecvError::Closed`]; with
//!   [`Close::DropContent`] the content is dropped (counted) at once.
//! - **Timers** ([`EnvHandle::send_delayed`](crate::EnvHandle::send_delayed) to a chain) keep
//!   their cancel guarantee: once `TimerHandle::cancel` returns, no receiver takes the
//!   timer's message — one already queued is discarded when a receiver reaches it, counted
//!   as *revoked* (until then it takes a place in a bounded chain).
//! - **Multi mboxes**: [`subscribe`](Mchain::subscribe) makes a chain a subscriber of a
//!   [`MultiMbox`] for one type `T`; it then receives each published `T` as an `Arc<T>`,
//!   like a subscribed agent. Closing or dropping the chain (its last handle) ends its
//!   subscriptions.
//! - Messages are dropped outside the chain's lock (a message's `Drop` may send again).
//!
//! A chain is a `parking_lot` mutex around a `VecDeque` and condition variables: no lock-free
//! code, no `unsafe`.

mod builder;
mod chain;
mod handlers;
mod recv;
mod recv_as;
mod select;
mod stats;
mod waiter;

pub use crate::message::envelope::Envelope;
pub use builder::MchainBuilder;
pub use handlers::Handlers;
pub use recv::Recv;
pub use recv_as::RecvAs;
pub use select::Select;
pub use stats::ChainStats;

use crate::error::{
    ChainSendError, MchainError, RecvAsError, RecvError, SelectError, TryRecvError,
};
use crate::ids::MboxId;
use crate::mbox::MultiMbox;
use crate::message::payload::Payload;
use crate::timer::token::TimerToken;
use chain::{Refusal, Take};
use std::any::TypeId;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) use chain::{Chain, Wait};

/// What a bounded chain does with a message that finds it full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Overflow {
    /// The new message is dropped (counted in `dropped`); the send itself succeeds.
    DropNewest,
    /// The oldest queued message is dropped (counted in `dropped`) to make room.
    RemoveOldest,
    /// The send is refused: `try_send` gives the message back as
    /// [`ChainSendError::Full`], `send` drops it (both counted in `refused`).
    Fail,
    /// The sender waits up to `timeout` for room, then the send is refused as with
    /// [`Fail`](Self::Fail). Timers and multi mboxes never wait (they are refused at once).
    Block {
        /// How long a sender waits for room.
        timeout: Duration,
    },
}

/// How [`Mchain::close`] treats the messages still queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Close {
    /// Drop them now (counted in `dropped`); receivers get `Closed` at once.
    DropContent,
    /// Keep them: receivers take them, then get `Closed`.
    RetainContent,
}

/// A message chain (see the [module docs](self)). A cheap, cloneable handle; the chain lives
/// while a handle (or a timer sending to it) exists.
///
/// ```
/// use agentry::mchain::{Mchain, Overflow};
/// use agentry::ChainSendError;
///
/// let chain = Mchain::builder().bounded(1, Overflow::Fail).build()?;
/// chain.try_send("first")?;
/// match chain.try_send("second") {
///     Err(ChainSendError::Full(message)) => assert_eq!(message, "second"),
///     other => panic!("a full chain with Overflow::Fail refuses: {other:?}"),
/// }
/// assert_eq!((chain.len(), chain.stats().refused), (1, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Mchain(Arc<Chain>);

impl Mchain {
    /// A chain without a capacity limit.
    pub fn unbounded() -> Mchain {
        Mchain(Arc::new(Chain::new(None, None, Overflow::Fail)))
    }

    /// A builder for a bounded or named chain.
    pub fn builder() -> MchainBuilder {
        MchainBuilder::default()
    }

    /// The chain's id (from the same sequence as mbox ids).
    pub fn id(&self) -> MboxId {
        self.0.id
    }

    /// The chain's name, if it was given one.
    pub fn name(&self) -> Option<&str> {
        self.0.name.as_deref()
    }

    /// The capacity of a bounded chain (`None`: unbounded).
    pub fn capacity(&self) -> Option<usize> {
        self.0.capacity
    }

    /// Messages queued now (revoked timer messages not yet discarded included).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True if no message is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True once the chain was closed.
    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }

    /// A consistent snapshot of the chain's counters.
    pub fn stats(&self) -> ChainStats {
        self.0.stats()
    }

    /// Sends `message`, fire-and-forget (like [`Mbox::send`](crate::Mbox::send)): if the chain
    /// refuses it (closed, or full with `Fail` or a timed-out `Block`) it is dropped and
    /// counted in `refused`. With [`Overflow::Block`] this waits for room.
    pub fn send<M: Send + 'static>(&self, message: M) {
        if let Err((payload, why)) = self.0.push(Payload::new(message), None, Wait::Allowed) {
            self.0.log_refused(&payload, why);
        }
    }

    /// Sends `message`, giving it back if the chain refuses it:
    /// [`ChainSendError::Closed`] after [`close`](Self::close), [`ChainSendError::Full`] for a
    /// full chain with [`Overflow::Fail`] or a `Block` that timed out. With
    /// [`Overflow::DropNewest`] a full chain drops the message and this returns `Ok`.
    pub fn try_send<M: Send + 'static>(&self, message: M) -> Result<(), ChainSendError<M>> {
        match self.0.push(Payload::new(message), None, Wait::Allowed) {
            Ok(()) => Ok(()),
            Err((payload, why)) => {
                let message = match payload.take::<M>() {
                    Ok(m) => m,
                    Err(_) => unreachable!("invariant: the refused payload was built from an M"),
                };
                Err(match why {
                    Refusal::Full => ChainSendError::Full(message),
                    Refusal::Closed => ChainSendError::Closed(message),
                })
            }
        }
    }

    /// Sends a timer's message: revocable, never waits (see the ground rules).
    pub(crate) fn send_timed<M: Send + 'static>(&self, message: M, token: &Arc<TimerToken>) {
        let pushed = self
            .0
            .push(Payload::new(message), Some(Arc::clone(token)), Wait::Never);
        if let Err((payload, why)) = pushed {
            self.0.log_refused(&payload, why);
        }
    }

    /// Takes the next message, waiting up to `timeout` for one (`Duration::ZERO`: only
    /// look). [`RecvError::Closed`] once the chain is closed and empty.
    ///
    /// ```
    /// use agentry::{mchain::Mchain, RecvError};
    /// use std::time::Duration;
    ///
    /// let chain = Mchain::unbounded();
    /// chain.send("hello");
    /// let envelope = chain.recv(Duration::ZERO).expect("one message");
    /// assert_eq!(envelope.downcast::<&str>().ok(), Some("hello"));
    /// assert_eq!(chain.recv(Duration::ZERO).err(), Some(RecvError::Timeout));
    /// ```
    pub fn recv(&self, timeout: Duration) -> Result<Envelope, RecvError> {
        select::take_any(&[&self.0], 0, deadline_after(timeout))
            .map(|(_, payload)| Envelope::new(payload))
            .map_err(RecvError::from_select)
    }

    /// Takes the next message as a `T`, without a downcast, waiting up to `timeout` for one
    /// (`Duration::ZERO`: only look). If the next message is of another type it is taken
    /// anyway and given back in [`RecvAsError::OtherType`] (see [`RecvAs`] for why it is not
    /// left in the chain); [`RecvAsError::Timeout`] and [`RecvAsError::Closed`] as for
    /// [`recv`](Self::recv). A signal (a zero-sized message type) is received like any type.
    ///
    /// ```
    /// use agentry::mchain::Mchain;
    /// use agentry::RecvAsError;
    /// use std::time::Duration;
    ///
    /// #[derive(Debug)]
    /// struct Reading(f64);
    /// struct Stop; // a signal
    ///
    /// let chain = Mchain::unbounded();
    /// chain.send(Reading(21.5));
    /// chain.send(Stop);
    /// let Reading(celsius) = chain.recv_as::<Reading>(Duration::ZERO)?;
    /// assert_eq!(celsius, 21.5);
    /// match chain.recv_as::<Reading>(Duration::ZERO) {
    ///     Err(RecvAsError::OtherType { got, .. }) => assert!(got.is::<Stop>()), // given back
    ///     other => panic!("a Stop came next: {other:?}"),
    /// }
    /// assert!(matches!(chain.recv_as::<Stop>(Duration::ZERO), Err(RecvAsError::Timeout)));
    /// # Ok::<(), RecvAsError>(())
    /// ```
    pub fn recv_as<T: 'static>(&self, timeout: Duration) -> Result<T, RecvAsError> {
        recv_as::expect(self.recv(timeout))
    }

    /// The next message as a `T`, as a future (see [`RecvAs`]; the typed
    /// [`recv_future`](Self::recv_future)).
    pub fn recv_future_as<T: 'static>(&self) -> RecvAs<T> {
        RecvAs::new(self.recv_future())
    }

    /// Takes the next message if one is queued.
    pub fn try_recv(&self) -> Result<Envelope, TryRecvError> {
        match self.0.take(None) {
            Take::Message(payload) => Ok(Envelope::new(payload)),
            Take::Empty => Err(TryRecvError::Empty),
            Take::Closed => Err(TryRecvError::Closed),
        }
    }

    /// The next message as a future, blocking no thread: the push (or the close) that ends
    /// the wait wakes the awaiting task. No timeout: the caller sets one. See [`Recv`].
    pub fn recv_future(&self) -> Recv {
        Recv::new(Arc::clone(&self.0))
    }

    /// Waits up to `timeout` (in all) for a message `handlers` has a closure for, runs it and
    /// returns its result. Messages without a closure (and no
    /// [`otherwise`](Handlers::otherwise)) are taken, counted as `unhandled` and dropped on the
    /// way.
    pub fn receive<R>(
        &self,
        timeout: Duration,
        handlers: &mut Handlers<'_, R>,
    ) -> Result<R, RecvError> {
        let deadline = deadline_after(timeout);
        loop {
            let (_, payload) =
                select::take_any(&[&self.0], 0, deadline).map_err(RecvError::from_select)?;
            match handlers.dispatch(payload) {
                Ok(result) => return Ok(result),
                Err(unhandled) => self.0.count_unhandled(unhandled),
            }
        }
    }

    /// Closes the chain (see the ground rules). Closing again does nothing, except that
    /// [`Close::DropContent`] still drops what an earlier `RetainContent` close kept.
    pub fn close(&self, mode: Close) {
        self.0.close(mode);
    }

    /// Makes the chain a subscriber of `multi` for messages of type `T`: each one published
    /// there arrives here as an `Arc<T>` (never waiting: a full `Block` chain refuses it).
    ///
    /// Fails with [`MchainError::Closed`] on a closed chain and
    /// [`MchainError::AlreadySubscribed`] if the chain already subscribes to `T` there.
    ///
    /// ```
    /// use agentry::{Env, mchain::Mchain};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// struct Price(u32);
    /// let env = Env::new().expect("env");
    /// let prices = env.handle().create_mbox();
    /// let chain = Mchain::unbounded();
    /// chain.subscribe::<Price>(&prices).expect("subscribed");
    /// prices.send(Price(7));
    /// let got = chain.recv(Duration::ZERO).expect("published").downcast::<Arc<Price>>();
    /// assert_eq!(got.ok().map(|p| p.0), Some(7));
    /// ```
    pub fn subscribe<T: Send + Sync + 'static>(
        &self,
        multi: &MultiMbox,
    ) -> Result<(), MchainError> {
        Chain::subscribe(
            &self.0,
            multi,
            TypeId::of::<T>(),
            std::any::type_name::<T>(),
        )
    }

    /// Ends the subscription to `T` on `multi`; false if there was none.
    pub fn unsubscribe<T: 'static>(&self, multi: &MultiMbox) -> bool {
        self.0.unsubscribe(multi, TypeId::of::<T>())
    }
}

/// `Instant::now() + timeout`, or `None` (wait for ever) if that does not fit.
fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

impl RecvError {
    fn from_select(e: SelectError) -> RecvError {
        match e {
            SelectError::Timeout => RecvError::Timeout,
            SelectError::AllClosed | SelectError::NoChains => RecvError::Closed,
        }
    }
}

impl PartialEq for Mchain {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Mchain {}

impl fmt::Debug for Mchain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mchain")
            .field("id", &self.0.id)
            .field("name", &self.0.name)
            .field("capacity", &self.0.capacity)
            .finish_non_exhaustive()
    }
}
