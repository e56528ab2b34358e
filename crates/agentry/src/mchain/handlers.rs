//! `Handlers`: typed closures a receiver dispatches chain messages to.

use crate::error::MchainError;
use crate::message::envelope::Envelope;
use crate::message::payload::Payload;
use std::any::TypeId;
use std::fmt;

type Handler<'h, R> = Box<dyn FnMut(Payload) -> R + 'h>;

/// A set of closures, one per message type, each returning an `R`: what
/// [`Mchain::receive`](super::Mchain::receive) and [`Select`](super::Select) run for the
/// messages they take.
///
/// Closures may borrow from the receiving code (`'h`); since two closures cannot both borrow
/// the same variable mutably, let them *return* what the loop needs (an enum, an `Option`)
/// instead of writing to shared locals.
///
/// ```
/// use agentry::mchain::{Handlers, Mchain};
/// use std::time::Duration;
///
/// struct Add(i64);
/// struct Sub(i64);
///
/// let chain = Mchain::unbounded();
/// chain.send(Add(5));
/// chain.send("not for us");
/// chain.send(Sub(2));
///
/// let mut handlers = Handlers::new();
/// handlers.on(|Add(n): Add| n)?.on(|Sub(n): Sub| -n)?;
/// let mut total = 0;
/// while let Ok(delta) = chain.receive(Duration::ZERO, &mut handlers) {
///     total += delta;
/// }
/// assert_eq!(total, 3);
/// assert_eq!(chain.stats().unhandled, 1, "the &str had no closure: counted, dropped");
/// # Ok::<(), agentry::MchainError>(())
/// ```
pub struct Handlers<'h, R = ()> {
    by_type: Vec<(TypeId, &'static str, Handler<'h, R>)>,
    otherwise: Option<Box<dyn FnMut(Envelope) -> R + 'h>>,
}

impl<'h, R> Handlers<'h, R> {
    /// An empty set.
    pub fn new() -> Self {
        Handlers {
            by_type: Vec::new(),
            otherwise: None,
        }
    }

    /// Handles messages of type `M` with `handler`. A second closure for the same type is
    /// [`MchainError::DuplicateHandler`].
    pub fn on<M, F>(&mut self, mut handler: F) -> Result<&mut Self, MchainError>
    where
        M: Send + 'static,
        F: FnMut(M) -> R + 'h,
    {
        let type_id = TypeId::of::<M>();
        let type_name = std::any::type_name::<M>();
        if self.by_type.iter().any(|(t, ..)| *t == type_id) {
            return Err(MchainError::DuplicateHandler(type_name));
        }
        let erased = move |payload: Payload| match payload.take::<M>() {
            Ok(message) => handler(message),
            Err(_) => unreachable!("invariant: dispatched by the payload's type id"),
        };
        self.by_type.push((type_id, type_name, Box::new(erased)));
        Ok(self)
    }

    /// Handles every message no `on` closure takes (replacing an earlier catch-all). Without
    /// one, such messages are counted as unhandled and dropped.
    pub fn otherwise(&mut self, handler: impl FnMut(Envelope) -> R + 'h) -> &mut Self {
        self.otherwise = Some(Box::new(handler));
        self
    }

    /// Runs the closure for `envelope`'s type (or the catch-all); gives the envelope back if
    /// there is none. For messages obtained with [`Mchain::recv`](super::Mchain::recv).
    pub fn handle(&mut self, envelope: Envelope) -> Result<R, Envelope> {
        self.dispatch(envelope.into_payload())
            .map_err(Envelope::new)
    }

    pub(super) fn dispatch(&mut self, payload: Payload) -> Result<R, Payload> {
        let type_id = payload.type_id();
        if let Some((.., handler)) = self.by_type.iter_mut().find(|(t, ..)| *t == type_id) {
            return Ok(handler(payload));
        }
        match &mut self.otherwise {
            Some(otherwise) => Ok(otherwise(Envelope::new(payload))),
            None => Err(payload),
        }
    }
}

impl<R> Default for Handlers<'_, R> {
    fn default() -> Self {
        Handlers::new()
    }
}

impl<R> fmt::Debug for Handlers<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handlers")
            .field(
                "types",
                &self.by_type.iter().map(|(_, n, _)| *n).collect::<Vec<_>>(),
            )
            .field("otherwise", &self.otherwise.is_some())
            .finish()
    }
}
