//! The bytes a channel could not write yet: a queue of the owners' buffers (no copy), written
//! with `writev` when the socket is writable again.

use std::collections::VecDeque;
use std::io::{self, IoSlice, Write};

/// Buffers handed to one `writev`.
pub(crate) const MAX_SLICES: usize = 64;

#[derive(Debug, Default)]
pub(crate) struct WriteBuffer {
    chunks: VecDeque<Vec<u8>>,
    /// Bytes of the front chunk already written.
    head: usize,
    len: usize,
}

/// What a flush achieved.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Flushed {
    /// Everything is written.
    Drained,
    /// The socket is full; wait for writability.
    Blocked,
}

impl WriteBuffer {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Buffers queued (each one slice of a `writev`).
    pub(crate) fn chunks(&self) -> usize {
        self.chunks.len()
    }

    /// Queues `data[from..]`.
    pub(crate) fn push(&mut self, data: Vec<u8>, from: usize) {
        if from >= data.len() {
            return;
        }
        if self.chunks.is_empty() {
            self.head = from;
        } else if from > 0 {
            self.chunks.push_back(data[from..].to_vec());
            self.len += data.len() - from;
            return;
        }
        self.len += data.len() - from;
        self.chunks.push_back(data);
    }

    /// Writes until drained or the socket would block; adds what was written to `written` and
    /// the calls that wrote bytes to `calls`.
    pub(crate) fn flush<W: Write>(
        &mut self,
        w: &mut W,
        written: &mut u64,
        calls: &mut u64,
    ) -> io::Result<Flushed> {
        while !self.chunks.is_empty() {
            let mut slices = [IoSlice::new(&[]); MAX_SLICES];
            let mut n = 0;
            for (i, chunk) in self.chunks.iter().take(MAX_SLICES).enumerate() {
                slices[i] = IoSlice::new(if i == 0 { &chunk[self.head..] } else { chunk });
                n += 1;
            }
            match w.write_vectored(&slices[..n]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(done) => {
                    *written += done as u64;
                    *calls += 1;
                    self.advance(done);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Flushed::Blocked),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Flushed::Drained)
    }

    fn advance(&mut self, mut done: usize) {
        self.len -= done;
        while done > 0 {
            let Some(front) = self.chunks.front() else {
                break;
            };
            let left = front.len() - self.head;
            if done >= left {
                done -= left;
                self.chunks.pop_front();
                self.head = 0;
            } else {
                self.head += done;
                done = 0;
            }
        }
    }

    /// Drops everything (the connection closed); returns the bytes dropped.
    pub(crate) fn clear(&mut self) -> usize {
        let len = self.len;
        self.chunks.clear();
        self.head = 0;
        self.len = 0;
        len
    }
}

#[cfg(test)]
mod tests {
    use super::{Flushed, WriteBuffer};
    use std::io::{self, Write};

    /// Accepts at most `room` bytes, `per_call` at a time, then would block.
    struct Sink {
        out: Vec<u8>,
        room: usize,
        per_call: usize,
    }

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = buf.len().min(self.room).min(self.per_call);
            self.out.extend_from_slice(&buf[..n]);
            self.room -= n;
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn bytes_come_out_in_order_across_partial_writes() {
        let mut b = WriteBuffer::default();
        b.push(b"xxhello".to_vec(), 2);
        b.push(b" world".to_vec(), 0);
        b.push(b"??!".to_vec(), 2);
        assert_eq!(b.len(), 12);
        let mut sink = Sink {
            out: Vec::new(),
            room: 7,
            per_call: 3,
        };
        let (mut written, mut calls) = (0, 0);
        assert_eq!(
            b.flush(&mut sink, &mut written, &mut calls).expect("ok"),
            Flushed::Blocked
        );
        assert_eq!((b.len(), written, calls), (5, 7, 3));
        sink.room = 100;
        assert_eq!(
            b.flush(&mut sink, &mut written, &mut calls).expect("ok"),
            Flushed::Drained
        );
        // One slice per call (the default `write_vectored`): "hel", "lo", " w"; "orl", "d", "!".
        assert_eq!(calls, 6);
        assert_eq!(sink.out, b"hello world!");
        assert!(b.is_empty());
    }
}
