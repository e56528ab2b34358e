//! What a case declares about each timed phase: its name, what its units are, and the figure
//! the seed document published for it.

/// What one unit of a phase is, which decides the derived figures reported for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Messages: reported as msgs/s and ns/msg.
    Msg,
    /// Operations (timer add, cancel, …): reported as ops/s and ns/op.
    Op,
    /// Agents (registration): reported as agents/s and ns/agent.
    Agent,
}

impl Unit {
    /// The singular noun: `msg`, `op`, `agent` (used as `ns/msg`).
    #[must_use]
    pub fn noun(self) -> &'static str {
        match self {
            Self::Msg => "msg",
            Self::Op => "op",
            Self::Agent => "agent",
        }
    }

    /// The plural used in JSON field names: `msgs`, `ops`, `agents` (as in `msgs_per_sec`).
    #[must_use]
    pub fn plural(self) -> &'static str {
        match self {
            Self::Msg => "msgs",
            Self::Op => "ops",
            Self::Agent => "agents",
        }
    }

    /// The JSON field holding the unit count: `messages`, `operations`, `agents`.
    #[must_use]
    pub fn count_field(self) -> &'static str {
        match self {
            Self::Msg => "messages",
            Self::Op => "operations",
            Self::Agent => "agents",
        }
    }
}

/// The declaration of one timed phase of a case.
///
/// ```
/// use agentry_bench::harness::{PhaseSpec, Unit};
/// let send = PhaseSpec::msgs("send").seed(242_570.0);
/// assert_eq!(send.unit, Unit::Msg);
/// assert_eq!(send.seed_per_sec, Some(242_570.0));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseSpec {
    /// The phase name, matched against the names in each [`Sample`](crate::harness::Sample).
    pub name: String,
    /// What the phase counts.
    pub unit: Unit,
    /// The seed document's figure for this phase, in units per second.
    pub seed_per_sec: Option<f64>,
}

impl PhaseSpec {
    /// A phase counting units of `unit`, with no seed figure.
    #[must_use]
    pub fn new(name: impl Into<String>, unit: Unit) -> Self {
        Self {
            name: name.into(),
            unit,
            seed_per_sec: None,
        }
    }

    /// A phase counting messages.
    #[must_use]
    pub fn msgs(name: impl Into<String>) -> Self {
        Self::new(name, Unit::Msg)
    }

    /// A phase counting operations (ns/op is reported instead of ns/msg).
    #[must_use]
    pub fn ops(name: impl Into<String>) -> Self {
        Self::new(name, Unit::Op)
    }

    /// A phase counting agents (registration: agents/s).
    #[must_use]
    pub fn agents(name: impl Into<String>) -> Self {
        Self::new(name, Unit::Agent)
    }

    /// Sets the seed document's figure, in units per second.
    ///
    /// A seed that publishes a time instead (the Asterisk table: "add of 1M: 2.7 s") is given
    /// as a rate: `1_000_000.0 / 2.7`.
    #[must_use]
    pub fn seed(mut self, per_sec: f64) -> Self {
        self.seed_per_sec = Some(per_sec);
        self
    }
}
