//! [`MboxExt`]: asking and sending to an agent from async code (on tokio), without blocking a
//! thread.
//!
//! # Ground rules
//!
//! - `ask` sends at once (when called, not when first awaited) and awaits the reply through
//!   `agentry::PendingReply`: the `ReplyTo` wakes the task. The timeout is tokio's; on
//!   timeout the request is given up and a later reply is discarded and counted by the core
//!   (`EnvStats::replies_discarded`), as for a synchronous request.
//! - `send_wait` awaits room under a message limit (reaction `Overload::Drop`) by retrying:
//!   the core has no "room freed" notification, so the sender yields to tokio a few times,
//!   then retries every millisecond (tokio's timer) until the deadline. No thread blocks,
//!   but each refused attempt is a refusal the core counts (`limit_dropped`).
//! - Both must be awaited on a tokio runtime with its time driver (tokio's rule for its timers).

use agentry::{Mbox, RequestError, SendError};
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// Yields to tokio this many times before retrying on its timer.
const YIELDS_BEFORE_SLEEPING: u32 = 16;
/// The retry period once yielding did not free room.
const RETRY_EVERY: Duration = Duration::from_millis(1);

/// Async request and send for an agent's [`Mbox`].
///
/// ```
/// use agentry::{Agent, Ctx, Define, DefineError, Env, RequestError};
/// use agentry_tokio::MboxExt;
/// use std::time::Duration;
///
/// struct Double;
/// impl Agent for Double {
///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
///         def.on_request(|_: &mut Double, _: &mut Ctx<Double>, n: u32| n * 2)?;
///         Ok(())
///     }
/// }
///
/// let env = Env::new()?;
/// let agent = env.handle().register_agent(Double)?;
/// let rt = tokio::runtime::Builder::new_multi_thread().enable_time().build()?;
/// let (twice, wrong) = rt.block_on(async {
///     let twice = agent.ask::<u32, u32>(21, Duration::from_secs(5)).await;
///     let wrong = agent.ask::<&str, u32>("21", Duration::from_secs(5)).await;
///     (twice, wrong)
/// });
/// assert_eq!(twice, Ok(42));
/// assert_eq!(wrong, Err(RequestError::NoHandler));
/// env.handle().stop();
/// env.run();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait MboxExt {
    /// Sends the request `query` and awaits the agent's `R`, at most `timeout`: the outcomes
    /// of `Mbox::request` (`Timeout`, `NoHandler`, `AgentGone`, `Overloaded`,
    /// `HandlerPanicked`, `NoReply`, `Shutdown`), never `SelfRequest` or `SameThread`
    /// (nothing blocks).
    fn ask<Q, R>(
        &self,
        query: Q,
        timeout: Duration,
    ) -> impl Future<Output = Result<R, RequestError>> + Send + 'static + use<Self, Q, R>
    where
        Q: Send + 'static,
        R: Send + 'static;

    /// Sends `message`, awaiting room (at most `timeout`) while the agent's message limit
    /// refuses it; gives it back as `SendError::Overloaded` if the room did not come, and at
    /// once as `SendError::AgentGone` if the agent is not running. `Mbox::try_send` is the
    /// variant that never waits.
    fn send_wait<M>(
        &self,
        message: M,
        timeout: Duration,
    ) -> impl Future<Output = Result<(), SendError<M>>> + Send + 'static + use<Self, M>
    where
        M: Send + 'static;
}

impl MboxExt for Mbox {
    fn ask<Q, R>(
        &self,
        query: Q,
        timeout: Duration,
    ) -> impl Future<Output = Result<R, RequestError>> + Send + 'static + use<Q, R>
    where
        Q: Send + 'static,
        R: Send + 'static,
    {
        let reply = self.request_future::<Q, R>(query);
        async move {
            tokio::time::timeout(timeout, reply)
                .await
                .unwrap_or(Err(RequestError::Timeout))
        }
    }

    fn send_wait<M>(
        &self,
        message: M,
        timeout: Duration,
    ) -> impl Future<Output = Result<(), SendError<M>>> + Send + 'static + use<M>
    where
        M: Send + 'static,
    {
        let mbox = self.clone();
        async move {
            let deadline = Instant::now() + timeout;
            let mut message = message;
            let mut attempt = 0u32;
            loop {
                match mbox.try_send(message) {
                    Err(SendError::Overloaded(back)) if Instant::now() < deadline => {
                        message = back;
                    }
                    outcome => return outcome,
                }
                attempt += 1;
                if attempt <= YIELDS_BEFORE_SLEEPING {
                    tokio::task::yield_now().await;
                } else {
                    tokio::time::sleep_until(deadline.min(Instant::now() + RETRY_EVERY)).await;
                }
            }
        }
    }
}
