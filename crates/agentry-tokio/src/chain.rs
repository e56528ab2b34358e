//! [`ChainExt`]: receiving from an [`Mchain`] in async code with a timeout (tokio's). Without
//! a timeout, `chain.recv_future().await` (the core's `agentry::mchain::Recv`) needs no
//! runtime at all.

use agentry::mchain::Envelope;
use agentry::{RecvError, mchain::Mchain};
use std::future::Future;
use std::time::Duration;

/// Async receive for an [`Mchain`].
///
/// ```
/// use agentry::{mchain::Mchain, RecvError};
/// use agentry_tokio::ChainExt;
/// use std::time::Duration;
///
/// let chain = Mchain::unbounded();
/// let rt = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
/// rt.block_on(async {
///     let sender = chain.clone();
///     tokio::spawn(async move { sender.send("hello") });
///     let got = chain.recv_within(Duration::from_secs(5)).await?;
///     assert_eq!(got.downcast::<&str>().ok(), Some("hello"));
///     let none = chain.recv_within(Duration::from_millis(1)).await;
///     assert_eq!(none.err(), Some(RecvError::Timeout));
///     Ok::<(), RecvError>(())
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait ChainExt {
    /// Awaits the chain's next message, at most `timeout`: `RecvError::Timeout`, or
    /// `RecvError::Closed` once the chain is closed and empty.
    fn recv_within(
        &self,
        timeout: Duration,
    ) -> impl Future<Output = Result<Envelope, RecvError>> + Send + 'static + use<Self>;
}

impl ChainExt for Mchain {
    fn recv_within(
        &self,
        timeout: Duration,
    ) -> impl Future<Output = Result<Envelope, RecvError>> + Send + 'static + use<> {
        let next = self.recv_future();
        async move {
            tokio::time::timeout(timeout, next)
                .await
                .unwrap_or(Err(RecvError::Timeout))
        }
    }
}
