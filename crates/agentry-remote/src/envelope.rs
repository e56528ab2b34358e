//! The envelope: what travels beside a payload so that routers, rejections and replies never
//! need to decode the body.
//!
//! # Fields
//!
//! | field | NATS header | link frame | meaning |
//! |---|---|---|---|
//! | type name | `Agentry-Type: orders.Created` | `u8` length + bytes | the stable name the type was registered under |
//! | version | `Agentry-Version: 1` | `u32` | its registered version |
//! | codec | `Agentry-Codec: postcard` / `postcard+zstd` / `postcard+zstd;dict=7` | `u8` (+ `u32` dictionary id) | how to turn the payload back into bytes postcard can read |
//! | correlation id | `Agentry-Corr: 42` (requests and replies only) | `u64` | matches a reply to its request |
//! | failure | `Agentry-Error: no-handler` (failed replies only) | `u8` | why a request got no reply; no type, no payload |
//! | receipt | `Agentry-Receipt: <gateway-id> <seq> <low>` (plain messages over NATS with receipts on) | — | asks the receiving gateway to confirm message `seq` of the sending gateway; every message of that sender below `low` is already confirmed (see `core/receipts.rs`) |
//!
//! Type name and version are required unless a failure is present. Header values and frame
//! fields are validated as strictly as they are written: unknown codecs, failures, stray
//! characters or trailing garbage are [`DecodeError`]s, never panics.

use crate::compression::Codec;
use crate::error::{DecodeError, RemoteFailure, truncate};
use crate::subject::validate_name;
use async_nats::{HeaderMap, HeaderName, HeaderValue};
use std::sync::Arc;

/// Header carrying the type name.
pub const HEADER_TYPE: &str = "Agentry-Type";
/// Header carrying the type version.
pub const HEADER_VERSION: &str = "Agentry-Version";
/// Header carrying the codec.
pub const HEADER_CODEC: &str = "Agentry-Codec";
/// Header carrying the correlation id.
pub const HEADER_CORR: &str = "Agentry-Corr";
/// Header carrying a request's failure.
pub const HEADER_ERROR: &str = "Agentry-Error";
/// Header carrying a delivery receipt request.
pub const HEADER_RECEIPT: &str = "Agentry-Receipt";

const H_TYPE: HeaderName = HeaderName::from_static(HEADER_TYPE);
const H_VERSION: HeaderName = HeaderName::from_static(HEADER_VERSION);
const H_CODEC: HeaderName = HeaderName::from_static(HEADER_CODEC);
const H_CORR: HeaderName = HeaderName::from_static(HEADER_CORR);
const H_ERROR: HeaderName = HeaderName::from_static(HEADER_ERROR);
const H_RECEIPT: HeaderName = HeaderName::from_static(HEADER_RECEIPT);

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
        }
    }

    /// Writes the envelope as NATS headers.
    pub fn to_headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(tag) = &self.tag {
            // invariant: registered names are validated ([A-Za-z0-9_-.]), so no CR/LF.
            h.insert(H_TYPE, HeaderValue::from(tag.name.to_string()));
            h.insert(H_VERSION, HeaderValue::from(tag.version));
            h.insert(H_CODEC, HeaderValue::from(codec_str(self.codec)));
        }
        if let Some(corr) = self.corr {
            h.insert(H_CORR, HeaderValue::from(corr));
        }
        if let Some(f) = self.failure {
            h.insert(H_ERROR, HeaderValue::from(f.code().to_owned()));
        }
        if let Some(r) = &self.receipt {
            // invariant: gateway ids are base-32 tokens, so no CR/LF.
            h.insert(
                H_RECEIPT,
                HeaderValue::from(format!("{} {} {}", r.from, r.seq, r.low)),
            );
        }
        h
    }

    /// Reads an envelope from NATS headers.
    pub fn from_headers(h: &HeaderMap) -> Result<Envelope, DecodeError> {
        let get = |name: &HeaderName| h.get(name.clone()).map(HeaderValue::as_str);
        let mut envelope = Envelope::from_fields(
            get(&H_TYPE),
            get(&H_VERSION),
            get(&H_CODEC),
            get(&H_CORR),
            get(&H_ERROR),
        )?;
        envelope.receipt = get(&H_RECEIPT).map(parse_receipt).transpose()?;
        Ok(envelope)
    }

    /// Reads an envelope from its textual fields (the header values).
    pub fn from_fields(
        type_name: Option<&str>,
        version: Option<&str>,
        codec: Option<&str>,
        corr: Option<&str>,
        error: Option<&str>,
    ) -> Result<Envelope, DecodeError> {
        let corr = corr.map(|c| parse_u64("correlation id", c)).transpose()?;
        let failure = error
            .map(|e| {
                RemoteFailure::from_code(e)
                    .ok_or_else(|| DecodeError::malformed("failure code", truncate(e, 40)))
            })
            .transpose()?;
        if let Some(f) = failure {
            return Ok(Envelope::failure(corr, f));
        }
        let name = type_name.ok_or(DecodeError::MissingField(HEADER_TYPE))?;
        let version = version.ok_or(DecodeError::MissingField(HEADER_VERSION))?;
        let codec = codec.ok_or(DecodeError::MissingField(HEADER_CODEC))?;
        Ok(Envelope {
            tag: Some(parse_tag(name, parse_version(version)?)?),
            codec: parse_codec(codec)?,
            corr,
            failure: None,
            receipt: None,
        })
    }
}

