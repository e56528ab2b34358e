//! [`Recv`]: a chain's next message as a `std` future, for async code (no runtime needed).
//!
//! Each poll takes the front message or, on an open empty chain, leaves the task's waker in
//! the chain's waiters (once: a chain registers a waiter only if it is not there already);
//! the next push or the close wakes it. Dropping the future removes its waiter.

use super::Envelope;
use super::chain::{Chain, Take};
use super::waiter::Waiter;
use crate::error::RecvError;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The next message of an [`Mchain`](super::Mchain), awaited without blocking a thread
/// ([`Mchain::recv_future`](super::Mchain::recv_future)). Resolves to the message, or to
/// [`RecvError::Closed`] once the chain is closed and empty; it has no timeout of its own.
///
/// ```
/// use agentry::mchain::Mchain;
/// use std::future::Future;
/// use std::pin::pin;
/// use std::task::{Context, Poll, Waker};
///
/// let chain = Mchain::unbounded();
/// let mut next = pin!(chain.recv_future());
/// let mut cx = Context::from_waker(Waker::noop());
/// assert!(next.as_mut().poll(&mut cx).is_pending());
/// chain.send(7u8);
/// let Poll::Ready(Ok(envelope)) = next.as_mut().poll(&mut cx) else { panic!("a message") };
/// assert_eq!(envelope.downcast::<u8>().ok(), Some(7));
/// ```
#[must_use = "a Recv does nothing unless awaited"]
pub struct Recv {
    chain: Arc<Chain>,
    waiter: Arc<Waiter>,
}

impl Recv {
    pub(super) fn new(chain: Arc<Chain>) -> Self {
        Recv {
            chain,
            waiter: Waiter::new(),
        }
    }
}

impl Future for Recv {
    type Output = Result<Envelope, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.waiter.set_task(cx.waker());
        match self.chain.take(Some(&self.waiter)) {
            Take::Message(payload) => Poll::Ready(Ok(Envelope::new(payload))),
            Take::Closed => Poll::Ready(Err(RecvError::Closed)),
            Take::Empty => Poll::Pending,
        }
    }
}

impl Drop for Recv {
    fn drop(&mut self) {
        self.chain.forget(&self.waiter);
    }
}

impl fmt::Debug for Recv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recv")
            .field("chain", &self.chain.id)
            .finish()
    }
}
