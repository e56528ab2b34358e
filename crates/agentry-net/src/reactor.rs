//! The io loop of the current thread, as seen by the agents it runs: register a socket (any
//! [`mio::event::Source`]), get [`IoReady`] messages when it becomes ready, take the
//! accumulated [`Readiness`].
//!
//! # Ground rules
//!
//! - Each io thread owns one `mio::Poll` and, in a thread-local, its registry and a slab of
//!   registrations (`IoKey` → owner mbox). Only agents running on that thread (bound to the
//!   thread's io dispatcher) can reach it; anywhere else every call here fails with
//!   [`NetError::NotOnIoThread`]. So a registration is created, used and removed on one
//!   thread: no lock, no atomic.
//! - Registrations are edge-triggered (mio's contract): after a readiness event, the owner
//!   reads or writes until `WouldBlock`, or remembers that it stopped early and resumes by
//!   itself; no new event comes for readiness it has not consumed.
//! - Coalescing: the loop ORs each event into the slot's pending [`Readiness`] and sends the
//!   owner one [`IoReady`] only if none is queued already; the owner's
//!   [`take_readiness`] clears both. So an owner has at most one `IoReady` queued per
//!   registration, however many events arrive: its queue cannot grow with socket activity.
//! - Generations: a slot's generation changes when it is freed, and the generation is part of
//!   the mio token; an event that raced with [`deregister`] names a dead generation and is
//!   ignored, and a stale `IoKey` is refused with [`NetError::UnknownKey`].
//! - The loop sends `IoReady` from the io thread itself, outside any handler, so the send takes
//!   the driven dispatcher's local path (no atomic read-modify-write on the queue).

use crate::error::NetError;
use crate::ids::IoKey;
use crate::stats::Counters;
use agentry::Mbox;
use mio::{Interest, Registry};
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// The token of the loop's `mio::Waker` (never a registration: slots stay below `u32::MAX`).
pub(crate) const WAKER_TOKEN: mio::Token = mio::Token(usize::MAX);

/// Largest number of live registrations per io thread.
const MAX_SLOTS: usize = (u32::MAX / 2) as usize;

/// Readiness of a registered source, accumulated since its owner last took it.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Readiness(u8);

impl Readiness {
    const READABLE: u8 = 1;
    const WRITABLE: u8 = 2;
    const READ_CLOSED: u8 = 4;
    const WRITE_CLOSED: u8 = 8;
    const ERROR: u8 = 16;

    fn of(event: &mio::event::Event) -> Self {
        let mut bits = 0;
        if event.is_readable() {
            bits |= Self::READABLE;
        }
        if event.is_writable() {
            bits |= Self::WRITABLE;
        }
        if event.is_read_closed() {
            bits |= Self::READ_CLOSED;
        }
        if event.is_write_closed() {
            bits |= Self::WRITE_CLOSED;
        }
        if event.is_error() {
            bits |= Self::ERROR;
        }
        Readiness(bits)
    }

    /// Data (or an end of stream, or an error) can be read.
    pub fn is_readable(self) -> bool {
        self.0 & (Self::READABLE | Self::READ_CLOSED | Self::ERROR) != 0
    }

    /// The socket accepts writes again (or reports an error).
    pub fn is_writable(self) -> bool {
        self.0 & (Self::WRITABLE | Self::WRITE_CLOSED | Self::ERROR) != 0
    }

    /// The peer closed its writing half.
    pub fn is_read_closed(self) -> bool {
        self.0 & Self::READ_CLOSED != 0
    }

    /// The writing half is closed (peer gone).
    pub fn is_write_closed(self) -> bool {
        self.0 & Self::WRITE_CLOSED != 0
    }

    /// The socket reports an error (read it with `take_error`).
    pub fn is_error(self) -> bool {
        self.0 & Self::ERROR != 0
    }

    /// Nothing was reported.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl std::fmt::Debug for Readiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readiness")
            .field("readable", &(self.0 & Self::READABLE != 0))
            .field("writable", &(self.0 & Self::WRITABLE != 0))
            .field("read_closed", &self.is_read_closed())
            .field("write_closed", &self.is_write_closed())
            .field("error", &self.is_error())
            .finish()
    }
}

/// Sent by the io loop to the owner of a registration when readiness arrived; the owner
/// calls [`take_readiness`] with the key to learn what is ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoReady {
    /// The registration.
    pub key: IoKey,
}

struct Slot {
    generation: u32,
    owner: Option<Mbox>,
    pending: Readiness,
    queued: bool,
}

/// The thread-local part of one io loop.
pub(crate) struct LoopState {
    registry: Registry,
    slots: Vec<Slot>,
    free: Vec<u32>,
    counters: Arc<Counters>,
    index: usize,
}

thread_local! {
    static LOOP: RefCell<Option<LoopState>> = const { RefCell::new(None) };
    /// The io loop's turn on this thread (see [`turn`]).
    static TURN: Cell<u64> = const { Cell::new(0) };
}

/// The io loop's turn on this thread: it changes each time the loop looks at its sockets, so
/// two sends a channel makes in one turn see the same value (the channel writes the first at
/// once and stages the rest, `channel.rs`). 0 off an io thread.
pub(crate) fn turn() -> u64 {
    TURN.get()
}

/// The io loop starts a new turn (called by the loop, before it runs its agents).
pub(crate) fn next_turn() {
    TURN.set(TURN.get().wrapping_add(1));
}

impl LoopState {
    pub(crate) fn new(registry: Registry, counters: Arc<Counters>, index: usize) -> Self {
        LoopState {
            registry,
            slots: Vec::new(),
            free: Vec::new(),
            counters,
            index,
        }
    }
}

