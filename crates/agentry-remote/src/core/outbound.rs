//! The bounded outbound buffer shared by senders (any thread) and the transport's writer.

use crate::envelope::Envelope;
use bytes::Bytes;
use std::collections::VecDeque;

/// What happens to a send when the outbound buffer is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Overflow {
    /// The new message is refused: `send` returns
    /// [`SendError::BufferFull`](crate::SendError::BufferFull) with the message, a request
    /// fails with [`RequestError::BufferFull`](crate::RequestError::BufferFull). Counted in
    /// `overflow_rejected`. (The default.)
    #[default]
    RejectNew,
    /// The oldest buffered envelope is dropped to make room: counted in `overflow_dropped`,
    /// logged, reported as [`RemoteEvent::Lost`](crate::RemoteEvent::Lost); a dropped
    /// request fails with `BufferFull`.
    DropOldest,
}

/// One envelope on its way out.
#[derive(Debug, Clone)]
pub(crate) struct OutMsg {
    pub(crate) subject: async_nats::Subject,
    pub(crate) reply: Option<async_nats::Subject>,
    pub(crate) envelope: Envelope,
    pub(crate) payload: Bytes,
    /// The correlation id of a request of ours (fail it if this envelope is lost).
    pub(crate) request: Option<u64>,
    pub(crate) kind: OutKind,
}

impl OutMsg {
    /// The payload of the NATS message: the wire version, the envelope and the body — or,
    /// for a confirmation (addressed to a gateway's reply subject, read by its receipt
    /// window), the body alone.
    pub(crate) fn nats_payload(&self) -> Bytes {
        match self.kind {
            OutKind::Confirmation => self.payload.clone(),
            _ => self.envelope.to_nats_payload(&self.payload),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutKind {
    Message,
    Request,
    Reply,
    /// Confirmations of received messages (see `receipts.rs`).
    Confirmation,
}

pub(crate) struct Queue {
    pub(crate) items: VecDeque<OutMsg>,
    /// Confirmations of received messages: never refused and taken ahead of `items` (a
    /// peer whose receipt window is full waits for them; they must not wait behind
    /// messages that our own full window holds back).
    pub(crate) confirmations: VecDeque<OutMsg>,
    pub(crate) closed: bool,
}

pub(crate) enum Refused {
    Full(Box<OutMsg>),
    Closed,
}

impl Queue {
    pub(crate) fn new() -> Queue {
        Queue {
            items: VecDeque::new(),
            confirmations: VecDeque::new(),
            closed: false,
        }
    }

    /// Pushes `msg`; returns `(was_empty, evicted)`.
    pub(crate) fn push(
        &mut self,
        msg: OutMsg,
        capacity: usize,
        policy: Overflow,
    ) -> Result<(bool, Option<OutMsg>), Refused> {
        if self.closed {
            drop(msg);
            return Err(Refused::Closed);
        }
        let was_empty = self.is_empty();
        if msg.kind == OutKind::Confirmation {
            self.confirmations.push_back(msg);
            return Ok((was_empty, None));
        }
        let mut evicted = None;
        if self.items.len() >= capacity {
            match policy {
                Overflow::RejectNew => return Err(Refused::Full(Box::new(msg))),
                Overflow::DropOldest => evicted = self.items.pop_front(),
            }
        }
        self.items.push_back(msg);
        Ok((was_empty, evicted))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty() && self.confirmations.is_empty()
    }

    /// Moves into `out` every confirmation, then envelopes in order while they fit: at most
    /// `max` in all, and at most `room` plain messages (the receipt window's room; `None`:
    /// receipts off). Returns how many were taken.
    pub(crate) fn take(&mut self, out: &mut Vec<OutMsg>, max: usize, room: Option<usize>) -> usize {
        let before = out.len();
        let n = self.confirmations.len().min(max);
        out.extend(self.confirmations.drain(..n));
        let mut room = room.unwrap_or(usize::MAX);
        while out.len() - before < max {
            let Some(front) = self.items.front() else {
                break;
            };
            if front.kind == OutKind::Message {
                if room == 0 {
                    break;
                }
                room -= 1;
            }
            out.extend(self.items.pop_front());
        }
        out.len() - before
    }
}
