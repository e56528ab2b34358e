//! Durable mboxes: at-least-once delivery through JetStream, NATS' own persistence. Opt-in,
//! per name; the plain mboxes of the rest of the crate do not change.
//!
//! A durable mbox `<name>` is a JetStream stream (one per name, file storage) capturing the
//! subject `<ns>.v1.d.<name>` (see [`crate::subject`]). A sender's message stays in the
//! stream until every durable consumer of it has had it handled; a receiving process reads
//! it through a durable pull consumer named by the application, so a restarted process
//! resumes where its predecessor stopped, and the processes sharing a consumer name share
//! its messages.
//!
//! # Ground rules
//!
//! **Sending** ([`DurableMbox::send`], [`DurableMbox::send_with_id`]):
//!
//! 1. The message is encoded on the caller's thread and given a **message id**, carried as
//!    `Nats-Msg-Id`: the gateway's id and a counter, or one the application chose. JetStream
//!    stores one message per id inside the stream's duplicate window
//!    ([`DurableOptions::duplicate_window`], default 2 minutes) and answers copies with a
//!    "duplicate" PubAck. To survive a restart of the *sending* process the id must be
//!    reproducible by the application (an order number, a row key): a restarted sender that
//!    sends again with the same ids, inside the window, stores nothing twice.
//! 2. `send` returns once the message is in the gateway's bounded publish queue (capacity
//!    [`outbound_capacity`](crate::GatewayBuilder::outbound_capacity)); a full queue or a
//!    closed gateway gives the message back. The queue, the PubAcks and their retries live on
//!    the gateway's tokio runtime, never on the caller's thread.
//! 3. One publisher task publishes in send order, only while connected. A PubAck error or
//!    timeout (5 s) makes it publish the same message, with the same id, again (first after
//!    any newer one in flight) until [`DurableOptions::store_timeout`] has passed since the
//!    send; then the message is counted (`durable_not_stored`) and reported as
//!    [`RemoteEvent::Lost`](crate::RemoteEvent::Lost) with
//!    [`LossReason::NotStored`](crate::LossReason::NotStored). Every accepted send ends
//!    exactly once: stored (`durable_stored`, a PubAck) or reported — at close too, after
//!    up to `close_timeout` for the PubAcks to come. "Not stored" is pessimistic: the
//!    server may have stored a message whose PubAck was lost.
//!
//! **Receiving** ([`Gateway::subscribe_durable`](crate::Gateway::subscribe_durable)):
//!
//! 1. A durable pull consumer (explicit acks, `ack_wait`, `max_ack_pending`) feeds one
//!    task per subscription. Each new message is decoded and handed to the agent as the
//!    *request* `Request<Durable<T>, ()>` through
//!    [`Mbox::request_future`](agentry::Mbox::request_future): the agent handles it with
//!    `on_request(|.., m: Durable<T>| { .. })` (or subscribes to the request itself to
//!    finish later by replying `()`).
//! 2. **The ack is the reply.** It arrives when the handler has returned, and only then is
//!    the message acknowledged (`+ACK`) to JetStream — so a process killed before that point
//!    gets it again from the server after `ack_wait` (or its successor does). Going through
//!    a request makes every way of *not* handling it visible: agentry refused it (agent
//!    gone, message limit), the agent had no handler in its state, the handler panicked,
//!    the environment shut down, the request was dropped unanswered. Each is counted
//!    (`durable_refused`) and negatively acknowledged (`-NAK` with
//!    [`DurableOptions::redeliver_delay`]), so JetStream delivers it again; with
//!    [`DurableOptions::max_deliver`] it gives up after that many deliveries.
//! 3. **Once per process.** A redelivery of a message this subscription is still handling,
//!    or has handled (its ack was lost, or came after `ack_wait`), is not delivered again
//!    (`durable_duplicates`); a handled one is acknowledged again. The subscription
//!    remembers the ids of the last [`DurableOptions::remember`] handled messages (see
//!    `durable/ledger.rs`), keyed by message id — so a copy that a sender stored again after
//!    the duplicate window is also dropped while it is remembered.
//! 4. A stream message that does not decode (no envelope, another type, a bad payload) is a
//!    typed [`DecodeError`](crate::DecodeError): counted in `rejected_*` and
//!    `durable_terminated`, reported as
//!    [`RemoteEvent::Rejected`](crate::RemoteEvent::Rejected), and **terminated** (`+TERM`):
//!    JetStream never delivers it again, so it cannot loop.
//!
//! **Not guaranteed:** exactly-once across a receiver crash (a message handled and not yet
//! acknowledged when the process died is handled again by the next incarnation — the
//! handler should be idempotent, keyed by [`Durable::id`]); order after a redelivery or a
//! sender's retry; deduplication of a sender restart after the duplicate window, or of ids
//! the receiving process no longer remembers; anything if the stream's limits or its
//! storage drop messages (the stream keeps everything by default, as long as the server's
//! store has room).

