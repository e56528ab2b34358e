//! `Envelope`: a message taken from a chain, of a type known only at run time (public as
//! `agentry::mchain::Envelope`; here, with the payload it wraps, so that errors can carry it).

use super::payload::Payload;
use std::any::TypeId;
use std::fmt;

/// A received message whose type is checked at run time: [`downcast`](Self::downcast) it, or
/// let a [`Handlers`](crate::mchain::Handlers) set pick the closure for its type.
///
/// ```
/// use agentry::mchain::Mchain;
/// use std::time::Duration;
///
/// let chain = Mchain::unbounded();
/// chain.send(7u8);
/// let envelope = chain.recv(Duration::ZERO).expect("queued");
/// assert!(envelope.is::<u8>());
/// let envelope = envelope.downcast::<u16>().expect_err("not a u16: given back");
/// assert_eq!(envelope.downcast::<u8>().ok(), Some(7));
/// ```
pub struct Envelope {
    payload: Payload,
}

impl Envelope {
    pub(crate) fn new(payload: Payload) -> Self {
        Envelope { payload }
    }

    pub(crate) fn into_payload(self) -> Payload {
        self.payload
    }

    /// True if the message is an `M`.
    pub fn is<M: 'static>(&self) -> bool {
        self.payload.type_id() == TypeId::of::<M>()
    }

    /// The Rust name of the message's type (diagnostics).
    pub fn type_name(&self) -> &'static str {
        self.payload.type_name()
    }

    /// The message, if it is an `M`; otherwise the envelope back.
    pub fn downcast<M: 'static>(self) -> Result<M, Envelope> {
        self.payload.take::<M>().map_err(Envelope::new)
    }
}

impl fmt::Debug for Envelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Envelope")
            .field("type", &self.type_name())
            .finish()
    }
}
