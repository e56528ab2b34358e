//! Receiving a known type from a chain without a downcast: [`Mchain::recv_as`] and its future,
//! [`RecvAs`].
//!
//! The next message is taken whatever its type (a chain is one queue, in send order); if it
//! is not a `T` it is given back inside [`RecvAsError::OtherType`], never dropped. Leaving it
//! in the chain instead would stall every typed receiver behind it and race with the other
//! receivers of the chain; given back, it is the caller's to downcast or to hand to a
//! [`Handlers`](super::Handlers) set ([`Handlers::handle`](super::Handlers::handle)). It counts
//! as received, as for [`Mchain::recv`].
//!
//! [`Mchain::recv_as`]: super::Mchain::recv_as

use super::Envelope;
use super::recv::Recv;
use crate::error::{RecvAsError, RecvError};
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The outcome of a receive, as a `T`.
pub(super) fn expect<T: 'static>(got: Result<Envelope, RecvError>) -> Result<T, RecvAsError> {
    got.map_err(RecvAsError::from)?
        .downcast::<T>()
        .map_err(|got| RecvAsError::OtherType {
            expected: std::any::type_name::<T>(),
            got,
        })
}

/// The next message of an [`Mchain`](super::Mchain) as a `T`, awaited without blocking a
/// thread ([`Mchain::recv_future_as`](super::Mchain::recv_future_as)): the outcomes of
/// [`Mchain::recv_as`](super::Mchain::recv_as) except `Timeout` (the caller sets its own), as
/// [`Recv`] is to [`Mchain::recv`](super::Mchain::recv).
///
/// ```
/// use agentry::mchain::Mchain;
/// use std::future::Future;
/// use std::pin::pin;
/// use std::task::{Context, Poll, Waker};
///
/// struct Done;
///
/// let chain = Mchain::unbounded();
/// let mut next = pin!(chain.recv_future_as::<Done>());
/// let mut cx = Context::from_waker(Waker::noop());
/// assert!(next.as_mut().poll(&mut cx).is_pending());
/// chain.send(Done);
/// assert!(matches!(next.as_mut().poll(&mut cx), Poll::Ready(Ok(Done))));
/// ```
#[must_use = "a RecvAs does nothing unless awaited"]
pub struct RecvAs<T> {
    recv: Recv,
    _type: PhantomData<fn() -> T>,
}

impl<T> RecvAs<T> {
    pub(super) fn new(recv: Recv) -> Self {
        RecvAs {
            recv,
            _type: PhantomData,
        }
    }
}

impl<T: 'static> Future for RecvAs<T> {
    type Output = Result<T, RecvAsError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.get_mut().recv).poll(cx).map(expect::<T>)
    }
}

impl<T> fmt::Debug for RecvAs<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvAs")
            .field("type", &std::any::type_name::<T>())
            .field("recv", &self.recv)
            .finish()
    }
}
