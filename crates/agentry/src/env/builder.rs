//! `EnvBuilder`: environment settings.

use super::{Config, Env};
use crate::agent::cell::Observe;
use crate::disp::{DefaultDispatcher, Driver};
use crate::error::BuildError;
use crate::panic_reaction::PanicReaction;
use crate::stats::HandlerSampling;
use crate::timer::{Clock, EngineKind};
use crate::trace::context::Propagation;
use crate::trace::{ContextPropagation, TraceFilter, TraceSink, Tracer};
use std::fmt;
use std::sync::Arc;

/// Settings of a new environment.
///
/// ```
/// use agentry::{Env, PanicReaction, timer::EngineKind};
/// let env = Env::builder()
///     .panic_reaction(PanicReaction::ShutdownEnv)
///     .autoshutdown(false)
///     .timer_engine(EngineKind::Wheel)
///     .build()
///     .expect("env");
/// env.handle().stop();
/// env.run();
/// ```
#[derive(Debug)]
pub struct EnvBuilder {
    panic_reaction: PanicReaction,
    autoshutdown: bool,
    timer_engine: EngineKind,
    clock: Clock,
    tracer: Option<TracerSlot>,
    trace_filter: TraceFilter,
    handler_time: bool,
    handler_sampling: HandlerSampling,
    queue_depth: bool,
    tracing_spans: bool,
    propagation: Option<Propagation>,
    default_dispatcher: DefaultDispatcher,
}

/// The message tracer set on a builder.
#[derive(Clone)]
struct TracerSlot(Arc<dyn Tracer>);

impl fmt::Debug for TracerSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tracer(..)")
    }
}

impl Default for EnvBuilder {
    fn default() -> Self {
        EnvBuilder {
            panic_reaction: PanicReaction::DeregisterCoop,
            autoshutdown: true,
            timer_engine: EngineKind::Heap,
            clock: Clock::System,
            tracer: None,
            trace_filter: TraceFilter::new(),
            handler_time: false,
            handler_sampling: HandlerSampling::DEFAULT,
            queue_depth: false,
            tracing_spans: false,
            propagation: None,
            default_dispatcher: DefaultDispatcher::OneThread,
        }
    }
}

impl EnvBuilder {
    /// The panic reaction of coops and agents that set none (default: `DeregisterCoop`).
    pub fn panic_reaction(&mut self, reaction: PanicReaction) -> &mut Self {
        self.panic_reaction = reaction;
        self
    }

    /// What agents given no dispatcher run on (default: one `one_thread` dispatcher). It is
    /// started when the first agent needs it; agents registered from a handler with
    /// [`Ctx::child_coop`](crate::Ctx::child_coop) run on their parent agent's dispatcher
    /// instead.
    pub fn default_dispatcher(&mut self, default: DefaultDispatcher) -> &mut Self {
        self.default_dispatcher = default;
        self
    }

    /// Stop when the last coop is deregistered, or at `run()` if none was ever registered
    /// (default: true).
    pub fn autoshutdown(&mut self, on: bool) -> &mut Self {
        self.autoshutdown = on;
        self
    }

    /// The engine of the environment's timers (default: the indexed heap — exact deadlines,
    /// O(log N); the wheel is O(1) but rounds deadlines up to 1 ms, for very many timeouts).
    pub fn timer_engine(&mut self, engine: EngineKind) -> &mut Self {
        self.timer_engine = engine;
        self
    }

    /// The clock of the environment's timers (default: the system clock; a
    /// [`ManualClock`](crate::timer::ManualClock) makes timers deterministic in tests).
    pub fn clock(&mut self, clock: Clock) -> &mut Self {
        self.clock = clock;
        self
    }

    /// Builds the environment (its default dispatcher and its timer thread start when first
    /// needed). Fails with [`BuildError::InvalidSetting`] if the default dispatcher is a pool
    /// of no threads.
    pub fn build(&mut self) -> Result<Env, BuildError> {
        Env::from_config(self.config())
    }

