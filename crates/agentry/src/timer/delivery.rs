//! A delivery of a timer's message in flight (see the ground rules of `token.rs`), and each
//! thread's record of the deliveries it is inside: a [`TimerHandle::cancel`] made from
//! inside a delivery of its own timer must not wait for itself.
//!
//! [`TimerHandle::cancel`]: crate::timer::TimerHandle::cancel
//!
//! Only a timer's message pays for this: beginning and ending a delivery costs the token's
//! two atomic operations, an `Arc` clone and drop, and a push and a pop on a thread-local
//! vector (allocated once per thread). The plain message path calls nothing here (where
//! `deliver` is inlined with no timer, [`Delivery::begin_timed`] folds away).

use super::token::TimerToken;
use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

thread_local! {
    /// The tokens of the deliveries this thread is inside, innermost last (more than one only
    /// if a handler runs another dispatcher's demands).
    static INSIDE: RefCell<Vec<*const TimerToken>> = const { RefCell::new(Vec::new()) };
}

/// A delivery in flight: it ends, waking a canceller that waits for it, when dropped.
#[must_use = "the delivery ends when this is dropped"]
pub(crate) struct Delivery {
    token: Arc<TimerToken>,
}

/// The timer was revoked: its message must not be handled.
#[derive(Debug)]
pub(crate) struct Revoked;

impl Delivery {
    /// Begins a delivery of the message of `token`'s timer on this thread; `None` if the timer
    /// was revoked.
    #[inline]
    pub(crate) fn begin(token: &Arc<TimerToken>) -> Option<Delivery> {
        if !token.begin() {
            return None;
        }
        // A thread whose locals are already destroyed (it is exiting) runs no handlers.
        let _ = INSIDE.try_with(|inside| inside.borrow_mut().push(Arc::as_ptr(token)));
        Some(Delivery {
            token: Arc::clone(token),
        })
    }

    /// For a message that may come from a timer (`timer` is then its token): `Ok(None)` for
    /// any other message, `Ok(Some(_))` for a delivery begun, `Err(Revoked)` if the timer was
    /// revoked.
    #[inline]
    pub(crate) fn begin_timed(
        timer: Option<&Arc<TimerToken>>,
    ) -> Result<Option<Delivery>, Revoked> {
        match timer {
            None => Ok(None),
            Some(token) => Delivery::begin(token).map(Some).ok_or(Revoked),
        }
    }

    /// Ends the delivery: its handler returned (the same as dropping it).
    #[inline]
    pub(crate) fn end(self) {}
}

impl Drop for Delivery {
    fn drop(&mut self) {
        let token = Arc::as_ptr(&self.token);
        let _ = INSIDE.try_with(|inside| {
            let mut inside = inside.borrow_mut();
            if let Some(at) = inside.iter().rposition(|t| std::ptr::eq(*t, token)) {
                inside.remove(at);
            }
        });
        self.token.end();
    }
}

impl fmt::Debug for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Delivery").field(&self.token).finish()
    }
}

/// How many deliveries of `token`'s timer the calling thread is inside.
pub(crate) fn own(token: &TimerToken) -> u64 {
    INSIDE
        .try_with(|inside| {
            let n = inside
                .borrow()
                .iter()
                .filter(|t| std::ptr::eq(**t, token))
                .count();
            u64::try_from(n).unwrap_or(u64::MAX)
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::{Delivery, own};
    use crate::timer::token::TimerToken;
    use std::sync::Arc;

    #[test]
    fn a_thread_counts_the_deliveries_it_is_inside() {
        let (a, b) = (
            Arc::new(TimerToken::default()),
            Arc::new(TimerToken::default()),
        );
        let outer = Delivery::begin(&a).expect("not revoked");
        let inner = Delivery::begin(&b).expect("not revoked");
        assert_eq!((own(&a), own(&b)), (1, 1));
        let elsewhere = {
            let a = Arc::clone(&a);
            std::thread::spawn(move || own(&a)).join().expect("thread")
        };
        assert_eq!(elsewhere, 0, "another thread is inside none");
        inner.end();
        assert_eq!((own(&a), own(&b)), (1, 0));
        drop(outer);
        assert_eq!(own(&a), 0);
        b.revoke();
        assert!(Delivery::begin(&b).is_none());
        assert!(matches!(Delivery::begin_timed(None), Ok(None)));
        assert!(Delivery::begin_timed(Some(&b)).is_err());
    }
}
