//! `SetOnce<T, Beside>`: a value set at most once, by any thread, then read by any thread; with
//! a few flags its owner raises and lowers in the same state byte, and a small field of the
//! owner's kept beside that byte.
//!
//! What an agent's binding needs from `OnceLock` without what it pays for: `OnceLock::set`
//! goes through `Once`'s general machinery (an initialising closure, waiters parked while it
//! runs, a second read-modify-write to wake them): callgrind counts about 100 instructions
//! more per registered agent than this type makes. A binding is set once by the registering
//! thread and only *read* meanwhile: nobody needs to wait for it.
//!
//! The flags are there so that a sender asks one question with one load: "is the agent bound,
//! and does it accept messages?" (`mbox/direct.rs`). `Beside` is there for size: the state
//! byte would otherwise be padded to the value's alignment, and an owner's 4-byte field fills
//! that padding (an agent's shared part keeps its published state there: 8 bytes an agent).
//!
//! # Ground rules
//!
//! - The state byte holds `CLAIMED` (a setter owns the value's storage), `SET` (the value is
//!   written) and the owner's [`Flag`]s.
//! - A setter raises `CLAIMED` with a read-modify-write; one that finds it raised already
//!   fails and gets its value back. The winner writes the value, then raises `SET` together
//!   with the flags it was given, with `Release`. `CLAIMED` is never lowered, so a value is
//!   written once.
//! - A reader loads the state with `Acquire` and reads the value only if `SET` is raised: the
//!   value was written before, and is never written again. A reader that comes while the
//!   setter writes sees nothing (`None`), as before the set. A reader that asks for flags gets
//!   the value only if `SET` and all of them are raised in the same load.
//! - Flags change only by read-modify-writes of the whole byte (`Release` or stronger), so
//!   raising or lowering one never loses `SET` or another flag, whichever thread does it.
//! - Dropping drops the value if it is set (`&mut self`: no setter or reader is left).

use super::UnsafeCell;
#[cfg(not(loom))]
use super::UnsafeCellExt;
use super::atomic::{AtomicU8, Ordering};
use std::fmt;
use std::mem::MaybeUninit;

/// A setter owns the value's storage (never lowered).
const CLAIMED: u8 = 1;
/// The value is written.
const SET: u8 = 2;

/// One of the flags an owner keeps in a [`SetOnce`]'s state byte (up to six).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flag(u8);

impl Flag {
    /// The owner's flag number `n` (0 to 5).
    pub(crate) const fn nth(n: u32) -> Flag {
        assert!(n < 6, "a SetOnce keeps six flags of its owner's");
        Flag(4 << n)
    }

    /// No flag.
    pub(crate) const NONE: Flag = Flag(0);
}

/// See the module docs.
pub(crate) struct SetOnce<T, Beside = ()> {
    state: AtomicU8,
    beside: Beside,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the value is written by one thread (the setter that raised `CLAIMED`) before it is
// published with `Release`, and only read after (ground rules): sharing a `SetOnce` shares
// `&T` (so `T: Sync`) and lets another thread move a `T` in (so `T: Send`). `Beside` is a
// plain field, shared as such.
unsafe impl<T: Send + Sync, Beside: Sync> Sync for SetOnce<T, Beside> {}

impl<T, Beside: Default> SetOnce<T, Beside> {
    pub(crate) fn new() -> Self {
        SetOnce {
            state: AtomicU8::new(0),
            beside: Beside::default(),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }
}

impl<T, Beside> SetOnce<T, Beside> {
    /// Sets the value and raises `flags` with it; gives the value back if it was set (or is
    /// being set) already.
    pub(crate) fn set(&self, value: T, flags: Flag) -> Result<(), T> {
        if self.state.fetch_or(CLAIMED, Ordering::Acquire) & CLAIMED != 0 {
            return Err(value);
        }
        // SAFETY: raising `CLAIMED` made this thread the only one to touch the value: readers
        // read it only once it is `SET`, other setters fail above (ground rules).
        self.value.with_mut(|p| unsafe { (*p).write(value) });
        self.state.fetch_or(SET | flags.0, Ordering::Release);
        Ok(())
    }

