//! `Select`: wait on several chains at once.

use super::chain::{Chain, Take};
use super::handlers::Handlers;
use super::waiter::Waiter;
use super::{Mchain, deadline_after};
use crate::error::SelectError;
use crate::message::payload::Payload;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Waits on several chains and handles the first message any of them has, with that chain's
/// [`Handlers`].
///
/// Chains are looked at round robin, starting after the one served last, so a busy chain does
/// not starve the others. A closed and empty chain is skipped; when every chain is, `wait`
/// fails with [`SelectError::AllClosed`].
///
/// ```
/// use agentry::mchain::{Handlers, Mchain, Select};
/// use agentry::SelectError;
/// use std::time::Duration;
///
/// struct Reply(u32);
/// struct Alarm;
/// enum Event { Reply(u32), Alarm }
///
/// let replies = Mchain::unbounded();
/// let alarms = Mchain::unbounded();
/// replies.send(Reply(1));
/// alarms.send(Alarm);
///
/// let mut on_reply = Handlers::new();
/// on_reply.on(|Reply(n): Reply| Event::Reply(n))?;
/// let mut on_alarm = Handlers::new();
/// on_alarm.on(|_: Alarm| Event::Alarm)?;
/// let mut select = Select::new();
/// select.case(&replies, on_reply).case(&alarms, on_alarm);
///
/// assert!(matches!(select.wait(Duration::from_secs(1)), Ok(Event::Reply(1))));
/// assert!(matches!(select.wait(Duration::from_secs(1)), Ok(Event::Alarm)));
/// assert!(matches!(select.wait(Duration::ZERO), Err(SelectError::Timeout)));
/// # Ok::<(), agentry::MchainError>(())
/// ```
pub struct Select<'h, R> {
    cases: Vec<(Mchain, Handlers<'h, R>)>,
    /// The case to look at first next time (the one after the last served).
    next: usize,
}

impl<'h, R> Select<'h, R> {
    /// A select without cases.
    pub fn new() -> Self {
        Select {
            cases: Vec::new(),
            next: 0,
        }
    }

    /// Adds a chain and the handlers for its messages.
    pub fn case(&mut self, chain: &Mchain, handlers: Handlers<'h, R>) -> &mut Self {
        self.cases.push((chain.clone(), handlers));
        self
    }

    /// Waits up to `timeout` (in all) for a message one of the cases has a closure for, runs
    /// it and returns its result. Messages without a closure are counted as unhandled (in
    /// their chain) and dropped on the way. [`SelectError::NoChains`] without cases.
    pub fn wait(&mut self, timeout: Duration) -> Result<R, SelectError> {
        let deadline = deadline_after(timeout);
        loop {
            let chains: Vec<&Chain> = self.cases.iter().map(|(c, _)| &*c.0).collect();
            let (index, payload) = take_any(&chains, self.next, deadline)?;
            self.next = (index + 1) % self.cases.len();
            let (chain, handlers) = &mut self.cases[index];
            match handlers.dispatch(payload) {
                Ok(result) => return Ok(result),
                Err(unhandled) => chain.0.count_unhandled(unhandled),
            }
        }
    }
}

impl<R> Default for Select<'_, R> {
    fn default() -> Self {
        Select::new()
    }
}

impl<R> fmt::Debug for Select<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Select")
            .field(
                "chains",
                &self.cases.iter().map(|(c, _)| c).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// Takes the first message of `chains`, looking at them from `start` round, waiting until
/// `deadline` (`None`: no deadline). Returns the index of the chain it came from.
pub(super) fn take_any(
    chains: &[&Chain],
    start: usize,
    deadline: Option<Instant>,
) -> Result<(usize, Payload), SelectError> {
    let n = chains.len();
    if n == 0 {
        return Err(SelectError::NoChains);
    }
    // Fast path: a message is already there (no allocation, no registration).
    let mut open = 0;
    for k in 0..n {
        let index = (start + k) % n;
        match chains[index].take(None) {
            Take::Message(payload) => return Ok((index, payload)),
            Take::Empty => open += 1,
            Take::Closed => {}
        }
    }
    if open == 0 {
        return Err(SelectError::AllClosed);
    }
    if deadline.is_some_and(|d| d <= Instant::now()) {
        return Err(SelectError::Timeout);
    }
    let waiter = Waiter::new();
    let forget_all = |waiter: &Arc<Waiter>| {
        for c in chains {
            c.forget(waiter);
        }
    };
    let mut timed_out = false;
    loop {
        let mut open = 0;
        for k in 0..n {
            let index = (start + k) % n;
            // After the deadline: a last look, without registering.
            let register = (!timed_out).then_some(&waiter);
            match chains[index].take(register) {
                Take::Message(payload) => {
                    forget_all(&waiter);
                    return Ok((index, payload));
                }
                Take::Empty => open += 1,
                Take::Closed => {}
            }
        }
        if open == 0 {
            forget_all(&waiter);
            return Err(SelectError::AllClosed);
        }
        if timed_out {
            forget_all(&waiter);
            return Err(SelectError::Timeout);
        }
        timed_out = !waiter.wait(deadline);
    }
}
