//! Frames of the direct TCP link.
//!
//! ```text
//! frame     = length:u32 (big endian, bytes after this field) body
//! body      = kind:u8 ...
//! kind 1    Hello      magic "AGRL" protocol:u8 ns_len:u8 ns gw_len:u8 gateway
//! kind 2    Heartbeat  (nothing)
//! kind 3    Message    flags:u8
//!                      subject_len:u16 subject
//!                      [reply_len:u16 reply]            flags bit 0
//!                      envelope                         the same bytes as on NATS (crate::envelope)
//!                      payload (the rest)
//! ```
//!
//! Integers are big endian. Every field is checked: lengths stay inside the frame, strings
//! are names (see [`crate::subject`]), unknown kinds, flags, codecs and failures are
//! [`DecodeError`]s. A frame longer than the link's `max_frame` is skipped unread.
//! Protocol 2 (the envelope block shared with NATS) replaced protocol 1 (the envelope's fields
//! spread over the frame's flags); the Hello frames of two different protocols end the
//! connection with an error naming both.

use crate::envelope::Envelope;
use crate::error::DecodeError;
use crate::wire::Reader;

/// Link protocol version (in the Hello frame).
pub const PROTOCOL: u8 = 2;
const MAGIC: &[u8; 4] = b"AGRL";
const KIND_HELLO: u8 = 1;
const KIND_HEARTBEAT: u8 = 2;
const KIND_MESSAGE: u8 = 3;
const F_REPLY: u8 = 1;
/// Longest subject in a frame.
pub const MAX_SUBJECT: usize = 512;

/// A decoded frame (borrowing from the frame's bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    /// The first frame each side sends.
    Hello {
        /// Link protocol version.
        protocol: u8,
        /// The sender's namespace.
        namespace: &'a str,
        /// The sender's gateway id.
        gateway: &'a str,
    },
    /// Liveness, sent when a side has written nothing for a heartbeat interval.
    Heartbeat,
    /// A message, request or reply.
    Message {
        /// Where it goes (the same subjects as on NATS).
        subject: &'a str,
        /// Where the reply goes (requests).
        reply: Option<&'a str>,
        /// The envelope.
        envelope: Envelope,
        /// The payload.
        payload: &'a [u8],
    },
}

fn check_subject(s: &str, what: &'static str) -> Result<(), DecodeError> {
    if s.len() > MAX_SUBJECT {
        return Err(DecodeError::malformed(what, "too long"));
    }
    crate::subject::validate_name(s).map_err(|e| DecodeError::malformed(what, e))
}

impl<'a> Frame<'a> {
    /// Decodes a frame body (the bytes after the length prefix).
    pub fn decode(body: &'a [u8]) -> Result<Frame<'a>, DecodeError> {
        let mut r = Reader::new(body);
        let frame = match r.u8("kind")? {
            KIND_HELLO => {
                if r.take(4, "magic")? != MAGIC {
                    return Err(DecodeError::malformed("frame", "bad magic"));
                }
                let protocol = r.u8("protocol")?;
                let n = usize::from(r.u8("namespace length")?);
                let namespace = r.str(n, "namespace")?;
                crate::subject::validate_token(namespace)
                    .map_err(|e| DecodeError::malformed("namespace", e))?;
                let n = usize::from(r.u8("gateway length")?);
                let gateway = r.str(n, "gateway id")?;
                crate::subject::validate_token(gateway)
                    .map_err(|e| DecodeError::malformed("gateway id", e))?;
                Frame::Hello {
                    protocol,
                    namespace,
                    gateway,
                }
            }
            KIND_HEARTBEAT => Frame::Heartbeat,
            KIND_MESSAGE => {
                let flags = r.u8("flags")?;
                if flags & !F_REPLY != 0 {
                    return Err(DecodeError::malformed("frame", format!("flags {flags:#x}")));
                }
                let n = usize::from(r.u16("subject length")?);
                let subject = r.str(n, "subject")?;
                check_subject(subject, "subject")?;
                let reply = if flags & F_REPLY != 0 {
                    let n = usize::from(r.u16("reply length")?);
                    let reply = r.str(n, "reply subject")?;
                    check_subject(reply, "reply subject")?;
                    Some(reply)
                } else {
                    None
                };
                let envelope = Envelope::read(&mut r)?;
                Frame::Message {
                    subject,
                    reply,
                    envelope,
                    payload: r.rest(),
                }
            }
            k => return Err(DecodeError::malformed("frame", format!("kind {k}"))),
        };
        Ok(frame)
    }
}

fn put_len_prefixed_u16(buf: &mut Vec<u8>, s: &str) {
    // invariant: subjects are built from validated names and checked against MAX_SUBJECT.
    let n = u16::try_from(s.len()).expect("invariant: subjects are at most MAX_SUBJECT bytes");
    buf.extend_from_slice(&n.to_be_bytes());
    buf.extend_from_slice(s.as_bytes());
}

/// Appends a Hello frame.
pub fn encode_hello(buf: &mut Vec<u8>, namespace: &str, gateway: &str) {
    let start = begin(buf);
    buf.push(KIND_HELLO);
    buf.extend_from_slice(MAGIC);
    buf.push(PROTOCOL);
    for s in [namespace, gateway] {
        // invariant: both are validated tokens of at most MAX_NAME_LEN (128) bytes.
        buf.push(u8::try_from(s.len()).expect("invariant: tokens are at most 128 bytes"));
        buf.extend_from_slice(s.as_bytes());
    }
    finish(buf, start);
}

/// Appends a Heartbeat frame.
pub fn encode_heartbeat(buf: &mut Vec<u8>) {
    let start = begin(buf);
    buf.push(KIND_HEARTBEAT);
    finish(buf, start);
}

/// Appends a Message frame.
pub fn encode_message(
    buf: &mut Vec<u8>,
    subject: &str,
    reply: Option<&str>,
    envelope: &Envelope,
    payload: &[u8],
) {
    let start = begin(buf);
    buf.push(KIND_MESSAGE);
    buf.push(if reply.is_some() { F_REPLY } else { 0 });
    put_len_prefixed_u16(buf, subject);
    if let Some(r) = reply {
        put_len_prefixed_u16(buf, r);
    }
    envelope.encode(buf);
    buf.extend_from_slice(payload);
    finish(buf, start);
}

fn begin(buf: &mut Vec<u8>) -> usize {
    let start = buf.len();
    buf.extend_from_slice(&[0; 4]);
    start
}

fn finish(buf: &mut [u8], start: usize) {
    let len = buf.len() - start - 4;
    // Frames are bounded by the link's max_frame (a u32) before they are encoded.
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    buf[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// Splits one complete frame off the front of `buf`: `Some((body, consumed))`, or `None`
/// if more bytes are needed. The caller checks the length against `max_frame` first with
/// [`peek_len`].
pub fn split(buf: &[u8]) -> Option<(&[u8], usize)> {
    let len = peek_len(buf)? as usize;
    let end = 4usize.checked_add(len)?;
    let body = buf.get(4..end)?;
    Some((body, end))
}

/// The length field of the frame at the front of `buf`, if 4 bytes are there.
pub fn peek_len(buf: &[u8]) -> Option<u32> {
    let b = buf.get(..4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests;
