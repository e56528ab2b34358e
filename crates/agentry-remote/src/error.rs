//! Every error the public API returns. Errors of a failed send give the message back.

use std::fmt;
use thiserror::Error;

/// A name (of a global mbox, a message type or a namespace) that is not valid.
///
/// Names are NATS subject tokens joined by `.`: each token is one or more of
/// `A-Z a-z 0-9 _ -`; a namespace is a single token. See [`crate::subject`].
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameError {
    /// The name is empty.
    #[error("a name must not be empty")]
    Empty,
    /// The name is longer than allowed.
    #[error("name `{name}` is {len} bytes long; at most {max} are allowed")]
    TooLong {
        /// The name (truncated to 64 characters).
        name: String,
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A token is empty (a leading, trailing or doubled `.`).
    #[error("name `{name}` has an empty token (leading, trailing or doubled `.`)")]
    EmptyToken {
        /// The name.
        name: String,
    },
    /// A character outside `A-Z a-z 0-9 _ -` (and `.` between tokens, where allowed).
    #[error(
        "name `{name}` contains {ch:?} at byte {at}; allowed: A-Z a-z 0-9 _ - (and `.` between tokens)"
    )]
    InvalidChar {
        /// The name.
        name: String,
        /// The offending character.
        ch: char,
        /// Its byte offset.
        at: usize,
    },
}

/// A mistake in registering a message type or a compression dictionary.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// The wire name is not a valid name.
    #[error("invalid type name: {0}")]
    InvalidName(#[from] NameError),
    /// Versions start at 1.
    #[error("type `{0}`: versions start at 1")]
    ZeroVersion(String),
    /// The (name, version) pair is already registered for another Rust type.
    #[error("`{name}` v{version} is already registered for {by}")]
    NameTaken {
        /// The wire name.
        name: String,
        /// The version.
        version: u32,
        /// The Rust type that holds it.
        by: &'static str,
    },
    /// The Rust type is already registered under another (name, version).
    #[error("{rust_type} is already registered as `{name}` v{version}")]
    AlreadyRegistered {
        /// The Rust type.
        rust_type: &'static str,
        /// Its wire name.
        name: String,
        /// Its version.
        version: u32,
    },
    /// The Rust type was never registered.
    #[error("{0} is not registered as a remote message type")]
    NotRegistered(&'static str),
    /// A dictionary with this id already exists (with other content).
    #[error("dictionary {0} is already registered")]
    DictionaryTaken(u32),
    /// A compression setting names a dictionary that is not registered.
    #[error("dictionary {0} is not registered")]
    UnknownDictionary(u32),
    /// zstd refused the dictionary or the compression level.
    #[error("compression setting rejected: {0}")]
    Compression(String),
}

/// Why an inbound message (or a reply) was rejected. The message is dropped, counted in
/// [`RemoteStats`](crate::RemoteStats), logged, and reported as
/// [`RemoteEvent::Rejected`](crate::RemoteEvent::Rejected); the link keeps working.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The type name is not registered here.
    #[error("unknown message type `{name}` v{version}")]
    UnknownType {
        /// The wire name (truncated to 64 characters).
        name: String,
        /// The version it came with.
        version: u32,
    },
    /// The type name is registered, but not with this version.
    #[error("message type `{name}` came as v{got}; registered here: {known:?}")]
    WrongVersion {
        /// The wire name.
        name: String,
        /// The version it came with.
        got: u32,
        /// The versions registered here.
        known: Vec<u32>,
    },
    /// A reply (or a decode into a chosen Rust type) carried another registered type.
    #[error("expected `{expected}`, got `{got}`")]
    UnexpectedType {
        /// The wire name expected.
        expected: String,
        /// The wire name (and version) received.
        got: String,
    },
    /// An envelope field is missing.
    #[error("envelope field `{0}` is missing")]
    MissingField(&'static str),
    /// The envelope or frame is malformed.
    #[error("malformed {what}: {detail}")]
    Malformed {
        /// Which part (`frame`, `type name`, `version`, …).
        what: &'static str,
        /// What is wrong (truncated).
        detail: String,
    },
    /// The payload (or the frame) is larger than allowed, before or after decompression.
    #[error("payload of {size} bytes exceeds the limit of {max}")]
    Oversized {
        /// The size (or a lower bound of it).
        size: usize,
        /// The limit.
        max: usize,
    },
    /// The payload names a dictionary that is not registered here.
    #[error("unknown compression dictionary {0}")]
    UnknownDictionary(u32),
    /// The compressed payload could not be decompressed.
    #[error("decompression failed: {0}")]
    Decompress(String),
    /// The payload does not decode as the registered Rust type.
    #[error("payload does not decode as {rust_type}: {detail}")]
    Payload {
        /// The Rust type.
        rust_type: &'static str,
        /// The codec's complaint.
        detail: String,
    },
}

/// The class of a [`DecodeError`], as counted in [`RemoteStats`](crate::RemoteStats) and
/// carried back to a requester in [`RemoteFailure::Rejected`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RejectKind {
    /// [`DecodeError::UnknownType`].
    UnknownType,
    /// [`DecodeError::WrongVersion`].
    WrongVersion,
    /// Everything else that does not decode.
    Malformed,
    /// [`DecodeError::Oversized`].
    Oversized,
}