mod consumer;
mod ledger;
mod publisher;

use crate::compression::Compression;
use crate::core::Core;
use crate::error::{DurableError, FlushError, SendError};
use crate::registry::{EncodeFailure, RemoteMessage};
use async_nats::Client;
use async_nats::jetstream;
use bytes::Bytes;
use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Handle;

pub(crate) use consumer::subscribe;
pub(crate) use publisher::Publisher;

/// Longest accepted message id of [`DurableMbox::send_with_id`], in bytes.
pub const MAX_MESSAGE_ID_LEN: usize = 256;

/// How long a JetStream API call (creating a stream or consumer) may take.
const API_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings of a durable mbox's stream (applied by whoever creates it first), of its senders
/// and of a durable subscription.
///
/// ```
/// use agentry_remote::DurableOptions;
/// use std::time::Duration;
///
/// let mut options = DurableOptions::default();
/// options.ack_wait = Duration::from_secs(5);
/// options.max_ack_pending = 256;
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DurableOptions {
    /// Stream: inside this window JetStream stores one message per message id (default 2
    /// minutes). Set when the stream is created; an existing stream keeps its own.
    pub duplicate_window: Duration,
    /// Sender: how long an accepted message may go without a PubAck before it is given up and
    /// reported [`LossReason::NotStored`](crate::LossReason::NotStored) (default 30 s).
    pub store_timeout: Duration,
    /// Consumer: a delivered message not acknowledged within this is delivered again
    /// (default 30 s). Set when the consumer is created.
    pub ack_wait: Duration,
    /// Consumer: messages delivered and not yet acknowledged, at most (default 1,024) — the
    /// bound of what waits in the agent's queue.
    pub max_ack_pending: usize,
    /// Consumer: deliveries of one message, at most (default `None`: unlimited).
    pub max_deliver: Option<u32>,
    /// Receiver: how long JetStream waits before delivering again a message the agent did not
    /// handle (default 1 s).
    pub redeliver_delay: Duration,
    /// Receiver: ids of handled messages remembered to drop redeliveries (default 65,536).
    pub remember: usize,
}

impl Default for DurableOptions {
    fn default() -> Self {
        DurableOptions {
            duplicate_window: Duration::from_secs(120),
            store_timeout: Duration::from_secs(30),
            ack_wait: Duration::from_secs(30),
            max_ack_pending: 1024,
            max_deliver: None,
            redeliver_delay: Duration::from_secs(1),
            remember: 65_536,
        }
    }
}

/// A message from a durable mbox, as its agent receives it (the query of a
/// `Request<Durable<T>, ()>`; see [`Gateway::subscribe_durable`](crate::Gateway::subscribe_durable)).
/// Derefs to the message.
pub struct Durable<T> {
    message: T,
    id: Arc<str>,
    sequence: u64,
    delivered: u64,
}

impl<T> Durable<T> {
    /// The message id: the one given to [`DurableMbox::send_with_id`], a gateway-made one,
    /// or `#<stream sequence>` for a message published without `Nats-Msg-Id`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The message's sequence number in its stream.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// Which delivery this is (1: the first; more: JetStream delivered it again — to this
    /// process after a refusal, or to another one after a crash).
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// The message.
    pub fn into_inner(self) -> T {
        self.message
    }
}

impl<T> Deref for Durable<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.message
    }
}

impl<T> fmt::Debug for Durable<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Durable")
            .field("type", &std::any::type_name::<T>())
            .field("id", &self.id)
            .field("sequence", &self.sequence)
            .field("delivered", &self.delivered)
            .finish()
    }
}

/// The JetStream side of one NATS gateway: its context, its publisher, and what runs them.
pub(crate) struct Durables {
    pub(crate) core: Arc<Core>,
    pub(crate) client: Client,
    pub(crate) handle: Handle,
    pub(crate) js: jetstream::Context,
    pub(crate) publisher: Publisher,
}

