//! `RemoteMbox`: a global mbox, reachable from every process attached to the same NATS
//! namespace (or the other end of a direct link).

use crate::compression::Compression;
use crate::core::Core;
use crate::core::outbound::{OutKind, OutMsg, Refused};
use crate::core::pending::{Outcome, Slot, Waiter};
use crate::error::{RequestError, SendError};
use crate::registry::{EncodeFailure, Encoded, RemoteMessage};
use crate::request::{RemoteReply, RequestId};
use crate::stats::inc;
use agentry::Mbox;
use async_nats::Subject;
use bytes::Bytes;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A global mbox: messages sent to it reach every subscriber of its name in every
/// connected process (and one member of each queue group); requests reach one server of
/// its name. A cheap-to-clone handle, usable from any thread and from agents (nothing here
/// is async).
///
/// Obtained from [`Gateway::mbox`](crate::Gateway::mbox).
#[derive(Clone)]
pub struct RemoteMbox {
    core: Arc<Core>,
    name: Arc<str>,
    subject: Subject,
    service: Subject,
    compression: Option<Compression>,
}

impl RemoteMbox {
    pub(crate) fn new(core: Arc<Core>, name: &str) -> Result<RemoteMbox, crate::NameError> {
        let subject = core.scheme.message_subject(name)?;
        let service = core.scheme.service_subject(name)?;
        Ok(RemoteMbox {
            core,
            name: name.into(),
            subject: Subject::from(subject),
            service: Subject::from(service),
            compression: None,
        })
    }

    /// The mbox's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The NATS subject messages to this mbox travel on (`<ns>.v1.m.<name>`).
    pub fn subject(&self) -> &str {
        self.subject.as_str()
    }

    /// A handle to the same mbox whose sends and requests use `compression` instead of
    /// their types' setting.
    pub fn with_compression(&self, compression: Compression) -> RemoteMbox {
        RemoteMbox {
            compression: Some(compression),
            ..self.clone()
        }
    }

    fn encode<T: RemoteMessage>(
        &self,
        msg: T,
        corr: Option<u64>,
    ) -> Result<(T, Encoded), SendError<T>> {
        let mut encoded = match self.core.registry.encode(&msg, self.compression, corr) {
            Ok(e) => e,
            Err(EncodeFailure::NotRegistered) => return Err(SendError::NotRegistered(msg)),
            Err(EncodeFailure::Encode(reason)) => {
                return Err(SendError::Encode {
                    message: msg,
                    reason,
                });
            }
        };
        encoded.envelope.trace = self.core.trace_context();
        let max = self.core.max_payload();
        if encoded.payload.len() > max {
            return Err(SendError::Oversized {
                message: msg,
                size: encoded.payload.len(),
                max,
            });
        }
        Ok((msg, encoded))
    }

    /// Sends `message` to every subscriber of this name. Returns once the message is in the
    /// gateway's outbound buffer (it is sent from there; while disconnected it waits there).
    /// Fails — giving the message back — if its type is not registered, it cannot be
    /// encoded or is too large, the buffer is full (policy `RejectNew`) or the gateway is
    /// closed.
    pub fn send<T: RemoteMessage>(&self, message: T) -> Result<(), SendError<T>> {
        let (message, encoded) = self.encode(message, None)?;
        let msg = OutMsg {
            subject: self.subject.clone(),
            reply: None,
            envelope: encoded.envelope,
            payload: Bytes::from(encoded.payload),
            request: None,
            kind: OutKind::Message,
        };
        match self.core.enqueue(msg) {
            Ok(()) => Ok(()),
            Err(Refused::Full(_)) => Err(SendError::BufferFull(message)),
            Err(Refused::Closed) => Err(SendError::Closed(message)),
        }
    }

