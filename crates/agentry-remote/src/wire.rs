//! A bounds-checked reader of big-endian binary fields: the one way the envelope and the
//! link's frames read bytes that came from outside. Every read that would run past the end is
//! a [`DecodeError`] naming the field, never a panic.

use crate::error::DecodeError;

/// Reads fields off the front of a byte slice.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf }
    }

    /// What is left unread.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.buf
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
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

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8, what)?);
        Ok(u64::from_be_bytes(a))
    }

    pub(crate) fn str(&mut self, n: usize, what: &'static str) -> Result<&'a str, DecodeError> {
        std::str::from_utf8(self.take(n, what)?).map_err(|e| DecodeError::malformed(what, e))
    }

    /// A string preceded by its length as one byte.
    pub(crate) fn str_u8(&mut self, what: &'static str) -> Result<&'a str, DecodeError> {
        let n = usize::from(self.u8(what)?);
        self.str(n, what)
    }
}

#[cfg(test)]
mod tests;
