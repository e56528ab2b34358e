//! Names and the NATS subject scheme.
//!
//! # Subject scheme (wire version `v1`)
//!
//! | purpose | subject | subscribers |
//! |---|---|---|
//! | messages to the global mbox `<name>` | `<ns>.v1.m.<name>` | every [`Gateway::subscribe`](crate::Gateway::subscribe) (fan-out), plus one member of each queue group ([`Gateway::subscribe_queue`](crate::Gateway::subscribe_queue)) |
//! | requests to the service `<name>` | `<ns>.v1.s.<name>` | [`Gateway::serve`](crate::Gateway::serve) / [`serve_on_request`](crate::Gateway::serve_on_request), always in queue group `<name>`: one server answers each request; nobody serving ⇒ NATS answers "no responders" at once |
//! | replies to requests of one gateway | `<ns>.v1.r.<gateway-id>.<corr>` | the requesting gateway, one wildcard subscription `<ns>.v1.r.<gateway-id>.*` |
//! | confirmations of one gateway's plain messages (receipts) | `<ns>.v1.r.<gateway-id>.a` | the sending gateway, through the same wildcard subscription |
//! | messages to the durable mbox `<name>` (JetStream) | `<ns>.v1.d.<name>`, stored in the stream `<ns>_S<name>` (escaped, below) | nobody directly: each durable consumer of the stream ([`Gateway::subscribe_durable`](crate::Gateway::subscribe_durable)) pulls every message once, shared by the processes using that consumer name |
//! | reserved | `<ns>.v1.sys.>` | — |
//!
//! - `<ns>`, the namespace, is one token; several applications may share a NATS server
//!   under different namespaces (for isolation proper, give each a NATS account).
//! - `<name>` is one or more tokens joined by `.` (`orders`, `orders.created`), so NATS
//!   wildcards could address families of names later.
//! - A token is 1 or more of `A-Z a-z 0-9 _ -`. NATS reserves `.`, `*`, `>` and whitespace;
//!   rather than escaping, names outside this alphabet are refused with a [`NameError`].
//! - A durable mbox's stream name is its namespace and name escaped (`_` → `_u`, `.` → `_d`)
//!   and joined by `_S` — `shop` and `orders.created` give `shop_Sorders_dcreated` — so that
//!   distinct (namespace, name) pairs never share a stream; stream names longer than
//!   [`MAX_STREAM_NAME_LEN`] are refused.
//! - `<gateway-id>` is 13 base-32 characters of a random 64-bit id drawn at every start, so
//!   a restarted process never receives replies meant for its previous incarnation.
//!
//! The direct TCP link carries the same subjects in its frames, so routing is identical.

use crate::error::{NameError, truncate};

/// Longest accepted name of a global mbox or message type, in bytes.
pub const MAX_NAME_LEN: usize = 128;

/// Longest accepted JetStream stream name of a durable mbox, in bytes (the server stores a
/// stream in a directory of that name).
pub const MAX_STREAM_NAME_LEN: usize = 200;

/// Wire version of the subject scheme and envelope.
pub const WIRE_VERSION: &str = "v1";

fn token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Checks a dotted name (global mbox names, message type names).
pub fn validate_name(name: &str) -> Result<(), NameError> {
    validate(name, true)
}

/// Checks a single-token name (namespaces, queue groups).
pub fn validate_token(token: &str) -> Result<(), NameError> {
    validate(token, false)
}

fn validate(name: &str, dots: bool) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_NAME_LEN {
        return Err(NameError::TooLong {
            name: truncate(name, 64),
            len: name.len(),
            max: MAX_NAME_LEN,
        });
    }
    if well_formed(name.as_bytes(), dots) {
        return Ok(());
    }
    first_fault(name, dots)
}

/// The first fault of a name (character by character, to name it in the error); `Ok` if it
/// has none — exactly when [`well_formed`] holds (a property test checks it).
fn first_fault(name: &str, dots: bool) -> Result<(), NameError> {
    let bytes = name.as_bytes();
    for (at, ch) in name.char_indices() {
        let b = bytes[at];
        if ch.is_ascii() && token_char(b) {
            continue;
        }
        if dots && ch == '.' {
            let prev_dot = at == 0 || bytes[at - 1] == b'.';
            let last = at + 1 == bytes.len();
            if prev_dot || last {
                return Err(NameError::EmptyToken {
                    name: name.to_owned(),
                });
            }
            continue;
        }
        return Err(NameError::InvalidChar {
            name: truncate(name, 64),
            ch,
            at,
        });
    }
    Ok(())
}

/// The common case in one pass over the bytes: token characters only, and (if `dots`) dots
/// that separate non-empty tokens.
fn well_formed(bytes: &[u8], dots: bool) -> bool {
    let mut after_dot = true;
    for &b in bytes {
        if token_char(b) {
            after_dot = false;
        } else if dots && b == b'.' && !after_dot {
            after_dot = true;
        } else {
            return false;
        }
    }
    !after_dot
}

