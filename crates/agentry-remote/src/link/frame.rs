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
//!                      [name_len:u8 name version:u32]   flags bit 3 (type tag)
//!                      codec:u8 [dictionary:u32]        0 postcard, 1 +zstd, 2 +zstd+dict
//!                      [corr:u64]                       flags bit 1
//!                      [failure:u8]                     flags bit 2
//!                      payload (the rest)
//! ```
//!
//! Integers are big endian. Every field is checked: lengths stay inside the frame, strings
//! are names (see [`crate::subject`]), unknown kinds, flags, codecs and failures are
//! [`DecodeError`]s. A frame longer than the link's `max_frame` is skipped unread.

use crate::compression::Codec;
use crate::envelope::{Envelope, parse_tag};
use crate::error::{DecodeError, RemoteFailure};

/// Link protocol version (in the Hello frame).
pub const PROTOCOL: u8 = 1;
const MAGIC: &[u8; 4] = b"AGRL";
const KIND_HELLO: u8 = 1;
const KIND_HEARTBEAT: u8 = 2;
const KIND_MESSAGE: u8 = 3;
const F_REPLY: u8 = 1;
const F_CORR: u8 = 2;
const F_FAILURE: u8 = 4;
const F_TAG: u8 = 8;
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

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if self.buf.len() < n {
            return Err(DecodeError::malformed(
                "frame",
                format!("truncated {what}: need {n} bytes, have {}", self.buf.len()),
            ));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }
    fn str(&mut self, n: usize, what: &'static str) -> Result<&'a str, DecodeError> {
        std::str::from_utf8(self.take(n, what)?).map_err(|e| DecodeError::malformed(what, e))
    }
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
        let mut r = Reader { buf: body };
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
                if flags & !(F_REPLY | F_CORR | F_FAILURE | F_TAG) != 0 {
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
                let tag = if flags & F_TAG != 0 {
                    let n = usize::from(r.u8("type name length")?);
                    let name = r.str(n, "type name")?;
                    let version = r.u32("version")?;
                    Some(parse_tag(name, version)?)
                } else {
                    None
                };
                let codec = match r.u8("codec")? {
                    0 => Codec::Postcard,
                    1 => Codec::PostcardZstd,
                    2 => Codec::PostcardZstdDict(r.u32("dictionary id")?),
                    c => return Err(DecodeError::malformed("codec", format!("code {c}"))),
                };
                let corr = if flags & F_CORR != 0 {
                    Some(r.u64("correlation id")?)
                } else {
                    None
                };
                let failure =
                    if flags & F_FAILURE != 0 {
                        let b = r.u8("failure")?;
                        Some(RemoteFailure::from_byte(b).ok_or_else(|| {
                            DecodeError::malformed("failure", format!("code {b}"))
                        })?)
                    } else {
                        None
                    };
                let envelope = match (failure, tag) {
                    (Some(f), _) => Envelope::failure(corr, f),
                    (None, Some(tag)) => Envelope::message(tag, codec, corr),
                    (None, None) => return Err(DecodeError::MissingField("type")),
                };
                Frame::Message {
                    subject,
                    reply,
                    envelope,
                    payload: r.buf,
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
    let mut flags = 0;
    if reply.is_some() {
        flags |= F_REPLY;
    }
    if envelope.corr.is_some() {
        flags |= F_CORR;
    }
    if envelope.failure.is_some() {
        flags |= F_FAILURE;
    }
    if envelope.tag.is_some() {
        flags |= F_TAG;
    }
    buf.push(flags);
    put_len_prefixed_u16(buf, subject);
    if let Some(r) = reply {
        put_len_prefixed_u16(buf, r);
    }
    if let Some(tag) = &envelope.tag {
        // invariant: registered names are at most MAX_NAME_LEN (128) bytes.
        buf.push(u8::try_from(tag.name.len()).expect("invariant: names are at most 128 bytes"));
        buf.extend_from_slice(tag.name.as_bytes());
        buf.extend_from_slice(&tag.version.to_be_bytes());
    }
    match envelope.codec {
        Codec::Postcard => buf.push(0),
        Codec::PostcardZstd => buf.push(1),
        Codec::PostcardZstdDict(id) => {
            buf.push(2);
            buf.extend_from_slice(&id.to_be_bytes());
        }
    }
    if let Some(c) = envelope.corr {
        buf.extend_from_slice(&c.to_be_bytes());
    }
    if let Some(f) = envelope.failure {
        buf.push(f.byte());
    }
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