impl DecodeError {
    /// The class of this error.
    pub fn kind(&self) -> RejectKind {
        match self {
            DecodeError::UnknownType { .. } | DecodeError::UnexpectedType { .. } => {
                RejectKind::UnknownType
            }
            DecodeError::WrongVersion { .. } => RejectKind::WrongVersion,
            DecodeError::Oversized { .. } => RejectKind::Oversized,
            DecodeError::MissingField(_)
            | DecodeError::Malformed { .. }
            | DecodeError::UnknownDictionary(_)
            | DecodeError::Decompress(_)
            | DecodeError::Payload { .. } => RejectKind::Malformed,
        }
    }

    pub(crate) fn malformed(what: &'static str, detail: impl fmt::Display) -> Self {
        DecodeError::Malformed {
            what,
            detail: truncate(&detail.to_string(), 120),
        }
    }
}

/// Cuts a peer-supplied string for an error message (peers choose its length).
pub(crate) fn truncate(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

/// What the serving side of a request reports back instead of a reply. It travels as the
/// envelope's failure byte (see [`crate::envelope`]).
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RemoteFailure {
    /// The serving gateway has no route for this request type on this name.
    #[error("no route for the request type at the server")]
    NoRoute,
    /// The serving agent has no handler for the request in its current state.
    #[error("the serving agent has no handler for the request")]
    NoHandler,
    /// The serving agent is not running.
    #[error("the serving agent is not running")]
    AgentGone,
    /// The serving agent's message limit (or the bridge's queue) rejected the request.
    #[error("the serving side is overloaded")]
    Overloaded,
    /// The serving agent's handler panicked.
    #[error("the serving agent's handler panicked")]
    HandlerPanicked,
    /// The serving agent dropped the request without replying.
    #[error("the serving agent dropped the request without replying")]
    NoReply,
    /// The bridge to `Mbox::request` timed out on the serving side.
    #[error("the serving agent did not reply in time")]
    Timeout,
    /// The serving side is shutting down.
    #[error("the serving side is shutting down")]
    Shutdown,
    /// The serving gateway rejected the request's envelope or payload.
    #[error("the server rejected the request: {0:?}")]
    Rejected(RejectKind),
    /// The reply could not be encoded or sent by the serving side.
    #[error("the server could not encode its reply")]
    ReplyEncode,
}

impl RemoteFailure {
    /// All failures, in the order of their wire bytes (1, 2, …; see `crate::envelope`).
    pub(crate) const ALL: [RemoteFailure; 13] = [
        RemoteFailure::NoRoute,
        RemoteFailure::NoHandler,
        RemoteFailure::AgentGone,
        RemoteFailure::Overloaded,
        RemoteFailure::HandlerPanicked,
        RemoteFailure::NoReply,
        RemoteFailure::Timeout,
        RemoteFailure::Shutdown,
        RemoteFailure::Rejected(RejectKind::UnknownType),
        RemoteFailure::Rejected(RejectKind::WrongVersion),
        RemoteFailure::Rejected(RejectKind::Malformed),
        RemoteFailure::Rejected(RejectKind::Oversized),
        RemoteFailure::ReplyEncode,
    ];

    /// The byte that stands for this failure in an envelope.
    pub(crate) fn byte(self) -> u8 {
        let i = RemoteFailure::ALL
            .iter()
            .position(|f| *f == self)
            .expect("invariant: ALL lists every failure");
        i as u8 + 1
    }

    pub(crate) fn from_byte(b: u8) -> Option<RemoteFailure> {
        RemoteFailure::ALL
            .get(usize::from(b).checked_sub(1)?)
            .copied()
    }
}

impl From<agentry::RequestError> for RemoteFailure {
    fn from(e: agentry::RequestError) -> Self {
        use agentry::RequestError as E;
        match e {
            E::Timeout => RemoteFailure::Timeout,
            E::NoHandler => RemoteFailure::NoHandler,
            E::AgentGone => RemoteFailure::AgentGone,
            E::Overloaded => RemoteFailure::Overloaded,
            E::HandlerPanicked => RemoteFailure::HandlerPanicked,
            E::NoReply => RemoteFailure::NoReply,
            E::Shutdown => RemoteFailure::Shutdown,
            // SelfRequest / SameThread cannot happen on a bridge thread; report them as the
            // agent not answering.
            _ => RemoteFailure::NoReply,
        }
    }
}

/// A send that was not carried out; the message is given back.
#[derive(Error)]
#[non_exhaustive]
pub enum SendError<M> {
    /// The message's Rust type is not registered in the gateway's [`Registry`](crate::Registry).
    #[error("the message type is not registered")]
    NotRegistered(M),
    /// The message could not be serialized.
    #[error("the message could not be encoded: {reason}")]
    Encode {
        /// The message.
        message: M,
        /// The codec's complaint.
        reason: String,
    },
    /// The encoded message is larger than the transport allows.
    #[error("the encoded message has {size} bytes; the limit is {max}")]
    Oversized {
        /// The message.
        message: M,
        /// Encoded size (after compression).
        size: usize,
        /// The limit.
        max: usize,
    },
    /// The outbound buffer is full and the overflow policy is
    /// [`Overflow::RejectNew`](crate::Overflow::RejectNew).
    #[error("the outbound buffer is full")]
    BufferFull(M),
    /// The gateway is closed.
    #[error("the gateway is closed")]
    Closed(M),
    /// The message id given to [`DurableMbox::send_with_id`](crate::DurableMbox::send_with_id)
    /// is empty, longer than [`MAX_MESSAGE_ID_LEN`](crate::MAX_MESSAGE_ID_LEN) or holds a
    /// character outside printable ASCII (or a space).
    #[error("invalid message id")]
    InvalidId(M),
}

impl<M> SendError<M> {
    /// The message that was not sent.
    pub fn into_inner(self) -> M {
        match self {
            SendError::NotRegistered(m)
            | SendError::InvalidId(m)
            | SendError::BufferFull(m)
            | SendError::Closed(m)
            | SendError::Encode { message: m, .. }
            | SendError::Oversized { message: m, .. } => m,
        }
    }
}

impl<M> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::NotRegistered(_) => f.write_str("NotRegistered(..)"),
            SendError::Encode { reason, .. } => write!(f, "Encode({reason:?})"),
            SendError::Oversized { size, max, .. } => write!(f, "Oversized({size} > {max})"),
            SendError::BufferFull(_) => f.write_str("BufferFull(..)"),
            SendError::Closed(_) => f.write_str("Closed(..)"),
            SendError::InvalidId(_) => f.write_str("InvalidId(..)"),
        }
    }
}

