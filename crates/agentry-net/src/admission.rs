//! Admission: what a channel is handed when it is made — its place under its listener's
//! connection limit ([`OpenSlot`]) and its owner ([`OwnerRef`]). The acceptor
//! (`listener.rs`) makes both for an accepted connection; a channel that connects out
//! (`Channel::connecting`) has a known owner and no slot. The channel (`channel.rs`) only
//! holds them, so neither of those two modules needs the other.
//!
//! # Ground rules
//!
//! - A listener's connection limit is one [`ConnLimit`]: the count of its open connections
//!   and their maximum, shared by the acceptor, the listener's handle (which reads the count
//!   for its stats) and every [`OpenSlot`].
//! - Only the acceptor takes a slot ([`ConnLimit::try_take`]), before it makes the channel.
//!   The count is raised in one `fetch_update` that refuses at the maximum, so two takes never
//!   both pass the last place; a connection refused a slot gets no channel.
//! - A slot is given back exactly once, by its drop: when the channel releases its socket, or
//!   with the channel if the connection's coop never registers. No other path lowers the
//!   count, so it never falls below the number of live slots.
//! - An owner is either known when the channel is made (the listener's one owner mbox, or the
//!   caller's of `connect`) or *pending*: a per-connection owner is made by the listener's
//!   factory after the channel (the factory needs the channel's mbox), so the channel gets
//!   the cell the factory fills before the coop registers and reads it in `define`, which
//!   runs at registration. The placeholder stands in only if the cell is still empty then.

use agentry::Mbox;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// A listener's connection limit: how many of its connections are open, and how many may be.
#[derive(Debug)]
pub(crate) struct ConnLimit {
    max: usize,
    open: AtomicUsize,
}

impl ConnLimit {
    /// A limit of `max` open connections, none open yet.
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(ConnLimit {
            max,
            open: AtomicUsize::new(0),
        })
    }

    /// A slot for one more connection, or `None` at the limit.
    pub(crate) fn try_take(self: &Arc<Self>) -> Option<OpenSlot> {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| OpenSlot(Arc::clone(self)))
    }

    /// The connections open now (a snapshot, for stats).
    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// The most connections that may be open at once.
    pub(crate) fn max(&self) -> usize {
        self.max
    }
}

/// One open connection counted against its listener's limit (given back on drop).
#[derive(Debug)]
pub(crate) struct OpenSlot(Arc<ConnLimit>);

impl Drop for OpenSlot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The owner of a channel, or where it will be found when the channel's coop registers.
pub(crate) enum OwnerRef {
    Known(Mbox),
    /// Set by the factory before registration; `placeholder` (the acceptor, which counts
    /// what it gets as unhandled) only if the factory never ran.
    Pending {
        cell: Arc<OnceLock<Mbox>>,
        placeholder: Mbox,
    },
}

#[cfg(test)]
mod tests;