    /// The value, if it is set.
    #[inline]
    pub(crate) fn get(&self) -> Option<&T> {
        self.get_if(Flag::NONE)
    }

    /// The value, if it is set and `flags` are all raised (one load).
    #[inline]
    pub(crate) fn get_if(&self, flags: Flag) -> Option<&T> {
        let wanted = SET | flags.0;
        if self.state.load(Ordering::Acquire) & wanted != wanted {
            return None;
        }
        // SAFETY: `SET`, read with `Acquire`, pairs with the setter's `Release`: the value is
        // written, and never written again while `self` lives (ground rules).
        Some(self.value.with(|p| unsafe { (*p).assume_init_ref() }))
    }

    /// Raises `raise` and lowers `lower` in one step; true if every flag of `raise` was
    /// lowered before (this call raised them).
    pub(crate) fn update(&self, raise: Flag, lower: Flag) -> bool {
        let before = match self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                Some((s & !lower.0) | raise.0)
            }) {
            Ok(before) | Err(before) => before,
        };
        before & raise.0 == 0
    }

    /// The owner's field kept beside the state byte.
    #[inline]
    pub(crate) fn beside(&self) -> &Beside {
        &self.beside
    }
}

impl<T, Beside> Drop for SetOnce<T, Beside> {
    fn drop(&mut self) {
        if self.state.load(Ordering::Relaxed) & SET != 0 {
            // SAFETY: `&mut self`: nobody else holds it; `SET` says the value is written, and it
            // is dropped once, here.
            self.value.with_mut(|p| unsafe { (*p).assume_init_drop() });
        }
    }
}

impl<T: fmt::Debug, Beside> fmt::Debug for SetOnce<T, Beside> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SetOnce").field(&self.get()).finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Flag, SetOnce};
    use std::sync::Arc;

    const OPEN: Flag = Flag::nth(0);
    const CLOSING: Flag = Flag::nth(5);

    #[test]
    fn set_once_then_refused_and_read_by_any_thread() {
        let cell: Arc<SetOnce<String>> = Arc::new(SetOnce::new());
        assert_eq!(cell.get(), None);
        assert_eq!(cell.set(String::from("first"), Flag::NONE), Ok(()));
        assert_eq!(
            cell.set(String::from("second"), Flag::NONE),
            Err(String::from("second"))
        );
        let reader = {
            let cell = Arc::clone(&cell);
            std::thread::spawn(move || cell.get().cloned())
        };
        assert_eq!(reader.join().expect("reader"), Some(String::from("first")));
    }

    #[test]
    fn flags_gate_the_value_and_change_without_losing_it() {
        let cell: SetOnce<u32, u32> = SetOnce::new();
        // A flag raised before the value is set does not make it readable.
        assert!(cell.update(CLOSING, Flag::NONE));
        assert_eq!(cell.get_if(CLOSING), None);
        assert_eq!(cell.set(7, OPEN), Ok(()));
        assert_eq!(cell.get_if(OPEN), Some(&7));
        assert_eq!(cell.get_if(CLOSING), Some(&7));
        assert!(!cell.update(CLOSING, OPEN), "CLOSING was raised already");
        assert_eq!(cell.get_if(OPEN), None, "OPEN is lowered");
        assert_eq!(cell.get_if(CLOSING), Some(&7));
        assert_eq!(cell.get(), Some(&7), "lowering a flag keeps the value");
        assert_eq!(cell.set(8, OPEN), Err(8));
        assert_eq!(*cell.beside(), 0);
    }

    #[test]
    fn dropping_drops_a_set_value_once_and_an_empty_one_not_at_all() {
        let marker = Arc::new(());
        let set: SetOnce<Arc<()>> = SetOnce::new();
        assert!(set.set(Arc::clone(&marker), Flag::NONE).is_ok());
        let empty: SetOnce<Arc<()>> = SetOnce::new();
        assert_eq!(Arc::strong_count(&marker), 2);
        drop(set);
        drop(empty);
        assert_eq!(Arc::strong_count(&marker), 1);
    }
}
