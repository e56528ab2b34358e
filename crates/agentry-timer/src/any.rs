//! [`EngineKind`] and [`AnyEngine`]: choosing an engine at run time without trait objects.

use std::fmt;
use std::str::FromStr;

use crate::engine::TimerEngine;
use crate::error::ParseEngineKindError;
use crate::heap::HeapEngine;
use crate::key::TimerKey;
use crate::list::ListEngine;
use crate::wheel::WheelEngine;

/// Names one of the engines, for configuration and benchmark tables.
///
/// # Example
///
/// ```
/// use agentry_timer::EngineKind;
///
/// let kind: EngineKind = "wheel".parse().unwrap();
/// assert_eq!(kind, EngineKind::Wheel);
/// assert_eq!(kind.to_string(), "wheel");
/// assert!("tree".parse::<EngineKind>().is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// [`HeapEngine`]: indexed binary heap, exact, O(log N).
    #[default]
    Heap,
    /// [`WheelEngine`]: hierarchical wheel, 1 ms tick, O(1).
    Wheel,
    /// [`ListEngine`]: sorted list, O(N) insert (benchmark baseline).
    List,
}

impl EngineKind {
    /// Every kind, in declaration order.
    pub const ALL: [Self; 3] = [Self::Heap, Self::Wheel, Self::List];

    /// The lowercase name: `heap`, `wheel` or `list`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Heap => "heap",
            Self::Wheel => "wheel",
            Self::List => "list",
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EngineKind {
    type Err = ParseEngineKindError;

    /// Parses a [`name`](Self::name), ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| ParseEngineKindError {
                input: s.to_owned(),
            })
    }
}

/// One of the engines, chosen at run time and dispatched statically (a `match`, no vtable).
///
/// # Example
///
/// ```
/// use agentry_timer::{AnyEngine, EngineKind, TimerEngine};
///
/// let mut engine = AnyEngine::with_capacity(EngineKind::Heap, 1024);
/// assert_eq!(engine.kind(), EngineKind::Heap);
/// let key = engine.insert(42, ());
/// assert_eq!(engine.next_deadline(), Some(42));
/// assert_eq!(engine.cancel(key), Some(()));
/// ```
#[derive(Clone, Debug)]
pub enum AnyEngine<T> {
    /// An indexed binary heap.
    Heap(HeapEngine<T>),
    /// A hierarchical timing wheel.
    Wheel(WheelEngine<T>),
    /// A sorted list.
    List(ListEngine<T>),
}

impl<T> AnyEngine<T> {
    /// An empty engine of `kind` (the wheel with its default 1 ms tick).
    #[must_use]
    pub fn new(kind: EngineKind) -> Self {
        Self::with_capacity(kind, 0)
    }

    /// An empty engine of `kind` that holds `capacity` timers before it allocates (their memory
    /// is committed here).
    #[must_use]
    pub fn with_capacity(kind: EngineKind, capacity: usize) -> Self {
        match kind {
            EngineKind::Heap => Self::Heap(HeapEngine::with_capacity(capacity)),
            EngineKind::Wheel => Self::Wheel(WheelEngine::with_capacity(capacity)),
            EngineKind::List => Self::List(ListEngine::with_capacity(capacity)),
        }
    }

    /// Which engine this is.
    #[must_use]
    pub fn kind(&self) -> EngineKind {
        match self {
            Self::Heap(_) => EngineKind::Heap,
            Self::Wheel(_) => EngineKind::Wheel,
            Self::List(_) => EngineKind::List,
        }
    }
}

impl<T> TimerEngine<T> for AnyEngine<T> {
    #[inline]
    fn insert(&mut self, deadline: u64, value: T) -> TimerKey {
        match self {
            Self::Heap(engine) => engine.insert(deadline, value),
            Self::Wheel(engine) => engine.insert(deadline, value),
            Self::List(engine) => engine.insert(deadline, value),
        }
    }

    #[inline]
    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        match self {
            Self::Heap(engine) => engine.cancel(key),
            Self::Wheel(engine) => engine.cancel(key),
            Self::List(engine) => engine.cancel(key),
        }
    }

    #[inline]
    fn next_deadline(&self) -> Option<u64> {
        match self {
            Self::Heap(engine) => engine.next_deadline(),
            Self::Wheel(engine) => engine.next_deadline(),
            Self::List(engine) => engine.next_deadline(),
        }
    }

    #[inline]
    fn expire(&mut self, now: u64, out: &mut Vec<(TimerKey, T)>) {
        match self {
            Self::Heap(engine) => engine.expire(now, out),
            Self::Wheel(engine) => engine.expire(now, out),
            Self::List(engine) => engine.expire(now, out),
        }
    }

    #[inline]
    fn len(&self) -> usize {
        match self {
            Self::Heap(engine) => engine.len(),
            Self::Wheel(engine) => engine.len(),
            Self::List(engine) => engine.len(),
        }
    }

    #[inline]
    fn drain(&mut self, out: &mut Vec<(TimerKey, T)>) {
        match self {
            Self::Heap(engine) => engine.drain(out),
            Self::Wheel(engine) => engine.drain(out),
            Self::List(engine) => engine.drain(out),
        }
    }
}

impl<T> From<HeapEngine<T>> for AnyEngine<T> {
    fn from(engine: HeapEngine<T>) -> Self {
        Self::Heap(engine)
    }
}

impl<T> From<WheelEngine<T>> for AnyEngine<T> {
    fn from(engine: WheelEngine<T>) -> Self {
        Self::Wheel(engine)
    }
}

impl<T> From<ListEngine<T>> for AnyEngine<T> {
    fn from(engine: ListEngine<T>) -> Self {
        Self::List(engine)
    }
}

#[cfg(test)]
mod tests;
