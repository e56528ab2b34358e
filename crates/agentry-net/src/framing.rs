//! Framing: how a byte stream is cut into messages.
//!
//! Sans-IO: the [`Decoder`] is fed what a read returned and emits whole frames; it never
//! touches a socket or the clock, so it is unit-tested byte by byte (`framing/tests.rs`).
//!
//! # Ground rules
//!
//! - Everything fed is untrusted. A frame over the maximum is refused *before* its body is
//!   buffered (a length prefix is checked as soon as its 4 bytes are in; a line as soon as
//!   the bytes without a `\n` exceed the maximum), so the decoder holds at most `max` bytes
//!   plus a 4-byte prefix per connection.
//! - The decoder allocates a frame's buffer as its bytes arrive, never from the announced
//!   length alone: a peer announcing many large frames and sending nothing costs nothing.
//! - Each frame is reported with its wire size (payload plus prefix or line end), which is
//!   what inbound credit counts, so a flood of empty frames is bounded too.

/// How a channel cuts its byte stream into messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Framing {
    /// No framing: the owner gets [`Received`](crate::Received) chunks as they are read.
    #[default]
    Raw,
    /// Each frame is a 4-byte big-endian length, then that many bytes; the owner gets
    /// [`Frame`](crate::Frame)s.
    LengthPrefixed,
    /// Each frame is a line ended by `\n` (a `\r` before it is removed too); the owner gets
    /// [`Frame`](crate::Frame)s without the line end.
    Lines,
}

/// The length prefix of [`Framing::LengthPrefixed`].
const PREFIX: usize = 4;

/// A frame over the maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooBig {
    pub(crate) size: usize,
    pub(crate) max: usize,
}

/// Cuts a byte stream into frames.
#[derive(Debug)]
pub(crate) struct Decoder {
    framing: Framing,
    max: usize,
    prefix: [u8; PREFIX],
    prefix_len: usize,
    /// Length of the frame being received (length-prefixed, after its prefix).
    expected: Option<usize>,
    /// Bytes of the frame being received (or of the line without its end yet).
    partial: Vec<u8>,
}

impl Decoder {
    pub(crate) fn new(framing: Framing, max: usize) -> Self {
        Decoder {
            framing,
            max,
            prefix: [0; PREFIX],
            prefix_len: 0,
            expected: None,
            partial: Vec::new(),
        }
    }

    /// Bytes of an unfinished frame held (prefix included).
    pub(crate) fn partial(&self) -> usize {
        self.prefix_len + self.partial.len() + if self.expected.is_some() { PREFIX } else { 0 }
    }

    /// Feeds `input`; calls `emit(payload, wire_bytes)` for every frame it completes. After an
    /// error the decoder must not be fed again (the connection is closed).
    pub(crate) fn feed(
        &mut self,
        input: &[u8],
        mut emit: impl FnMut(Vec<u8>, usize),
    ) -> Result<(), TooBig> {
        match self.framing {
            Framing::Raw => {
                if !input.is_empty() {
                    emit(input.to_vec(), input.len());
                }
                Ok(())
            }
            Framing::LengthPrefixed => self.feed_prefixed(input, &mut emit),
            Framing::Lines => self.feed_lines(input, &mut emit),
        }
    }

    fn feed_prefixed(
        &mut self,
        mut input: &[u8],
        emit: &mut impl FnMut(Vec<u8>, usize),
    ) -> Result<(), TooBig> {
        while !input.is_empty() {
            match self.expected {
                None => {
                    let take = (PREFIX - self.prefix_len).min(input.len());
                    self.prefix[self.prefix_len..self.prefix_len + take]
                        .copy_from_slice(&input[..take]);
                    self.prefix_len += take;
                    input = &input[take..];
                    if self.prefix_len < PREFIX {
                        return Ok(());
                    }
                    self.prefix_len = 0;
                    let size = u32::from_be_bytes(self.prefix) as usize;
                    if size > self.max {
                        return Err(TooBig {
                            size,
                            max: self.max,
                        });
                    }
                    if size == 0 {
                        emit(Vec::new(), PREFIX);
                    } else {
                        self.expected = Some(size);
                        self.partial = Vec::with_capacity(size.min(input.len()));
                    }
                }
                Some(size) => {
                    let take = (size - self.partial.len()).min(input.len());
                    self.partial.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    if self.partial.len() == size {
                        self.expected = None;
                        emit(std::mem::take(&mut self.partial), size + PREFIX);
                    }
                }
            }
        }
        Ok(())
    }

    fn feed_lines(
        &mut self,
        mut input: &[u8],
        emit: &mut impl FnMut(Vec<u8>, usize),
    ) -> Result<(), TooBig> {
        while !input.is_empty() {
            match input.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    let size = self.partial.len() + end;
                    if size > self.max {
                        return Err(TooBig {
                            size,
                            max: self.max,
                        });
                    }
                    let mut line = std::mem::take(&mut self.partial);
                    line.extend_from_slice(&input[..end]);
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    emit(line, size + 1);
                    input = &input[end + 1..];
                }
                None => {
                    let size = self.partial.len() + input.len();
                    if size > self.max {
                        return Err(TooBig {
                            size,
                            max: self.max,
                        });
                    }
                    self.partial.extend_from_slice(input);
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

/// Bytes [`encode`] adds to a payload.
pub(crate) fn overhead(framing: Framing) -> usize {
    match framing {
        Framing::Raw => 0,
        Framing::LengthPrefixed => PREFIX,
        Framing::Lines => 1,
    }
}

/// Encodes `payload` as one frame of `framing`; `None` if it cannot be one (a length prefix
/// is 32 bits).
pub(crate) fn encode(framing: Framing, payload: Vec<u8>) -> Option<Vec<u8>> {
    match framing {
        Framing::Raw => Some(payload),
        Framing::LengthPrefixed => {
            let len = u32::try_from(payload.len()).ok()?;
            let mut out = Vec::with_capacity(PREFIX + payload.len());
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(&payload);
            Some(out)
        }
        Framing::Lines => {
            let mut out = payload;
            out.push(b'\n');
            Some(out)
        }
    }
}

#[cfg(test)]
mod tests;