    /// Builds an environment whose default dispatcher is driven by the calling thread through
    /// the returned [`Driver`] (the testing kit); `wake` is its wake callback.
    pub(crate) fn build_driven(
        &mut self,
        wake: impl Fn() + Send + Sync + 'static,
    ) -> Result<(Env, Driver), BuildError> {
        Env::from_config_driven(self.config(), wake)
    }

    /// Turns message delivery tracing on (see [`trace`](crate::trace)): `tracer` receives a
    /// record of each message's fate that passes the filter
    /// ([`msg_trace_filter`](Self::msg_trace_filter); default: every record). Off by default,
    /// and then free.
    pub fn msg_tracing(&mut self, tracer: impl Tracer) -> &mut Self {
        self.tracer = Some(TracerSlot(Arc::new(tracer)));
        self
    }

    /// The initial filter of message tracing (replace it later with
    /// [`EnvHandle::set_msg_trace_filter`](crate::EnvHandle::set_msg_trace_filter)).
    pub fn msg_trace_filter(&mut self, filter: TraceFilter) -> &mut Self {
        self.trace_filter = filter;
        self
    }

    /// Measures the time every agent's handlers take (`AgentStats::handler_time`): one run in
    /// [`handler_time_sampling`](Self::handler_time_sampling) is timed (by default one in 256,
    /// at pseudo-random intervals; two clock reads per timed run). Off by default; an agent
    /// can turn it on for itself with
    /// [`Define::measure_handler_time`](crate::Define::measure_handler_time).
    pub fn handler_time(&mut self, on: bool) -> &mut Self {
        self.handler_time = on;
        self
    }

    /// How many handler runs of a timed agent are timed: one in `sampling.every()` on average
    /// ([`HandlerSampling::EVERY_RUN`] times them all: exact counts, two clock reads per
    /// message). The histogram then describes the timed runs — their distribution, and so
    /// percentiles and the mean, estimate every run's —, and its count is theirs, not the
    /// number of messages handled (that is `AgentStats::handled`).
    pub fn handler_time_sampling(&mut self, sampling: HandlerSampling) -> &mut Self {
        self.handler_sampling = sampling;
        self
    }

    /// Tracks how many messages wait in every agent's queue (`AgentStats::queue_depth`; an
    /// atomic increment per send). Off by default; an agent can turn it on for itself with
    /// [`Define::track_queue_depth`](crate::Define::track_queue_depth).
    pub fn queue_depth(&mut self, on: bool) -> &mut Self {
        self.queue_depth = on;
        self
    }

    /// Enters a `tracing` span (target `agentry::delivery`, level DEBUG, named `handle`, with
    /// the agent, its type, the message type and the mbox) around every handler. Off by
    /// default, and then free.
    pub fn tracing_spans(&mut self, on: bool) -> &mut Self {
        self.tracing_spans = on;
        self
    }

    /// Carries trace context across hops (see [`trace::context`](crate::trace) and
    /// `agentry-otel`, which implements `hook` with OpenTelemetry): every message sent from
    /// inside a span carries the span's context — to an agent on any dispatcher, through a
    /// timer, a remote gateway —, and its handler runs inside the span `hook` makes, a child of
    /// it. Off by default, and then free.
    pub fn trace_context(&mut self, hook: impl ContextPropagation) -> &mut Self {
        self.propagation = Some(Propagation(Arc::new(hook)));
        self
    }

    fn config(&self) -> Config {
        Config {
            panic_reaction: self.panic_reaction,
            autoshutdown: self.autoshutdown,
            timer_engine: self.timer_engine,
            clock: self.clock.clone(),
            observe: Observe {
                trace: self
                    .tracer
                    .as_ref()
                    .map(|t| Arc::new(TraceSink::new(Arc::clone(&t.0), self.trace_filter.clone()))),
                time_handlers: self.handler_time,
                spans: self.tracing_spans,
            },
            queue_depth: self.queue_depth,
            handler_sampling: self.handler_sampling,
            default_dispatcher: self.default_dispatcher,
            propagation: self.propagation.clone(),
        }
    }
}