impl Durables {
    /// Starts the publisher task on the gateway's runtime.
    pub(crate) fn start(core: Arc<Core>, client: Client, handle: Handle) -> Arc<Durables> {
        // The context spawns its PubAck task on the current runtime.
        let _runtime = handle.enter();
        let js = jetstream::context::ContextBuilder::new()
            .timeout(publisher::PUBACK_TIMEOUT)
            .max_ack_inflight(4096)
            .backpressure_on_inflight(true)
            .build(client.clone());
        let (publisher, queue) = Publisher::new(core.capacity());
        let d = Arc::new(Durables {
            core,
            client,
            handle,
            js,
            publisher,
        });
        let run = Arc::clone(&d);
        d.handle
            .spawn(async move { publisher::run(run, queue).await });
        d
    }

    /// Runs `f` on the gateway's runtime and waits for it from this thread (any thread:
    /// it never calls `block_on`), at most `API_TIMEOUT`.
    pub(crate) fn wait_for<F>(&self, f: F) -> Result<F::Output, DurableError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(f.await);
        });
        rx.recv_timeout(API_TIMEOUT + Duration::from_secs(1))
            .map_err(|_| {
                if self.core.is_closed() {
                    DurableError::Closed
                } else {
                    DurableError::JetStream("no answer from the server".into())
                }
            })
    }

    /// Creates the stream of durable mbox `name` unless it exists; returns its subject and
    /// stream name.
    pub(crate) fn ensure_stream(
        &self,
        name: &str,
        options: &DurableOptions,
    ) -> Result<(String, String), DurableError> {
        if self.core.is_closed() {
            return Err(DurableError::Closed);
        }
        let subject = self.core.scheme.durable_subject(name)?;
        let stream = self.core.scheme.durable_stream(name)?;
        let config = jetstream::stream::Config {
            name: stream.clone(),
            subjects: vec![subject.clone()],
            duplicate_window: options.duplicate_window,
            storage: jetstream::stream::StorageType::File,
            ..Default::default()
        };
        let js = self.js.clone();
        self.wait_for(async move { js.get_or_create_stream(config).await.map(|_| ()) })?
            .map_err(|e| DurableError::JetStream(e.to_string()))?;
        Ok((subject, stream))
    }

    /// Waits up to `timeout` for the PubAcks of what was sent, then refuses new sends and
    /// reports what has none.
    pub(crate) fn close(&self, timeout: Duration) {
        self.publisher.close(&self.core, timeout);
    }
}

/// A durable mbox: messages sent to it are stored by JetStream until every durable consumer
/// has had them handled (the ground rules are in the `durable` module's docs, in the source).
/// A cheap-to-clone handle, usable from any thread and from agents.
///
/// Obtained from [`Gateway::durable_mbox`](crate::Gateway::durable_mbox).
///
/// ```no_run
/// use agentry::Env;
/// use agentry_remote::{DurableOptions, Gateway, Registry};
/// use serde::{Deserialize, Serialize};
/// use std::time::Duration;
///
/// #[derive(Serialize, Deserialize)]
/// struct Charge { order: u64, cents: u64 }
///
/// let registry = Registry::new();
/// registry.register::<Charge>("billing.Charge", 1).expect("registered");
/// let env = Env::new().expect("env");
/// let gw = Gateway::builder(&registry)
///     .connect_nats(env.handle(), "nats://127.0.0.1:4222")
///     .expect("connected");
/// let charges = gw.durable_mbox("charges", &DurableOptions::default()).expect("stream");
/// // The order number makes the id reproducible: sent again after a restart of this
/// // process, inside the duplicate window, it is stored once.
/// charges
///     .send_with_id("order-17", Charge { order: 17, cents: 990 })
///     .expect("accepted");
/// charges.flush(Duration::from_secs(5)).expect("stored");
/// ```
#[derive(Clone)]
pub struct DurableMbox {
    durables: Arc<Durables>,
    name: Arc<str>,
    subject: async_nats::Subject,
    stream: Arc<str>,
    store_timeout: Duration,
    compression: Option<Compression>,
}

impl DurableMbox {
    pub(crate) fn new(
        durables: Arc<Durables>,
        name: &str,
        options: &DurableOptions,
    ) -> Result<DurableMbox, DurableError> {
        let (subject, stream) = durables.ensure_stream(name, options)?;
        Ok(DurableMbox {
            durables,
            name: name.into(),
            subject: subject.into(),
            stream: stream.into(),
            store_timeout: options.store_timeout,
            compression: None,
        })
    }

