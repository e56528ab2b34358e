//! What the comparison is made of: the workloads with their parameters, the runtimes and the
//! implementations.

use std::time::Duration;

use crate::benches::skynet::skynet_agents;
use crate::benches::ttl::TtlParams;
use crate::harness::{PhaseSpec, Sample, Scale};

/// The workloads compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadId {
    /// A ring of N actors passing M tokens, each making a full circle.
    Ring,
    /// K actors addressed by index; P messages hop TTL times to random actors.
    Ttl,
    /// Two actors bouncing a message R times.
    Pingpong,
    /// A 10-ary tree of 10^D leaf actors summing their numbers up to the root.
    Skynet,
    /// T plain threads each sending S messages to one actor.
    FanIn,
}

impl WorkloadId {
    /// Every workload, in run order.
    pub const ALL: [WorkloadId; 5] = [
        Self::Ring,
        Self::Ttl,
        Self::Pingpong,
        Self::Skynet,
        Self::FanIn,
    ];

    /// The name on a child's command line and of the measured phase.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Ring => "ring",
            Self::Ttl => "ttl",
            Self::Pingpong => "pingpong",
            Self::Skynet => "skynet",
            Self::FanIn => "fan_in",
        }
    }

    /// The workload named `name`.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|w| w.name() == name)
    }
}

/// A workload with its parameters (ground rule 1 of `compare`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Workload {
    /// `n` actors in a ring, `m` tokens, each token `n` hops (`n·m` messages).
    Ring {
        /// N: actors.
        n: u64,
        /// M: tokens.
        m: u64,
    },
    /// K actors, P messages, TTL hops each (P·TTL messages).
    Ttl(TtlParams),
    /// R round trips (2·R messages).
    Pingpong {
        /// R: round trips.
        rounds: u64,
    },
    /// A tree of depth D: 10^D leaves, (10^(D+1) − 1) / 9 actors.
    Skynet {
        /// D: depth below the root.
        depth: u32,
    },
    /// T senders × S messages.
    FanIn {
        /// T: sending threads.
        senders: u64,
        /// S: messages per sender.
        per_sender: u64,
    },
}

impl Workload {
    /// The parameters of workload `id` at `scale` (ground rule 6 of `compare`).
    pub(crate) fn at(id: WorkloadId, scale: Scale) -> Self {
        match id {
            WorkloadId::Ring => Self::Ring {
                n: scale.pick(50, 1_000, 10_000),
                m: scale.pick(10, 100, 100),
            },
            WorkloadId::Ttl => Self::Ttl(TtlParams {
                objects: scale.pick(16, 1024, 1024),
                messages: scale.pick(16, 1024, 1024),
                ttl: scale.pick(16, 256, 4096),
            }),
            WorkloadId::Pingpong => Self::Pingpong {
                rounds: scale.pick(100, 20_000, 200_000),
            },
            WorkloadId::Skynet => Self::Skynet {
                depth: scale.pick(2, 5, 6),
            },
            WorkloadId::FanIn => Self::FanIn {
                senders: scale.pick(4, 100, 100),
                per_sender: scale.pick(100, 1_000, 10_000),
            },
        }
    }

    /// Which workload this is.
    pub(crate) fn id(&self) -> WorkloadId {
        match self {
            Self::Ring { .. } => WorkloadId::Ring,
            Self::Ttl(_) => WorkloadId::Ttl,
            Self::Pingpong { .. } => WorkloadId::Pingpong,
            Self::Skynet { .. } => WorkloadId::Skynet,
            Self::FanIn { .. } => WorkloadId::FanIn,
        }
    }

    /// The parameters, in printing order.
    pub(crate) fn params(&self) -> Vec<(&'static str, u64)> {
        match *self {
            Self::Ring { n, m } => vec![("N", n), ("M", m)],
            Self::Ttl(p) => vec![
                ("K", p.objects),
                ("P", p.messages),
                ("TTL", u64::from(p.ttl)),
            ],
            Self::Pingpong { rounds } => vec![("R", rounds)],
            Self::Skynet { depth } => vec![
                ("leaves", 10u64.pow(depth)),
                ("agents", skynet_agents(depth)),
            ],
            Self::FanIn {
                senders,
                per_sender,
            } => vec![("T", senders), ("S", per_sender)],
        }
    }

    /// The parameters as a case label shows them: `N=1000 M=100`.
    pub(crate) fn label(&self) -> String {
        let words: Vec<String> = self
            .params()
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        words.join(" ")
    }

    /// The timed phase: messages, or agents for skynet (whose figure is its wall time).
    pub(crate) fn phase(&self) -> PhaseSpec {
        match self {
            Self::Skynet { .. } => PhaseSpec::agents(self.id().name()),
            _ => PhaseSpec::msgs(self.id().name()),
        }
    }