/// Makes `state` the io loop of the calling thread.
pub(crate) fn install(state: LoopState) {
    LOOP.set(Some(state));
}

/// Removes the calling thread's io loop (dropping the owners' mboxes).
pub(crate) fn uninstall() {
    // Dropped outside the borrow: dropping an mbox runs no agent code, but stay clear anyway.
    let state = LOOP.with_borrow_mut(Option::take);
    drop(state);
}

fn with_loop<R>(f: impl FnOnce(&mut LoopState) -> Result<R, NetError>) -> Result<R, NetError> {
    LOOP.with(|cell| match cell.try_borrow_mut() {
        Ok(mut guard) => match guard.as_mut() {
            Some(state) => f(state),
            None => Err(NetError::NotOnIoThread),
        },
        // Only the loop itself borrows across calls; a nested call cannot happen on the
        // loop's own path, but a user hook could try: refuse rather than panic.
        Err(_) => Err(NetError::NotOnIoThread),
    })
}

/// True if the calling thread is an io thread (its agents may register sources).
pub fn on_io_thread() -> bool {
    io_thread_index().is_some()
}

/// The index of the calling io thread within its dispatcher (`None` elsewhere).
pub fn io_thread_index() -> Option<usize> {
    with_loop(|s| Ok(s.index)).ok()
}

/// The counters of the calling io thread.
pub(crate) fn counters() -> Option<Arc<Counters>> {
    with_loop(|s| Ok(Arc::clone(&s.counters))).ok()
}

/// Registers `source` with the calling thread's io loop; [`IoReady`] messages for it go to
/// `owner` (normally the calling agent's own mbox). Call it from an agent bound to an
/// [`IoDispatcher`](crate::IoDispatcher) (e.g. in `on_start`), and [`deregister`] before the
/// source is dropped.
pub fn register<S>(source: &mut S, interest: Interest, owner: &Mbox) -> Result<IoKey, NetError>
where
    S: mio::event::Source + ?Sized,
{
    with_loop(|s| {
        let slot = match s.free.pop() {
            Some(slot) => slot,
            None => {
                if s.slots.len() >= MAX_SLOTS {
                    return Err(NetError::Io(std::io::Error::other(
                        "too many registrations on one io thread",
                    )));
                }
                s.slots.push(Slot {
                    generation: 0,
                    owner: None,
                    pending: Readiness::default(),
                    queued: false,
                });
                u32::try_from(s.slots.len() - 1).expect("invariant: slots < MAX_SLOTS")
            }
        };
        let entry = &mut s.slots[slot as usize];
        let key = IoKey {
            slot,
            generation: entry.generation,
        };
        if let Err(e) = s.registry.register(source, key.token(), interest) {
            s.free.push(slot);
            return Err(NetError::Io(e));
        }
        entry.owner = Some(owner.clone());
        entry.pending = Readiness::default();
        entry.queued = false;
        Ok(key)
    })
}

/// Changes the interest of a registration.
pub fn reregister<S>(key: IoKey, source: &mut S, interest: Interest) -> Result<(), NetError>
where
    S: mio::event::Source + ?Sized,
{
    with_loop(|s| {
        live(s, key)?;
        s.registry
            .reregister(source, key.token(), interest)
            .map_err(NetError::Io)
    })
}

/// Removes a registration: no [`IoReady`] for it is sent any more, and its key becomes stale.
pub fn deregister<S>(key: IoKey, source: &mut S) -> Result<(), NetError>
where
    S: mio::event::Source + ?Sized,
{
    with_loop(|s| {
        live(s, key)?;
        let result = s.registry.deregister(source).map_err(NetError::Io);
        let entry = &mut s.slots[key.slot as usize];
        entry.owner = None;
        entry.pending = Readiness::default();
        entry.queued = false;
        entry.generation = entry.generation.wrapping_add(1);
        s.free.push(key.slot);
        result
    })
}

/// Takes the readiness accumulated for `key` since the last call (and allows the next
/// [`IoReady`] to be sent). Empty for a stale key or off an io thread.
pub fn take_readiness(key: IoKey) -> Readiness {
    with_loop(|s| {
        live(s, key)?;
        let entry = &mut s.slots[key.slot as usize];
        entry.queued = false;
        Ok(std::mem::take(&mut entry.pending))
    })
    .unwrap_or_default()
}

fn live(s: &LoopState, key: IoKey) -> Result<(), NetError> {
    match s.slots.get(key.slot as usize) {
        Some(e) if e.generation == key.generation && e.owner.is_some() => Ok(()),
        _ => Err(NetError::UnknownKey),
    }
}

/// The loop's side: records `events` and collects into `out` the owners to notify (sent by
/// the caller after the thread-local borrow ends).
pub(crate) fn collect(events: &mio::Events, out: &mut Vec<(Mbox, IoKey)>) {
    LOOP.with(|cell| {
        let Ok(mut state) = cell.try_borrow_mut() else {
            return;
        };
        let Some(s) = state.as_mut() else { return };
        for event in events.iter() {
            let token = event.token();
            if token == WAKER_TOKEN {
                continue;
            }
            let key = IoKey::from_token(token);
            let Some(entry) = s.slots.get_mut(key.slot as usize) else {
                continue;
            };
            if entry.generation != key.generation {
                continue;
            }
            let Some(owner) = &entry.owner else { continue };
            let ready = Readiness::of(event);
            entry.pending = Readiness(entry.pending.0 | ready.0);
            if !entry.queued {
                entry.queued = true;
                out.push((owner.clone(), key));
            }
        }
    });
}