    fn request_envelope<Q: RemoteMessage, R: 'static>(
        &self,
        query: Q,
    ) -> Result<(Q, u64, OutMsg), SendError<Q>> {
        if self.core.registry.entry_of::<R>().is_none() {
            return Err(SendError::NotRegistered(query));
        }
        let corr = self.core.next_corr();
        let (query, encoded) = self.encode(query, Some(corr))?;
        let msg = OutMsg {
            subject: self.service.clone(),
            reply: Some(Subject::from(self.core.scheme.reply_subject(corr))),
            envelope: encoded.envelope,
            payload: Bytes::from(encoded.payload),
            request: Some(corr),
            kind: OutKind::Request,
        };
        Ok((query, corr, msg))
    }

    /// Sends the request `query` to one server of this name and blocks the calling thread
    /// until its reply `R` arrives or `timeout` passes. Usable from plain threads and from
    /// agents (like `Mbox::request`); an agent that must not block uses
    /// [`send_request`](Self::send_request).
    ///
    /// Every outcome is typed: nobody serving the name → [`RequestError::NoResponders`] at
    /// once (NATS) or [`RequestError::Remote`]`(NoRoute)` (link); the server's agent failed →
    /// `Remote(..)`; the connection dropped with the request in flight → `Disconnected`;
    /// a reply of the wrong type or version → `BadReply`.
    pub fn request<Q: RemoteMessage, R: RemoteMessage>(
        &self,
        query: Q,
        timeout: Duration,
    ) -> Result<R, RequestError> {
        let (_query, corr, msg) = self.request_envelope::<Q, R>(query).map_err(|e| match e {
            SendError::NotRegistered(_) => {
                RequestError::NotRegistered(if self.core.registry.entry_of::<R>().is_none() {
                    std::any::type_name::<R>()
                } else {
                    std::any::type_name::<Q>()
                })
            }
            other => other.into(),
        })?;
        let slot = Arc::new(Slot::new());
        if self
            .core
            .insert_pending(corr, Waiter::Blocking(Arc::clone(&slot)), None)
            .is_err()
        {
            return Err(RequestError::Closed);
        }
        if let Err(r) = self.core.enqueue(msg) {
            self.core.pending.remove(corr);
            return Err(match r {
                Refused::Full(_) => RequestError::BufferFull,
                Refused::Closed => RequestError::Closed,
            });
        }
        // A handler's request may wait at the end of its batch (the link): send it first.
        agentry::disp::run_batch_end_hooks();
        let outcome = match slot.wait(Instant::now().checked_add(timeout)) {
            Some(o) => o,
            None => match self.core.pending.remove(corr) {
                Some(_) => {
                    inc(&self.core.counters.timed_out);
                    return Err(RequestError::Timeout);
                }
                // Its completer removed the entry and is filling the slot right now.
                None => slot.wait(None).unwrap_or(Err(RequestError::Timeout)),
            },
        };
        outcome.and_then(|data| self.core.decode_reply::<R>(&data))
    }

    /// Sends the request `query` without blocking; its outcome arrives later at `reply_to`
    /// as one [`RemoteReply<R>`] with the returned id — a reply, or the typed reason there
    /// is none (including `Timeout` after `timeout`). Fails at once, giving the query back,
    /// like [`send`](Self::send) — unless the request ended during the call (its `timeout`
    /// passed, or the gateway closed): then that outcome arrives as its `RemoteReply` and the
    /// call returns its id. Either way a request has exactly one outcome.
    pub fn send_request<Q: RemoteMessage, R: RemoteMessage>(
        &self,
        query: Q,
        timeout: Duration,
        reply_to: &Mbox,
    ) -> Result<RequestId, SendError<Q>> {
        let (query, corr, msg) = self.request_envelope::<Q, R>(query)?;
        let waiter = Waiter::Mbox {
            to: reply_to.clone(),
            corr,
            deliver: deliver_reply::<R>,
        };
        let deadline = Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365));
        if self
            .core
            .insert_pending(corr, waiter, Some(deadline))
            .is_err()
        {
            return Err(SendError::Closed(query));
        }
        match self.core.enqueue(msg) {
            Ok(()) => Ok(RequestId(corr)),
            Err(r) => {
                // Never sent: forget the waiter without calling it; the caller is told here —
                // unless the waiter was completed meanwhile (the gateway closed, or a deadline
                // shorter than this call passed): its `RemoteReply` is the one outcome.
                if self.core.pending.remove(corr).is_none() {
                    return Ok(RequestId(corr));
                }
                Err(match r {
                    Refused::Full(_) => SendError::BufferFull(query),
                    Refused::Closed => SendError::Closed(query),
                })
            }
        }
    }
}

/// Delivers the outcome of a `send_request` as the `RemoteReply<R>` its caller handles.
fn deliver_reply<R: RemoteMessage>(core: &Core, to: &Mbox, corr: u64, outcome: Outcome<'_>) {
    let result = outcome.and_then(|data| core.decode_reply::<R>(&data));
    to.send(RemoteReply::<R> {
        id: RequestId(corr),
        result,
    });
}

impl fmt::Debug for RemoteMbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteMbox")
            .field("name", &self.name)
            .field("subject", &self.subject.as_str())
            .field("compression", &self.compression)
            .finish()
    }
}
