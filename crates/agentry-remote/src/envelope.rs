//! The envelope: what travels beside a payload so that routers, rejections and replies never
//! need to decode the body. One binary form, written and read here, for every transport.
//!
//! # Wire format (version 2)
//!
//! ```text
//! envelope  = flags:u8
//!             [name_len:u8 name version:u32                   flags bit 0: type tag
//!              codec:u8 [dictionary:u32]]                      0 postcard, 1 +zstd, 2 +zstd+dict
//!             [corr:u64]                                      flags bit 1: correlation id
//!             [failure:u8]                                    flags bit 2: a failed reply
//!             [from_len:u8 from seq:u64 low:u64]              flags bit 3: delivery receipt
//!             [trace_id:16 span_id:8 trace_flags:u8]          flags bit 4: trace context
//! NATS message payload = version:u8 (= 2) envelope body       (no NATS headers needed)
//! link Message frame   = … subject [reply] envelope body      (see `link/frame.rs`)
//! ```
//!
//! Failure bytes: 1 no route, 2 no handler, 3 agent gone, 4 overloaded, 5 handler panicked,
//! 6 no reply, 7 timeout, 8 shutdown, 9–12 rejected (unknown type, wrong version, malformed,
//! oversized), 13 reply not encodable.
//!
//! Integers are big endian. A message or request carries a type tag (the stable name the type
//! was registered under, its version, the codec that turns the body back into postcard
//! bytes); a failed reply carries a failure and nothing else; the correlation id matches a
//! reply to its request; the receipt (plain messages over NATS with receipts on) asks the
//! receiving gateway to confirm message `seq` of the sending gateway `from`, and says every
//! message of that sender below `low` is confirmed already (see `core/receipts.rs`).
//!
//! The trace context (bit 4) is the W3C `traceparent` of the span that sent the message, in
//! binary: the 16-byte trace id, the 8-byte parent span id and the trace flags byte (bit 0
//! sampled) — the fields of `00-<trace_id>-<span_id>-<flags>`; neither id may be all zeros.
//! A gateway writes it only when its environment has a trace-context hook
//! (`EnvBuilder::trace_context`) and the send happens inside a span; the receiving gateway
//! hands it on to the local delivery, so the receiving handler's span is a child of the
//! sender's. A foreign client may leave the bit clear (nothing changes), or set it to join
//! its own trace.
//!
//! A receiver confirms the receipts of a sender `from` by publishing, to
//! `<namespace>.v1.r.<from>.a`, a payload of ranges `(first:u64 count:u32)*` and nothing else
//! (no version byte, no envelope); a foreign receiver that does not confirm makes the sender
//! resend and finally report the messages unconfirmed — turn receipts off for such peers.
//!
//! Every field is validated as strictly as it is written: unknown flags, codecs and failures,
//! names that are not names, a tag beside a failure, a missing tag, truncation and an unknown
//! wire version are [`DecodeError`]s, never panics. A foreign client speaks Agentry by writing
//! these bytes; [`Envelope::to_nats_payload`] and [`Envelope::from_nats_payload`] are the
//! reference.
//!
//! Version 1 carried the envelope as five NATS headers (`Agentry-Type`, …). Building and
//! parsing a header map cost more than the rest of the envelope's path together (a dozen
//! allocations per message on each side); version 2 costs one buffer. A version-1 message
//! reaching a version-2 gateway is rejected as malformed (`wire version`) and counted.

use crate::compression::Codec;
use crate::error::{DecodeError, RemoteFailure};
use crate::subject::validate_name;
use crate::wire::Reader;
use agentry::trace::{TRACE_CONTEXT_LEN, TraceContext};
use bytes::Bytes;
use std::sync::Arc;

/// The first byte of every NATS message an Agentry gateway publishes: the wire format's
/// version.
pub const WIRE_VERSION: u8 = 2;

const F_TAG: u8 = 1;
const F_CORR: u8 = 2;
const F_FAILURE: u8 = 4;
const F_RECEIPT: u8 = 8;
const F_TRACE: u8 = 16;

/// A message type's wire identity: its registered name and version.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TypeTag {
    /// The registered name.
    pub name: Arc<str>,
    /// The registered version.
    pub version: u32,
}

/// The envelope of one remote message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The payload's type (absent only on failed replies).
    pub tag: Option<TypeTag>,
    /// The payload's codec.
    pub codec: Codec,
    /// Correlation id (requests and replies).
    pub corr: Option<u64>,
    /// Why the request failed (failed replies only).
    pub failure: Option<RemoteFailure>,
    /// The sender asks for a delivery receipt (plain messages with receipts on).
    pub receipt: Option<Receipt>,
    /// The trace context of the span that sent the message (with a trace-context hook only).
    pub trace: Option<TraceContext>,
}