pub(crate) fn parse_tag(name: &str, version: u32) -> Result<TypeTag, DecodeError> {
    validate_name(name).map_err(|e| DecodeError::malformed("type name", e))?;
    Ok(TypeTag {
        name: name.into(),
        version,
    })
}

/// Reads `<gateway-id> <seq> <low>` (`low <= seq + 1`: a sender never confirms ahead of
/// what it sent).
fn parse_receipt(s: &str) -> Result<Receipt, DecodeError> {
    let bad = || DecodeError::malformed("receipt", truncate(s, 60));
    let mut parts = s.split(' ');
    let (Some(from), Some(seq), Some(low), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    crate::subject::validate_token(from).map_err(|_| bad())?;
    let seq = parse_u64("receipt sequence", seq)?;
    let low = parse_u64("receipt floor", low)?;
    if low > seq.saturating_add(1) {
        return Err(bad());
    }
    Ok(Receipt {
        from: from.into(),
        seq,
        low,
    })
}

fn parse_u64(what: &'static str, s: &str) -> Result<u64, DecodeError> {
    // `u64::from_str` accepts a leading `+`; the wire form is plain digits.
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DecodeError::malformed(what, truncate(s, 40)));
    }
    s.parse()
        .map_err(|_| DecodeError::malformed(what, truncate(s, 40)))
}

fn parse_version(s: &str) -> Result<u32, DecodeError> {
    let v = parse_u64("version", s)?;
    u32::try_from(v).map_err(|_| DecodeError::malformed("version", s))
}

/// The header form of a codec.
pub fn codec_str(codec: Codec) -> String {
    match codec {
        Codec::Postcard => "postcard".to_owned(),
        Codec::PostcardZstd => "postcard+zstd".to_owned(),
        Codec::PostcardZstdDict(id) => format!("postcard+zstd;dict={id}"),
    }
}

fn parse_codec(s: &str) -> Result<Codec, DecodeError> {
    match s {
        "postcard" => Ok(Codec::Postcard),
        "postcard+zstd" => Ok(Codec::PostcardZstd),
        _ => {
            let id = s
                .strip_prefix("postcard+zstd;dict=")
                .ok_or_else(|| DecodeError::malformed("codec", truncate(s, 40)))?;
            let id = parse_u64("dictionary id", id)?;
            let id = u32::try_from(id).map_err(|_| DecodeError::malformed("dictionary id", id))?;
            Ok(Codec::PostcardZstdDict(id))
        }
    }
}

#[cfg(test)]
mod tests;
