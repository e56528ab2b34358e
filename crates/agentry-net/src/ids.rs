//! Typed ids: [`ConnId`] (one TCP connection) and [`IoKey`] (one registration with an io loop).

use std::fmt;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(not(target_pointer_width = "64"))]
compile_error!("agentry-net packs an IoKey (slot + generation) into a 64-bit mio token");

/// Identifies one TCP connection (accepted or connected) for the life of the process.
///
/// ```
/// # use agentry_net::ConnId;
/// fn log(conn: ConnId) -> String { format!("{conn}") } // "conn#17"
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(NonZeroU64);

impl ConnId {
    pub(crate) fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        ConnId(NonZeroU64::new(n).expect("invariant: ids start at 1 and a u64 counter never wraps"))
    }

    /// The id as a number (unique in the process, never 0).
    pub fn get(self) -> u64 {
        self.0.get()
    }
}

impl fmt::Display for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "conn#{}", self.0)
    }
}

impl fmt::Debug for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A source's registration with the io loop of the thread it was registered on
/// ([`reactor::register`](crate::reactor::register)): a slot and a generation, so that a
/// readiness event of a closed registration never reaches the slot's next owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IoKey {
    pub(crate) slot: u32,
    pub(crate) generation: u32,
}

impl IoKey {
    /// The mio token of this registration.
    pub(crate) fn token(self) -> mio::Token {
        mio::Token(((self.generation as usize) << 32) | self.slot as usize)
    }

    /// The registration a token names (the waker's token names none).
    pub(crate) fn from_token(token: mio::Token) -> Self {
        IoKey {
            slot: (token.0 & 0xffff_ffff) as u32,
            generation: (token.0 >> 32) as u32,
        }
    }
}
