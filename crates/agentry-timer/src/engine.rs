//! [`TimerEngine`]: the contract every engine keeps.

use crate::key::TimerKey;

/// A store of timers ordered by deadline, driven by a caller that owns the clock.
///
/// # Contract
///
/// - **Time is passed in.** A deadline and `now` are `u64` nanoseconds since an origin the
///   caller picks (for example the `Instant` the runtime started). Engines never read a clock,
///   so tests drive them with virtual time.
/// - **Never early.** [`expire`](Self::expire)`(now, ..)` fires a timer only if its *effective
///   deadline* is `<= now`. For the heap and the list the effective deadline is the deadline;
///   the wheel rounds it up to its tick (see [`WheelEngine`](crate::WheelEngine)).
/// - **Order.** One `expire` call appends the timers it fires in effective-deadline order; ties
///   fire in insertion order.
/// - **`now` may go backwards**: an earlier `now` than a previous call's fires only what is due
///   at that earlier `now`. Drivers normally pass a monotonic clock.
/// - **Keys are generational.** After a timer fires, is cancelled or is drained, its key is
///   stale: [`cancel`](Self::cancel) returns `None` for it, even once the slot is reused.
/// - **No allocation in steady state.** Slots and vectors are reused; only growing the live
///   population beyond the previous high-water mark (or `out`'s capacity) allocates.
/// - **Capacity.** At most `u32::MAX - 1` timers may be live at once; inserting more panics.
/// - **Locking is the caller's business**, as in the Asterisk scheduler: engines are plain
///   `&mut self` data structures.
///
/// # Example
///
/// A driver loop over any engine:
///
/// ```
/// use agentry_timer::{AnyEngine, EngineKind, TimerEngine};
///
/// fn run<E: TimerEngine<&'static str>>(engine: &mut E) -> Vec<&'static str> {
///     let mut out = Vec::new();
///     let mut fired = Vec::new();
///     // A real driver sleeps until `next_deadline()`; here virtual time jumps there.
///     while let Some(now) = engine.next_deadline() {
///         engine.expire(now, &mut out);
///         fired.extend(out.drain(..).map(|(_key, value)| value));
///     }
///     fired
/// }
///
/// for kind in EngineKind::ALL {
///     let mut engine = AnyEngine::new(kind);
///     engine.insert(3_000_000, "late");
///     let key = engine.insert(2_000_000, "cancelled");
///     engine.insert(1_000_000, "early");
///     engine.insert(1_000_000, "early, inserted second");
///     assert_eq!(engine.cancel(key), Some("cancelled"));
///     assert_eq!(engine.len(), 3);
///     assert_eq!(run(&mut engine), ["early", "early, inserted second", "late"]);
///     assert!(engine.is_empty());
/// }
/// ```
pub trait TimerEngine<T> {
    /// Schedules `value` to fire at `deadline` and returns the key that cancels it.
    ///
    /// A deadline at or before the last `now` fires at the next [`expire`](Self::expire).
    fn insert(&mut self, deadline: u64, value: T) -> TimerKey;

    /// Cancels the timer named by `key` and gives its value back.
    ///
    /// Returns `None` if the timer already fired, was cancelled or drained, or if `key` is stale.
    fn cancel(&mut self, key: TimerKey) -> Option<T>;

    /// A time at which a driver should call [`expire`](Self::expire) next, or `None` when empty.
    ///
    /// It is never later than the earliest `now` at which `expire` would fire something, so a
    /// driver may sleep until it. The heap and the list return the earliest deadline exactly; the
    /// wheel may return an earlier time (see [`WheelEngine`](crate::WheelEngine)).
    fn next_deadline(&self) -> Option<u64>;

    /// Removes every timer due at `now` and appends it to `out`, in deadline order (ties in
    /// insertion order).
    fn expire(&mut self, now: u64, out: &mut Vec<(TimerKey, T)>);

    /// The number of live timers.
    fn len(&self) -> usize;

    /// Whether no timer is live.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every timer, in no particular order, and appends it to `out` (for shutdown).
    /// Every drained key is stale afterwards.
    fn drain(&mut self, out: &mut Vec<(TimerKey, T)>);
}