/// A plain message's request for a delivery receipt: who sent it and its place in the
/// sender's sequence (see [`Envelope`]'s table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// The sending gateway's id; receipts go to its reply subjects.
    pub from: Arc<str>,
    /// The message's number in the sender's sequence (unique per sending gateway).
    pub seq: u64,
    /// Every message of this sender numbered below `low` is confirmed already: the receiver
    /// may forget them.
    pub low: u64,
}

impl Envelope {
    /// The envelope of a message or request payload.
    pub fn message(tag: TypeTag, codec: Codec, corr: Option<u64>) -> Envelope {
        Envelope {
            tag: Some(tag),
            codec,
            corr,
            failure: None,
            receipt: None,
            trace: None,
        }
    }

    /// The empty envelope of a transport's own message (receipt confirmations): no headers.
    pub(crate) fn bare() -> Envelope {
        Envelope {
            tag: None,
            codec: Codec::Postcard,
            corr: None,
            failure: None,
            receipt: None,
            trace: None,
        }
    }

    /// The envelope of a failed reply (the requester matches it by its reply subject; the
    /// correlation id is informative).
    pub fn failure(corr: Option<u64>, failure: RemoteFailure) -> Envelope {
        Envelope {
            tag: None,
            codec: Codec::Postcard,
            corr,
            failure: Some(failure),
            receipt: None,
            trace: None,
        }
    }

    /// Appends the envelope's binary form (see the module's wire format).
    pub fn encode(&self, buf: &mut Vec<u8>) {
        let mut flags = 0;
        for (present, bit) in [
            (self.tag.is_some(), F_TAG),
            (self.corr.is_some(), F_CORR),
            (self.failure.is_some(), F_FAILURE),
            (self.receipt.is_some(), F_RECEIPT),
            (self.trace.is_some(), F_TRACE),
        ] {
            if present {
                flags |= bit;
            }
        }
        buf.push(flags);
        if let Some(tag) = &self.tag {
            put_name(buf, &tag.name);
            buf.extend_from_slice(&tag.version.to_be_bytes());
            match self.codec {
                Codec::Postcard => buf.push(0),
                Codec::PostcardZstd => buf.push(1),
                Codec::PostcardZstdDict(id) => {
                    buf.push(2);
                    buf.extend_from_slice(&id.to_be_bytes());
                }
            }
        }
        if let Some(corr) = self.corr {
            buf.extend_from_slice(&corr.to_be_bytes());
        }
        if let Some(f) = self.failure {
            buf.push(f.byte());
        }
        if let Some(r) = &self.receipt {
            put_name(buf, &r.from);
            buf.extend_from_slice(&r.seq.to_be_bytes());
            buf.extend_from_slice(&r.low.to_be_bytes());
        }
        if let Some(trace) = &self.trace {
            buf.extend_from_slice(&trace.to_bytes());
        }
    }

    /// Reads an envelope off the front of `bytes`; returns it and the bytes after it (the
    /// body).
    pub fn decode(bytes: &[u8]) -> Result<(Envelope, &[u8]), DecodeError> {
        let mut r = Reader::new(bytes);
        let envelope = Envelope::read(&mut r)?;
        Ok((envelope, r.rest()))
    }

    /// The payload of a NATS message: [`WIRE_VERSION`], the envelope, then `body`.
    pub fn to_nats_payload(&self, body: &[u8]) -> Bytes {
        let mut buf = Vec::with_capacity(ENVELOPE_ROOM + body.len());
        buf.push(WIRE_VERSION);
        self.encode(&mut buf);
        buf.extend_from_slice(body);
        Bytes::from(buf)
    }

    /// Splits a NATS message's payload into its envelope and its body (a slice of `payload`,
    /// not a copy).
    pub fn from_nats_payload(payload: &Bytes) -> Result<(Envelope, Bytes), DecodeError> {
        match payload.first() {
            Some(&WIRE_VERSION) => {}
            Some(v) => {
                return Err(DecodeError::malformed(
                    "wire version",
                    format!("{v} (this gateway speaks {WIRE_VERSION})"),
                ));
            }
            None => return Err(DecodeError::malformed("wire version", "an empty payload")),
        }
        let (envelope, body) = Envelope::decode(&payload[1..])?;
        let body = payload.slice(payload.len() - body.len()..);
        Ok((envelope, body))
    }

