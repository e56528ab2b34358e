//! Writes queued at the channel: `SendBytes` / `SendFrame` sent to it but not yet taken into
//! its write buffer, counted from the moment they are sent.
//!
//! # Why
//!
//! The channel decides whether to read on from what its owner still has to write. Its
//! write buffer alone does not tell: an owner on another io thread sends its replies through
//! the channel thread's cross-thread queue, which that thread serves at most a batch per
//! round and behind whatever other threads sent to its agents, while the channel's own
//! reading (its `IoReady` and `ReadMore`) goes on every round. The owner returns a request's
//! inbound credit as soon as its handler has sent the reply, so the credit does not stop the
//! channel either: without this count the channel could read far more than `write_max` of
//! requests whose replies then reach the write buffer at once (`WriteOverflow`, the soak's
//! finding, `tests/tcp_flooders_are_held_back_across_io_threads.rs`).
//!
//! # Ground rules
//!
//! - With `pause_reading_on_write_high` the channel has insend handlers for `SendBytes` and
//!   `SendFrame`: on the sender's thread, before its `send` returns (so before the handler
//!   that sends returns and drops the credit of the request it answers), they add the bytes
//!   to be written to the shared [`Pending`] count and forward the data to the channel's own
//!   queue as [`Queued`]. The forward happens inside the sender's `send`, so one sender's
//!   messages keep their order (a `Close` after a `SendBytes` still comes after it).
//! - The channel subtracts them when it handles the `Queued` (it writes them or buffers
//!   them, or drops them after a close). Reading stops when `buffered + pending` reaches
//!   `write_high` and resumes when it is back at `write_low`; both only fall in the
//!   channel's own handlers (a flush, a `Queued`), which re-check, so no wake-up is lost.
//! - Memory order: the count is `Relaxed`. The sender adds before it drops the request's
//!   credit (a `SeqCst` release of `in_flight`); the channel reads the count after its credit
//!   check (a `SeqCst` load): a channel that read on because credit came back sees the
//!   replies sent before it. Replies to requests still in flight are covered by the inbound
//!   credit instead, so what the channel has read and not written is bounded by
//!   `write_high` + the replies to `inbound_max` + one read of requests.
//! - Without `pause_reading_on_write_high` nothing is counted: `SendBytes` / `SendFrame` go
//!   straight to the channel's handlers, as do messages of every other type.

use crate::framing::{Framing, overhead};
use crate::messages::{SendBytes, SendFrame};
use agentry::{Agent, Define, DefineError, InsendCtx};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A `SendBytes` (`frame == false`) or `SendFrame` counted in [`Pending`] (`counted` bytes).
#[derive(Debug)]
pub(crate) struct Queued {
    pub(crate) data: Vec<u8>,
    pub(crate) frame: bool,
    pub(crate) counted: usize,
}

/// Bytes sent to the channel and not yet taken into its write buffer.
#[derive(Debug, Default, Clone)]
pub(crate) struct Pending(Arc<AtomicUsize>);

impl Pending {
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// The channel took a [`Queued`].
    pub(crate) fn taken(&self, counted: usize) {
        self.0.fetch_sub(counted, Ordering::Relaxed);
    }

    /// Counts `data` (`counted` bytes once encoded) and forwards it to the channel, on the
    /// sender's thread.
    fn forward(&self, ctx: &InsendCtx<'_>, data: Vec<u8>, frame: bool, counted: usize) {
        self.0.fetch_add(counted, Ordering::Relaxed);
        ctx.mbox().send(Queued {
            data,
            frame,
            counted,
        });
    }
}

/// Installs the insend handlers that count `SendBytes` and `SendFrame` (encoded with
/// `framing`) in `pending` and forward them as [`Queued`].
pub(crate) fn count_sends<A: Agent>(
    def: &mut Define<A>,
    framing: Framing,
    pending: &Pending,
) -> Result<(), DefineError> {
    let bytes = pending.clone();
    def.insend(move |ctx: &InsendCtx<'_>, SendBytes(data): SendBytes| {
        let counted = data.len();
        bytes.forward(ctx, data, false, counted);
    })?;
    let frames = pending.clone();
    let extra = overhead(framing);
    def.insend(move |ctx: &InsendCtx<'_>, SendFrame(data): SendFrame| {
        let counted = data.len().saturating_add(extra);
        frames.forward(ctx, data, true, counted);
    })?;
    Ok(())
}