    /// The mbox's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The subject messages travel on (`<ns>.v1.d.<name>`).
    pub fn subject(&self) -> &str {
        self.subject.as_str()
    }

    /// The JetStream stream that stores them.
    pub fn stream(&self) -> &str {
        &self.stream
    }

    /// A handle to the same mbox whose sends use `compression` instead of their types'
    /// setting.
    pub fn with_compression(&self, compression: Compression) -> DurableMbox {
        DurableMbox {
            compression: Some(compression),
            ..self.clone()
        }
    }

    /// Sends `message` with a message id made by the gateway (unique per gateway
    /// incarnation: a sender restart cannot reproduce it — see
    /// [`send_with_id`](Self::send_with_id)). Returns once it is queued for JetStream;
    /// fails, giving it back, like [`RemoteMbox::send`](crate::RemoteMbox::send).
    pub fn send<T: RemoteMessage>(&self, message: T) -> Result<(), SendError<T>> {
        let id = self
            .durables
            .publisher
            .next_id(&self.durables.core.gateway_id);
        self.send_with_id(&id, message)
    }

    /// Sends `message` with the message id `id` (1 to [`MAX_MESSAGE_ID_LEN`] bytes of
    /// printable ASCII, no spaces). JetStream stores one message per id inside the stream's
    /// duplicate window, so a sender that restarts and sends again with the same ids
    /// stores nothing twice. Fails, giving the message back, if the id is invalid
    /// ([`SendError::InvalidId`]) or as [`send`](Self::send).
    pub fn send_with_id<T: RemoteMessage>(&self, id: &str, message: T) -> Result<(), SendError<T>> {
        if !valid_id(id) {
            return Err(SendError::InvalidId(message));
        }
        let core = &self.durables.core;
        let mut encoded = match core.registry.encode(&message, self.compression, None) {
            Ok(e) => e,
            Err(EncodeFailure::NotRegistered) => return Err(SendError::NotRegistered(message)),
            Err(EncodeFailure::Encode(reason)) => {
                return Err(SendError::Encode { message, reason });
            }
        };
        encoded.envelope.trace = core.trace_context();
        let max = core.max_payload();
        if encoded.payload.len() > max {
            return Err(SendError::Oversized {
                message,
                size: encoded.payload.len(),
                max,
            });
        }
        let job = publisher::Job::new(
            self.subject.clone(),
            id.into(),
            encoded.envelope,
            Bytes::from(encoded.payload),
            self.store_timeout,
        );
        match self.durables.publisher.submit(core, job) {
            Ok(()) => Ok(()),
            Err(publisher::Refused::Full) => Err(SendError::BufferFull(message)),
            Err(publisher::Refused::Closed) => Err(SendError::Closed(message)),
        }
    }

    /// Waits until every durable send of this gateway accepted so far is stored (PubAck) or
    /// reported lost, at most `timeout`.
    pub fn flush(&self, timeout: Duration) -> Result<(), FlushError> {
        self.durables.publisher.flush(&self.durables.core, timeout)
    }

    /// Durable sends of this gateway awaiting their PubAck.
    pub fn pending(&self) -> usize {
        self.durables.publisher.pending()
    }
}

impl fmt::Debug for DurableMbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurableMbox")
            .field("name", &self.name)
            .field("subject", &self.subject.as_str())
            .field("stream", &self.stream)
            .finish()
    }
}

fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_MESSAGE_ID_LEN && id.bytes().all(|b| b.is_ascii_graphic())
}

/// A durable subscription ([`Gateway::subscribe_durable`](crate::Gateway::subscribe_durable)):
/// it pulls until [`unsubscribe`](Self::unsubscribe) or until the gateway closes. Dropping
/// the handle keeps it. The durable consumer stays on the server either way: what it did
/// not acknowledge is delivered again to the processes that use its name.
pub struct DurableSubscription {
    task: tokio::task::JoinHandle<()>,
    stream: String,
    consumer: String,
}

impl DurableSubscription {
    /// The stream read.
    pub fn stream(&self) -> &str {
        &self.stream
    }

    /// The durable consumer's name.
    pub fn consumer(&self) -> &str {
        &self.consumer
    }

    /// Stops pulling. Messages delivered and not yet handled are not acknowledged, so
    /// JetStream delivers them again after `ack_wait`.
    pub fn unsubscribe(self) {
        self.task.abort();
    }
}

impl fmt::Debug for DurableSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurableSubscription")
            .field("stream", &self.stream)
            .field("consumer", &self.consumer)
            .finish()
    }
}
