//! Priorities: of agents, used by the priority dispatchers
//! ([`PrioOneThreadDispatcher`](crate::disp::PrioOneThreadDispatcher); other dispatchers
//! ignore them), and of subscriptions — event priorities, honoured by every dispatcher inside
//! the agent's queue ([`Define::event_priority`](crate::Define::event_priority)).

/// One of eight priorities, `P0` (lowest, the default) to `P7` (highest). Set with
/// [`Define::priority`](crate::Define::priority) (the agent's) and
/// [`Define::event_priority`](crate::Define::event_priority) (a subscription's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Priority {
    /// The lowest priority (the default).
    #[default]
    P0,
    /// Priority 1.
    P1,
    /// Priority 2.
    P2,
    /// Priority 3.
    P3,
    /// Priority 4.
    P4,
    /// Priority 5.
    P5,
    /// Priority 6.
    P6,
    /// The highest priority.
    P7,
}

impl Priority {
    /// Every priority, lowest first.
    pub const ALL: [Priority; 8] = [
        Priority::P0,
        Priority::P1,
        Priority::P2,
        Priority::P3,
        Priority::P4,
        Priority::P5,
        Priority::P6,
        Priority::P7,
    ];

    /// 0 for `P0` … 7 for `P7`.
    pub fn index(self) -> usize {
        self as usize
    }
}