    /// Reads an envelope (the link's frames read it in place).
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Envelope, DecodeError> {
        let flags = r.u8("envelope flags")?;
        if flags & !(F_TAG | F_CORR | F_FAILURE | F_RECEIPT | F_TRACE) != 0 {
            return Err(DecodeError::malformed(
                "envelope",
                format!("flags {flags:#x}"),
            ));
        }
        let tag_and_codec = if flags & F_TAG != 0 {
            let name = r.str_u8("type name")?;
            let tag = parse_tag(name, r.u32("version")?)?;
            let codec = match r.u8("codec")? {
                0 => Codec::Postcard,
                1 => Codec::PostcardZstd,
                2 => Codec::PostcardZstdDict(r.u32("dictionary id")?),
                c => return Err(DecodeError::malformed("codec", format!("code {c}"))),
            };
            Some((tag, codec))
        } else {
            None
        };
        let corr = if flags & F_CORR != 0 {
            Some(r.u64("correlation id")?)
        } else {
            None
        };
        let failure = if flags & F_FAILURE != 0 {
            let b = r.u8("failure")?;
            Some(
                RemoteFailure::from_byte(b)
                    .ok_or_else(|| DecodeError::malformed("failure", format!("code {b}")))?,
            )
        } else {
            None
        };
        let receipt = if flags & F_RECEIPT != 0 {
            Some(read_receipt(r)?)
        } else {
            None
        };
        let trace = if flags & F_TRACE != 0 {
            Some(read_trace(r)?)
        } else {
            None
        };
        let mut envelope = match (failure, tag_and_codec) {
            (Some(f), None) => Envelope::failure(corr, f),
            (None, Some((tag, codec))) => Envelope::message(tag, codec, corr),
            (Some(_), Some(_)) => {
                return Err(DecodeError::malformed("envelope", "a failure with a type"));
            }
            (None, None) => return Err(DecodeError::MissingField("type")),
        };
        envelope.receipt = receipt;
        envelope.trace = trace;
        Ok(envelope)
    }
}

/// Room reserved ahead of a body for the version byte and a typical envelope.
const ENVELOPE_ROOM: usize = 64;

fn put_name(buf: &mut Vec<u8>, name: &str) {
    // invariant: type names and gateway ids are validated names of at most MAX_NAME_LEN
    // (128) bytes.
    buf.push(u8::try_from(name.len()).expect("invariant: names are at most 128 bytes"));
    buf.extend_from_slice(name.as_bytes());
}

fn parse_tag(name: &str, version: u32) -> Result<TypeTag, DecodeError> {
    Ok(TypeTag {
        name: known_name(name)?,
        version,
    })
}

/// Type names a thread decoded lately, most recent first, at most [`KNOWN_NAMES`]: a name
/// seen before is shared, not validated and allocated again for every message (a gateway
/// sees few types). Names nobody registered only push older ones out: the list never grows.
const KNOWN_NAMES: usize = 16;

thread_local! {
    static RECENT_NAMES: std::cell::RefCell<Vec<Arc<str>>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn known_name(name: &str) -> Result<Arc<str>, DecodeError> {
    RECENT_NAMES.with(|recent| {
        let mut recent = recent.borrow_mut();
        if let Some(i) = recent.iter().position(|known| **known == *name) {
            recent[..=i].rotate_right(1);
            return Ok(Arc::clone(&recent[0]));
        }
        validate_name(name).map_err(|e| DecodeError::malformed("type name", e))?;
        let name: Arc<str> = name.into();
        if recent.len() == KNOWN_NAMES {
            recent.pop();
        }
        recent.insert(0, Arc::clone(&name));
        Ok(name)
    })
}

/// Reads a trace context (both ids non-zero).
fn read_trace(r: &mut Reader<'_>) -> Result<TraceContext, DecodeError> {
    let mut bytes = [0; TRACE_CONTEXT_LEN];
    bytes.copy_from_slice(r.take(TRACE_CONTEXT_LEN, "trace context")?);
    TraceContext::from_bytes(&bytes).map_err(|e| DecodeError::malformed("trace context", e))
}

/// Reads `from seq low` (`low <= seq + 1`: a sender never confirms ahead of what it sent).
fn read_receipt(r: &mut Reader<'_>) -> Result<Receipt, DecodeError> {
    let from = r.str_u8("receipt sender")?;
    crate::subject::validate_token(from)
        .map_err(|e| DecodeError::malformed("receipt sender", e))?;
    let seq = r.u64("receipt sequence")?;
    let low = r.u64("receipt floor")?;
    if low > seq.saturating_add(1) {
        return Err(DecodeError::malformed(
            "receipt",
            format!("floor {low} above sequence {seq} + 1"),
        ));
    }
    Ok(Receipt {
        from: from.into(),
        seq,
        low,
    })
}

#[cfg(test)]
mod tests;
