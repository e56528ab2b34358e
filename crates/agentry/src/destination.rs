//! [`Destination`]: anything a message can be sent to — an agent's [`Mbox`] (or, for one type
//! its protocol declares, its [`Recipient`](crate::Recipient)), a [`MultiMbox`] or an
//! [`Mchain`].
//!
//! Code that only sends (a reply address carried in a message, a notifier, a timer) takes an
//! `impl Destination<M>` or a `&dyn Destination<M>` and does not care whether an agent or a
//! plain thread (through a chain) is at the other end:
//!
//! ```
//! use agentry::{Destination, mchain::Mchain};
//! use std::time::Duration;
//!
//! /// Reports progress to whoever is interested: an agent or a thread.
//! fn report(to: &dyn Destination<u32>, done: u32) {
//!     to.send(done);
//! }
//!
//! let chain = Mchain::unbounded();
//! report(&chain, 42);
//! let got = chain.recv(Duration::ZERO).expect("queued").downcast::<u32>();
//! assert_eq!(got.ok(), Some(42));
//! ```
//!
//! [`EnvHandle::send_delayed`](crate::EnvHandle::send_delayed) and
//! [`send_periodic`](crate::EnvHandle::send_periodic) take any destination, so timers reach
//! chains too (with the same cancel guarantee: a chain discards a cancelled timer's message
//! when a receiver comes to it).
//!
//! The trait is sealed, so a test cannot implement it for a mock — and needs not: hand the
//! code under test an [`Mchain`] and read what it sent (see [`testing`](crate::testing)).
//!
//! `send` is fire-and-forget everywhere: a message that cannot be delivered is counted where
//! the destination counts (`EnvStats` for mboxes, [`ChainStats`](crate::mchain::ChainStats) for
//! chains), never lost silently. Sealing lets the runtime know how to deliver to each kind
//! (timers carry their cancellation token through it).

use crate::mbox::{Mbox, MultiMbox, Recipient};
use crate::mchain::Mchain;

/// Somewhere a message of type `M` can be sent: an [`Mbox`], a
/// [`Recipient<M>`](crate::Recipient), a [`MultiMbox`] (for `M: Sync`) or an [`Mchain`].
/// Sealed.
pub trait Destination<M: Send + 'static>: sealed::Deliver<M> + Send + Sync + 'static {
    /// Sends `message`, fire-and-forget: if it cannot be delivered it is dropped and counted
    /// by the destination (see the module docs).
    fn send(&self, message: M);
}

pub(crate) mod sealed {
    use crate::timer::token::TimerToken;
    use std::sync::Arc;

    /// A timer's cancellation token, passed to the destination with the timer's message.
    #[derive(Debug)]
    pub struct Timed<'a>(pub(crate) &'a Arc<TimerToken>);

    /// How the runtime delivers a timer's message (not callable outside the crate).
    pub trait Deliver<M> {
        /// Sends a timer's message: it is revoked if the timer is cancelled before a receiver
        /// takes it, and the sending (timer) thread never waits.
        fn send_timed(&self, message: M, token: Timed<'_>);
    }
}

impl<M: Send + 'static> sealed::Deliver<M> for Mbox {
    fn send_timed(&self, message: M, token: sealed::Timed<'_>) {
        Mbox::send_timed(self, message, token.0);
    }
}

impl<M: Send + 'static> Destination<M> for Mbox {
    #[inline]
    fn send(&self, message: M) {
        Mbox::send(self, message);
    }
}

impl<M: Send + Sync + 'static> sealed::Deliver<M> for MultiMbox {
    fn send_timed(&self, message: M, token: sealed::Timed<'_>) {
        MultiMbox::send_timed(self, message, token.0);
    }
}

impl<M: Send + Sync + 'static> Destination<M> for MultiMbox {
    fn send(&self, message: M) {
        MultiMbox::send(self, message);
    }
}

impl<M: Send + 'static> sealed::Deliver<M> for Mchain {
    fn send_timed(&self, message: M, token: sealed::Timed<'_>) {
        Mchain::send_timed(self, message, token.0);
    }
}

impl<M: Send + 'static> Destination<M> for Mchain {
    fn send(&self, message: M) {
        Mchain::send(self, message);
    }
}

impl<M: Send + 'static> sealed::Deliver<M> for Recipient<M> {
    fn send_timed(&self, message: M, token: sealed::Timed<'_>) {
        sealed::Deliver::send_timed(self.mbox(), message, token);
    }
}

impl<M: Send + 'static> Destination<M> for Recipient<M> {
    #[inline]
    fn send(&self, message: M) {
        self.mbox().send(message);
    }
}