    /// Units of the phase per run: messages handled, or actors for skynet.
    pub(crate) fn units(&self) -> u64 {
        match *self {
            Self::Ring { n, m } => n * m,
            Self::Ttl(p) => p.handled(),
            Self::Pingpong { rounds } => 2 * rounds,
            Self::Skynet { depth } => skynet_agents(depth),
            Self::FanIn {
                senders,
                per_sender,
            } => senders * per_sender,
        }
    }

    /// The sample of a run that took `elapsed` (pingpong adds its round-trip time).
    pub(crate) fn sample(&self, elapsed: Duration) -> Sample {
        let sample = Sample::new().phase(self.id().name(), elapsed, self.units());
        match *self {
            Self::Pingpong { rounds } => {
                sample.metric("rtt_ns", elapsed.as_nanos() as f64 / rounds as f64)
            }
            _ => sample,
        }
    }
}

/// The runtime an implementation runs on (ground rule 2 of `compare`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// Every actor on one thread.
    Single,
    /// The implementation's multi-threaded runtime, 2 threads.
    Multi,
}

impl Runtime {
    /// Both runtimes, in run order.
    pub const ALL: [Runtime; 2] = [Self::Single, Self::Multi];

    /// The name on a child's command line.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Single => "single",
            Self::Multi => "multi",
        }
    }

    /// The runtime named `name`.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.name() == name)
    }

    /// How case labels show it.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Single => "single-thread",
            Self::Multi => "multi-thread",
        }
    }

    /// Threads running actors (the multi-thread runtimes get one per core of the 2-core
    /// machine the targets are set for).
    #[must_use]
    pub fn threads(self) -> usize {
        match self {
            Self::Single => 1,
            Self::Multi => 2,
        }
    }
}

/// An implementation of the workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Impl {
    /// This project.
    Agentry,
    /// actix 0.13.
    #[cfg(feature = "peers")]
    Actix,
    /// ractor 0.16.
    #[cfg(feature = "peers")]
    Ractor,
    /// kameo 0.22.
    #[cfg(feature = "peers")]
    Kameo,
}

impl Impl {
    /// Every implementation built in, agentry first.
    pub const ALL: &'static [Impl] = &[
        Self::Agentry,
        #[cfg(feature = "peers")]
        Self::Actix,
        #[cfg(feature = "peers")]
        Self::Ractor,
        #[cfg(feature = "peers")]
        Self::Kameo,
    ];

    /// The implementation name of its cases and on a child's command line.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Agentry => "agentry",
            #[cfg(feature = "peers")]
            Self::Actix => "actix",
            #[cfg(feature = "peers")]
            Self::Ractor => "ractor",
            #[cfg(feature = "peers")]
            Self::Kameo => "kameo",
        }
    }

    /// The implementation named `name`.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|i| i.name() == name)
    }

    /// What runs the actors on `runtime` (the dispatcher column).
    #[must_use]
    pub fn dispatcher(self, runtime: Runtime) -> &'static str {
        match (self, runtime) {
            (Self::Agentry, Runtime::Single) => "one_thread",
            (Self::Agentry, Runtime::Multi) => "thread_pool",
            #[cfg(feature = "peers")]
            (Self::Actix, Runtime::Single) => "System",
            #[cfg(feature = "peers")]
            (Self::Actix, Runtime::Multi) => "2 Arbiters",
            #[cfg(feature = "peers")]
            (Self::Ractor | Self::Kameo, Runtime::Single) => "tokio current_thread",
            #[cfg(feature = "peers")]
            (Self::Ractor | Self::Kameo, Runtime::Multi) => "tokio multi_thread",
        }
    }

    /// The peer defaults changed for the comparison, and why (printed with the results).
    #[must_use]
    pub fn notes(self, runtime: Runtime) -> &'static [&'static str] {
        match (self, runtime) {
            (Self::Agentry, _) => &[],
            #[cfg(feature = "peers")]
            (Self::Actix, Runtime::Single) => &[ACTIX_DO_SEND],
            #[cfg(feature = "peers")]
            (Self::Actix, Runtime::Multi) => &[ACTIX_DO_SEND, ACTIX_ARBITERS],
            #[cfg(feature = "peers")]
            (Self::Ractor, _) => &[],
            #[cfg(feature = "peers")]
            (Self::Kameo, _) => &[KAMEO_UNBOUNDED],
        }
    }
}

#[cfg(feature = "peers")]
const ACTIX_DO_SEND: &str = "do_send: queued past the default mailbox capacity of 16 \
                             (try_send fails when full, send waits for each reply)";
#[cfg(feature = "peers")]
const ACTIX_ARBITERS: &str = "actors spread over 2 Arbiters in contiguous blocks \
                              (actix has no multi-threaded executor)";
#[cfg(feature = "peers")]
const KAMEO_UNBOUNDED: &str = "unbounded mailboxes (the default bounded(64) deadlocks \
                               when an actor tells itself, or a cycle of full mailboxes)";
