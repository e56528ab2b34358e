//! `Recipient<M>`: an agent's direct mbox that sends only `M`, made from a typed address.

use super::Mbox;
use crate::error::SendError;
use std::fmt;
use std::marker::PhantomData;

/// An agent's direct mbox restricted to one message type `M`, which the agent declares in its
/// [`Protocol`](crate::protocol::Protocol): made by [`Addr::recipient`](crate::Addr::recipient), so the
/// type was checked when it was made. It names the message type, not the agent's: the reply
/// address to carry in a message, or a [`Destination`](crate::Destination) for a timer (its
/// `Destination` impl is in `destination.rs`). Same size as an `Mbox`.
///
/// ```
/// use agentry::{Agent, Ctx, Define, DefineError, Env, protocol::Protocol, Recipient};
/// use std::time::Duration;
///
/// struct Tick;
/// struct Clock { ticks: u32 }
///
/// impl Agent for Clock {
///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
///         def.on(|c: &mut Clock, ctx: &mut Ctx<Clock>, _: Tick| {
///             c.ticks += 1;
///             ctx.stop_env();
///         })?;
///         Ok(())
///     }
/// }
/// impl Protocol for Clock {
///     type Messages = (Tick,);
/// }
///
/// let env = Env::new()?;
/// let clock = env.handle().register_agent_addr(Clock { ticks: 0 })?;
/// let ticks: Recipient<Tick> = clock.recipient();
/// let _timer = env.handle().send_delayed(&ticks, Duration::from_millis(1), Tick);
/// env.run();
/// assert_eq!(clock.mbox().stats().handled, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Recipient<M> {
    mbox: Mbox,
    _message: PhantomData<fn(M)>,
}

impl<M: Send + 'static> Recipient<M> {
    /// `mbox`, whose agent declares `M` in its protocol.
    pub(crate) fn new(mbox: Mbox) -> Self {
        Recipient {
            mbox,
            _message: PhantomData,
        }
    }

    /// Sends `message` (see [`Mbox::send`]).
    #[inline]
    pub fn send(&self, message: M) {
        self.mbox.send(message);
    }

    /// Sends `message`, giving it back if refused (see [`Mbox::try_send`]).
    pub fn try_send(&self, message: M) -> Result<(), SendError<M>> {
        self.mbox.try_send(message)
    }
}

impl<M> Recipient<M> {
    /// The untyped direct mbox.
    pub fn mbox(&self) -> &Mbox {
        &self.mbox
    }
}

impl<M> From<Recipient<M>> for Mbox {
    fn from(recipient: Recipient<M>) -> Mbox {
        recipient.mbox
    }
}

impl<M> Clone for Recipient<M> {
    fn clone(&self) -> Self {
        Recipient {
            mbox: self.mbox.clone(),
            _message: PhantomData,
        }
    }
}

impl<M> PartialEq for Recipient<M> {
    fn eq(&self, other: &Self) -> bool {
        self.mbox == other.mbox
    }
}

impl<M> Eq for Recipient<M> {}

impl<M> fmt::Debug for Recipient<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recipient")
            .field("message", &std::any::type_name::<M>())
            .field("mbox", &self.mbox)
            .finish()
    }
}