/// Why a remote request got no reply.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestError {
    /// No reply within the timeout (the request may still be handled; a late reply is
    /// counted in `RemoteStats::late_replies`).
    #[error("no reply within the timeout")]
    Timeout,
    /// Nobody serves this name: NATS answered "no responders" at once.
    #[error("no responders for this name")]
    NoResponders,
    /// The connection dropped after the request was sent; it may or may not have been
    /// handled.
    #[error("the connection dropped while the request was in flight")]
    Disconnected,
    /// The outbound buffer was full (policy `RejectNew`), or the request was evicted from
    /// it (policy `DropOldest`) before it could be sent.
    #[error("the outbound buffer is full")]
    BufferFull,
    /// The gateway is closed (or closed while the request was pending).
    #[error("the gateway is closed")]
    Closed,
    /// The query or reply type is not registered.
    #[error("{0} is not registered as a remote message type")]
    NotRegistered(&'static str),
    /// The query could not be encoded.
    #[error("the query could not be encoded: {0}")]
    Encode(String),
    /// The encoded query is larger than the transport allows.
    #[error("the encoded query has {size} bytes; the limit is {max}")]
    Oversized {
        /// Encoded size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// The serving side answered with a failure.
    #[error("the server failed the request: {0}")]
    Remote(RemoteFailure),
    /// The reply arrived but was rejected (wrong type or version, malformed, oversized).
    #[error("the reply was rejected: {0}")]
    BadReply(DecodeError),
}

impl<M> From<SendError<M>> for RequestError {
    fn from(e: SendError<M>) -> Self {
        match e {
            SendError::NotRegistered(_) => RequestError::NotRegistered("query"),
            SendError::Encode { reason, .. } => RequestError::Encode(reason),
            SendError::Oversized { size, max, .. } => RequestError::Oversized { size, max },
            SendError::BufferFull(_) => RequestError::BufferFull,
            SendError::Closed(_) => RequestError::Closed,
            SendError::InvalidId(_) => RequestError::Encode("invalid message id".into()),
        }
    }
}

/// A subscription (or serve) that could not be made.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SubscribeError {
    /// The name is not valid.
    #[error("invalid name: {0}")]
    InvalidName(#[from] NameError),
    /// A message type involved is not registered.
    #[error("{0} is not registered as a remote message type")]
    NotRegistered(&'static str),
    /// The gateway is closed.
    #[error("the gateway is closed")]
    Closed,
    /// The NATS client refused the subscription.
    #[error("NATS refused the subscription: {0}")]
    Nats(String),
    /// A bridge thread could not be started.
    #[error("could not start a bridge thread: {0}")]
    Spawn(String),
}

/// A durable mbox ([`Gateway::durable_mbox`](crate::Gateway::durable_mbox)) or durable
/// subscription ([`Gateway::subscribe_durable`](crate::Gateway::subscribe_durable)) that
/// could not be made.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DurableError {
    /// The mbox or consumer name is not valid (or the stream name it gives is too long).
    #[error("invalid name: {0}")]
    InvalidName(#[from] NameError),
    /// The message type is not registered.
    #[error("{0} is not registered as a remote message type")]
    NotRegistered(&'static str),
    /// Durable mboxes need JetStream: the direct link has none.
    #[error("durable mboxes need a NATS gateway with JetStream; the direct link has none")]
    Unsupported,
    /// The gateway is closed.
    #[error("the gateway is closed")]
    Closed,
    /// JetStream refused or did not answer (the server runs without `-js`, the stream or
    /// consumer exists with a conflicting configuration, a timeout).
    #[error("JetStream: {0}")]
    JetStream(String),
}

/// A gateway that could not be started.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StartError {
    /// The namespace is not a valid single token.
    #[error("invalid namespace: {0}")]
    Namespace(NameError),
    /// The gateway's tokio runtime or a thread could not be started.
    #[error("could not start the gateway's runtime or threads: {0}")]
    Runtime(#[source] std::io::Error),
    /// The first connection to NATS failed (and `retry_initial_connect` is off).
    #[error("could not connect to NATS: {0}")]
    Connect(String),
    /// The link's listening socket could not be bound, or the first connection failed.
    #[error("link socket error: {0}")]
    Io(#[source] std::io::Error),
    /// The gateway agent could not be registered in the environment.
    #[error("could not register the gateway agent: {0}")]
    Register(#[from] agentry::RegisterError),
}

/// A [`Gateway::flush`](crate::Gateway::flush) that did not complete.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlushError {
    /// Not everything left within the timeout.
    #[error("the outbound buffer did not drain within the timeout")]
    Timeout,
    /// The transport is disconnected (what is buffered waits for the connection).
    #[error("the transport is disconnected")]
    Disconnected,
    /// The gateway is closed.
    #[error("the gateway is closed")]
    Closed,
}
