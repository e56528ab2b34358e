//! Remote request/reply: what a serving agent receives ([`RemoteRequest`]) and what a
//! non-blocking requester receives ([`RemoteReply`]).

use crate::core::Core;
use crate::core::outbound::{OutKind, OutMsg, Refused};
use crate::error::{RemoteFailure, RequestError, SendError};
use crate::registry::{EncodeFailure, RemoteMessage};
use async_nats::Subject;
use bytes::Bytes;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

/// Identifies a request sent with [`RemoteMbox::send_request`](crate::RemoteMbox::send_request);
/// its [`RemoteReply`] carries the same id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub(crate) u64);

impl RequestId {
    /// The numeric id (unique per gateway).
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "req#{}", self.0)
    }
}

/// The outcome of a request sent with
/// [`RemoteMbox::send_request`](crate::RemoteMbox::send_request), delivered to the mbox
/// given there: exactly one per request.
#[derive(Debug)]
pub struct RemoteReply<R> {
    /// Which request.
    pub id: RequestId,
    /// The reply, or why there is none.
    pub result: Result<R, RequestError>,
}

/// The right (and duty) to answer one remote request. Dropping it unanswered answers
/// [`RemoteFailure::NoReply`], so the requester fails fast instead of timing out.
#[must_use = "dropping a RemoteReplyTo answers the request with RemoteFailure::NoReply"]
pub struct RemoteReplyTo<R> {
    core: Option<Arc<Core>>,
    /// Where the answer goes (made once, when the request arrives; moved into the answer).
    reply: Subject,
    corr: Option<u64>,
    _reply: PhantomData<fn(R)>,
}

impl<R: RemoteMessage> RemoteReplyTo<R> {
    pub(crate) fn new(core: Arc<Core>, reply: &str, corr: Option<u64>) -> Self {
        RemoteReplyTo {
            core: Some(core),
            reply: Subject::from(reply),
            corr,
            _reply: PhantomData,
        }
    }

    /// Sends the reply. Gives it back if it cannot be encoded (the requester then gets
    /// [`RemoteFailure::ReplyEncode`]) or the outbound buffer refuses it.
    pub fn reply(mut self, reply: R) -> Result<(), SendError<R>> {
        let core = self
            .core
            .take()
            .expect("invariant: the core is taken only here, in fail and in drop");
        let encoded = match core.registry.encode(&reply, None, self.corr) {
            Ok(e) => e,
            Err(EncodeFailure::NotRegistered) => {
                core.send_failure(&self.reply, self.corr, RemoteFailure::ReplyEncode);
                return Err(SendError::NotRegistered(reply));
            }
            Err(EncodeFailure::Encode(reason)) => {
                core.send_failure(&self.reply, self.corr, RemoteFailure::ReplyEncode);
                return Err(SendError::Encode {
                    message: reply,
                    reason,
                });
            }
        };
        let max = core.max_payload();
        if encoded.payload.len() > max {
            core.send_failure(&self.reply, self.corr, RemoteFailure::ReplyEncode);
            return Err(SendError::Oversized {
                message: reply,
                size: encoded.payload.len(),
                max,
            });
        }
        let msg = OutMsg {
            subject: std::mem::replace(&mut self.reply, Subject::from_static("")),
            reply: None,
            envelope: encoded.envelope,
            payload: Bytes::from(encoded.payload),
            request: None,
            kind: OutKind::Reply,
        };
        match core.enqueue(msg) {
            Ok(()) => Ok(()),
            Err(Refused::Full(_)) => Err(SendError::BufferFull(reply)),
            Err(Refused::Closed) => Err(SendError::Closed(reply)),
        }
    }
}

impl<R> RemoteReplyTo<R> {
    /// Answers with a failure instead of a reply.
    pub fn fail(mut self, failure: RemoteFailure) {
        if let Some(core) = self.core.take() {
            core.send_failure(&self.reply, self.corr, failure);
        }
    }
}

impl<R> Drop for RemoteReplyTo<R> {
    fn drop(&mut self) {
        if let Some(core) = self.core.take() {
            let f = if std::thread::panicking() {
                RemoteFailure::HandlerPanicked
            } else {
                RemoteFailure::NoReply
            };
            core.send_failure(&self.reply, self.corr, f);
        }
    }
}

impl<R> fmt::Debug for RemoteReplyTo<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteReplyTo")
            .field("reply", &self.reply)
            .field("corr", &self.corr)
            .finish()
    }
}

/// A request from another process, delivered to the agent given to
/// [`Gateway::serve`](crate::Gateway::serve). The agent answers now or later (keep the
/// [`RemoteReplyTo`]) from any handler or thread.
///
/// ```
/// use agentry::{Agent, Ctx, Define, DefineError};
/// use agentry_remote::RemoteRequest;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Add { a: i64, b: i64 }
/// #[derive(Serialize, Deserialize)]
/// struct Sum(i64);
///
/// struct Calc;
/// impl Agent for Calc {
///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
///         def.on(|_: &mut Calc, _: &mut Ctx<Calc>, req: RemoteRequest<Add, Sum>| {
///             let sum = Sum(req.query().a + req.query().b);
///             // Err gives the reply back (buffer full, gateway closed, encode failure).
///             let _ = req.reply(sum);
///         })?;
///         Ok(())
///     }
/// }
/// ```
pub struct RemoteRequest<Q, R> {
    query: Q,
    reply: RemoteReplyTo<R>,
}

impl<Q, R: RemoteMessage> RemoteRequest<Q, R> {
    pub(crate) fn new(query: Q, reply: RemoteReplyTo<R>) -> Self {
        RemoteRequest { query, reply }
    }

    /// The query.
    pub fn query(&self) -> &Q {
        &self.query
    }

    /// Splits into the query and the reply handle.
    pub fn into_parts(self) -> (Q, RemoteReplyTo<R>) {
        (self.query, self.reply)
    }

    /// Answers the request (see [`RemoteReplyTo::reply`]).
    pub fn reply(self, reply: R) -> Result<(), SendError<R>> {
        self.reply.reply(reply)
    }

    /// Answers with a failure.
    pub fn fail(self, failure: RemoteFailure) {
        self.reply.fail(failure)
    }
}

impl<Q, R> fmt::Debug for RemoteRequest<Q, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteRequest")
            .field("query", &std::any::type_name::<Q>())
            .field("reply", &self.reply)
            .finish()
    }
}