/// The subjects of one namespace and one gateway.
#[derive(Debug, Clone)]
pub(crate) struct Scheme {
    ns: Box<str>,
    reply_prefix: Box<str>,
}

impl Scheme {
    pub(crate) fn new(ns: &str, gateway_id: &str) -> Result<Scheme, NameError> {
        validate_token(ns)?;
        Ok(Scheme {
            ns: ns.into(),
            reply_prefix: format!("{ns}.{WIRE_VERSION}.r.{gateway_id}.").into(),
        })
    }

    pub(crate) fn namespace(&self) -> &str {
        &self.ns
    }

    /// `<ns>.v1.m.<name>`.
    pub(crate) fn message_subject(&self, name: &str) -> Result<String, NameError> {
        validate_name(name)?;
        Ok(format!("{}.{WIRE_VERSION}.m.{name}", self.ns))
    }

    /// `<ns>.v1.s.<name>`.
    pub(crate) fn service_subject(&self, name: &str) -> Result<String, NameError> {
        validate_name(name)?;
        Ok(format!("{}.{WIRE_VERSION}.s.{name}", self.ns))
    }

    /// `<ns>.v1.d.<name>`: the subject of the durable mbox `<name>`.
    pub(crate) fn durable_subject(&self, name: &str) -> Result<String, NameError> {
        validate_name(name)?;
        Ok(format!("{}.{WIRE_VERSION}.d.{name}", self.ns))
    }

    /// The JetStream stream of the durable mbox `<name>` (see the module docs).
    pub(crate) fn durable_stream(&self, name: &str) -> Result<String, NameError> {
        validate_name(name)?;
        let stream = format!("{}_S{}", escape_stream(&self.ns), escape_stream(name));
        if stream.len() > MAX_STREAM_NAME_LEN {
            return Err(NameError::TooLong {
                name: truncate(name, 64),
                len: stream.len(),
                max: MAX_STREAM_NAME_LEN,
            });
        }
        Ok(stream)
    }

    /// `<ns>.v1.r.<gateway-id>.` — the prefix of this gateway's reply subjects.
    pub(crate) fn reply_prefix(&self) -> &str {
        &self.reply_prefix
    }

    /// `<ns>.v1.r.<gateway-id>.a`: where receiving gateways confirm the plain messages of
    /// gateway `gateway_id` (see the receipts of `core/receipts.rs`).
    pub(crate) fn confirmation_subject(&self, gateway_id: &str) -> String {
        format!(
            "{}.{WIRE_VERSION}.r.{gateway_id}.{CONFIRMATION_TOKEN}",
            self.ns
        )
    }

    /// `<ns>.v1.r.<gateway-id>.*`.
    pub(crate) fn reply_wildcard(&self) -> String {
        format!("{}*", self.reply_prefix)
    }

    /// `<ns>.v1.r.<gateway-id>.<corr>`, allocated at its exact size (one allocation per
    /// request: a `String` whose capacity is its length becomes a `Subject` without a second
    /// one).
    pub(crate) fn reply_subject(&self, corr: u64) -> String {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut n = corr;
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let mut s = String::with_capacity(self.reply_prefix.len() + digits.len() - at);
        s.push_str(&self.reply_prefix);
        s.extend(digits[at..].iter().map(|&d| char::from(d)));
        s
    }

    /// The correlation id of one of this gateway's reply subjects.
    pub(crate) fn parse_reply(&self, subject: &str) -> Option<u64> {
        subject.strip_prefix(&*self.reply_prefix)?.parse().ok()
    }
}

/// Escapes a name for a stream name: `_` → `_u`, `.` → `_d` (every `_` of the result starts
/// a two-character code, so the escape is injective and `_S` can separate two escapes).
fn escape_stream(name: &str) -> String {
    let mut s = String::with_capacity(name.len() + 8);
    for ch in name.chars() {
        match ch {
            '_' => s.push_str("_u"),
            '.' => s.push_str("_d"),
            c => s.push(c),
        }
    }
    s
}

/// The last token of a gateway's confirmation subject.
pub(crate) const CONFIRMATION_TOKEN: &str = "a";

/// A fresh random gateway id: 64 random bits as 13 base-32 characters.
pub(crate) fn new_gateway_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    // RandomState is seeded from the OS per process; mixing in time, pid and a counter makes
    // every call distinct.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(SEQ.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(d.as_nanos());
    }
    let mut v = h.finish();
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut s = String::with_capacity(13);
    for _ in 0..13 {
        s.push(char::from(ALPHABET[(v & 31) as usize]));
        v >>= 5;
    }
    s
}

#[cfg(test)]
mod tests;
