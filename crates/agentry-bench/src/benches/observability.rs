//! `observability` (not a seed benchmark): what the operator's tools cost.
//!
//! - `send_process` (N messages) and `ring` (one_thread, N agents, M tokens), each three
//!   ways: nothing on (`agentry`), a Prometheus exporter alive and rendered every 100 ms by a
//!   thread of its own (`+metrics`), and that plus queue depth (`+depth`), handler time
//!   (`+time`: the default sampling, one run in 256 timed) or both on for every agent, and
//!   handler time with every run timed (`+time-every-run`: two clock reads per message). Each
//!   reports its ratio to nothing on (target ≥ 0.95 with metrics on). Beside the wall time
//!   of the processing (`process`) and of the ring (`ring`), each reports the CPU time all
//!   the process's threads used over the same window (`process cpu`, `ring cpu`: it counts
//!   the exporter's scrapes too, and does not grow while other processes hold the CPU, so its
//!   ratios hold on a loaded machine where the wall-time ratios swing by ±25 %).
//!   And two ways with a trace-context hook installed (`EnvBuilder::trace_context`; no
//!   metrics): `+trace-hook`, a hook whose sender is in no span, so messages carry nothing
//!   (the cost of the hook being there), and `+trace`, a hook that reports a context for every
//!   send, so every message carries one and every handler is asked for its span (Agentry's
//!   own cost of carrying context: the hook is a stand-in that returns a fixed context and
//!   `Span::none()`; a tracing backend's cost per span comes on top and is its own).
//! - `inspector`: an environment of N idle agents; the time to take one snapshot of them (a
//!   page of 100 ordered by handled count), and the CPU the process uses per second of wall
//!   time with one event-stream client connected at a 1 s tick, against the same window
//!   without the inspector (CPU time: the process's threads' `schedstat`, as `idle` reads it).
//!
//! Every case verifies its result: the workloads their sums and counts (and `+trace` that
//! every message's handler was asked for a span, `+trace-hook` that none was); the inspector
//! case that every snapshot saw all N agents and that the client received an event per tick.

use super::idle::process_cpu_time;
use super::ring::run_ring_in;
use super::send_process::run_send_process;
use super::support::{CpuClock, Placement, setup};
use crate::harness::{BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, ensure};
use agentry::snapshot::{SnapshotQuery, SortBy};
use agentry::trace::{ContextPropagation, HandlerInfo, TraceContext};
use agentry::{Agent, Env, EnvHandle, HandlerSampling};
use agentry_metrics::{Metrics, inspector::Inspector};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub static BENCH: BenchDef = BenchDef {
    id: "observability",
    description: "send_process and ring with metrics off / on / + queue depth / + handler time (sampled) / + both / + handler time of every run, and with a trace-context hook idle / carrying a context; the inspector's cost on N agents",
    cases,
    charts: &[ChartKind::Bars],
};

/// How often the exporter is rendered while a workload runs.
const SCRAPE_EVERY: Duration = Duration::from_millis(100);

/// What is on while a workload runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Observed {
    Nothing,
    Metrics,
    MetricsDepth,
    MetricsTime,
    MetricsDepthTime,
    MetricsTimeEveryRun,
    TraceHook,
    Trace,
}

/// Every variant, in the order the cases run.
const VARIANTS: [Observed; 8] = [
    Observed::Nothing,
    Observed::Metrics,
    Observed::MetricsDepth,
    Observed::MetricsTime,
    Observed::MetricsDepthTime,
    Observed::MetricsTimeEveryRun,
    Observed::TraceHook,
    Observed::Trace,
];

/// The stand-in trace-context hook: reports `context` as every sender's, counts the
/// handler spans it is asked for and gives none.
struct FixedContext {
    context: Option<TraceContext>,
    spans: Arc<AtomicU64>,
}

impl ContextPropagation for FixedContext {
    fn current(&self) -> Option<TraceContext> {
        self.context
    }
    fn handler_span(&self, _: &TraceContext, _: &HandlerInfo) -> tracing::Span {
        self.spans.fetch_add(1, Ordering::Relaxed);
        tracing::Span::none()
    }
}

/// What runs beside a workload and is checked after it.
struct Observers {
    scraper: Option<Scraper>,
    /// The handler spans the trace-context hook was asked for, and how many are expected
    /// per message (1 with `+trace`, 0 with `+trace-hook`).
    spans: Option<(Arc<AtomicU64>, u64)>,
    /// With handler time on: the environment (its counters outlive it) and the sampling rate.
    timed: Option<(EnvHandle, HandlerSampling)>,
}

impl Observers {
    /// Checks the scraper scraped; with a hook, that every one of `messages` was (or none
    /// was) handled in a span asked for; with handler time, that one run in the sampling rate
    /// was timed (every run: all of them, and the workload's closing request).
    fn check(self, messages: u64) -> Result<(), BenchError> {
        check_scraper(self.scraper)?;
        if let Some((env, sampling)) = self.timed {
            let timed: u64 = env
                .agent_type_stats()
                .iter()
                .filter_map(|t| t.totals.handler_time.value())
                .map(|t| t.count())
                .sum();
            let every = u64::from(sampling.every());
            let expected = messages / every;
            // A sample: within five standard deviations of a Poisson count (the intervals are
            // uniform around the rate, so the true spread is smaller); every run: exact, give
            // or take the workload's closing messages.
            let slack = if every == 1 {
                2
            } else {
                5 * expected.isqrt() + 5
            };
            ensure(
                timed.abs_diff(expected) <= slack,
                format!(
                    "{timed} handler runs timed for {messages} messages (1 in {}: ~{expected})",
                    sampling.every()
                ),
            )?;
        }
        if let Some((spans, per_message)) = self.spans {
            let asked = spans.load(Ordering::Relaxed);
            ensure(
                asked == messages * per_message,
                format!("{asked} handler spans asked for {messages} messages (x{per_message})"),
            )?;
        }
        Ok(())
    }
}

impl Observed {
    fn impl_name(self) -> &'static str {
        match self {
            Observed::Nothing => "agentry",
            Observed::Metrics => "agentry+metrics",
            Observed::MetricsDepth => "agentry+metrics+depth",
            Observed::MetricsTime => "agentry+metrics+time",
            Observed::MetricsDepthTime => "agentry+metrics+depth+time",
            Observed::MetricsTimeEveryRun => "agentry+metrics+time-every-run",
            Observed::TraceHook => "agentry+trace-hook",
            Observed::Trace => "agentry+trace",
        }
    }

    /// The environment, and what observes it (the scraper renders its exporter until
    /// dropped).
    fn env(self) -> Result<(Env, Observers), BenchError> {
        let depth = matches!(self, Observed::MetricsDepth | Observed::MetricsDepthTime);
        let time = matches!(
            self,
            Observed::MetricsTime | Observed::MetricsDepthTime | Observed::MetricsTimeEveryRun
        );
        let sampling = if self == Observed::MetricsTimeEveryRun {
            HandlerSampling::EVERY_RUN
        } else {
            HandlerSampling::DEFAULT
        };
        let mut builder = Env::builder();
        builder
            .queue_depth(depth)
            .handler_time(time)
            .handler_time_sampling(sampling);
        let spans = match self {
            Observed::TraceHook | Observed::Trace => {
                let spans = Arc::new(AtomicU64::new(0));
                let traced = self == Observed::Trace;
                builder.trace_context(FixedContext {
                    context: traced
                        .then(|| TraceContext::new([7; 16], [9; 8], 1))
                        .flatten(),
                    spans: Arc::clone(&spans),
                });
                Some((spans, u64::from(traced)))
            }
            _ => None,
        };
        let env = builder.build().map_err(setup("build the environment"))?;
        let metrics = !matches!(
            self,
            Observed::Nothing | Observed::TraceHook | Observed::Trace
        );
        let scraper = metrics.then(|| Scraper::start(Metrics::new(env.handle())));
        let timed = time.then(|| (env.handle().clone(), sampling));
        Ok((
            env,
            Observers {
                scraper,
                spans,
                timed,
            },
        ))
    }
}

/// A thread that renders an exporter every [`SCRAPE_EVERY`] until dropped.
struct Scraper {
    stop: Arc<AtomicBool>,
    scrapes: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Scraper {
    fn start(metrics: Metrics) -> Scraper {
        let stop = Arc::new(AtomicBool::new(false));
        let scrapes = Arc::new(AtomicU64::new(0));
        let thread = std::thread::spawn({
            let (stop, scrapes) = (Arc::clone(&stop), Arc::clone(&scrapes));
            move || {
                while !stop.load(Ordering::Relaxed) {
                    let text = metrics.render();
                    if text.contains("agentry_agents ") {
                        scrapes.fetch_add(1, Ordering::Relaxed);
                    }
                    std::thread::sleep(SCRAPE_EVERY);
                }
            }
        });
        // The workload starts once the exporter has rendered once (a smoke-sized workload may
        // end before the thread would otherwise have run).
        while scrapes.load(Ordering::Relaxed) == 0 && !thread.is_finished() {
            std::thread::yield_now();
        }
        Scraper {
            stop,
            scrapes,
            thread: Some(thread),
        }
    }

    /// Stops it; the number of complete scrapes it made.
    fn finish(mut self) -> Result<u64, BenchError> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join()
                .map_err(|_| BenchError::Harness("the scraper panicked".into()))?;
        }
        Ok(self.scrapes.load(Ordering::Relaxed))
    }
}

impl Drop for Scraper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn cases(scale: Scale) -> Vec<Case> {
    let n_send = scale.pick(1_000u64, 1_000_000, 10_000_000);
    let (n_ring, m_ring) = scale.pick((100u64, 10u64), (10_000, 100), (100_000, 100));
    let agents = scale.pick(1_000u64, 100_000, 100_000);
    let window = scale.pick(
        Duration::from_millis(300),
        Duration::from_secs(5),
        Duration::from_secs(20),
    );
    let tick = scale.pick(
        Duration::from_millis(100),
        Duration::from_secs(1),
        Duration::from_secs(1),
    );
    let mut cases = Vec::new();
    for observed in VARIANTS {
        let label = format!("send_process one_thread N={n_send}");
        let mut b = Case::builder(&label)
            .impl_name(observed.impl_name())
            .dispatcher("one_thread")
            .param("N", n_send)
            .phase(PhaseSpec::msgs("send"))
            .phase(PhaseSpec::msgs("process"))
            .phase(PhaseSpec::msgs("process cpu"));
        if observed != Observed::Nothing {
            b = b.baseline(&label, Observed::Nothing.impl_name());
        }
        cases.push(b.interleave().runner(move || {
            let (env, observers) = observed.env()?;
            let sample = run_send_process(env, n_send, CpuClock::on())?;
            observers.check(n_send)?;
            Ok(sample)
        }));
    }
    for observed in VARIANTS {
        let label = format!("ring one_thread N={n_ring} M={m_ring}");
        let mut b = Case::builder(&label)
            .impl_name(observed.impl_name())
            .dispatcher("one_thread")
            .param("N", n_ring)
            .param("M", m_ring)
            .phase(PhaseSpec::msgs("ring"))
            .phase(PhaseSpec::msgs("ring cpu"));
        if observed != Observed::Nothing {
            b = b.baseline(&label, Observed::Nothing.impl_name());
        }
        cases.push(b.interleave().runner(move || {
            let (env, observers) = observed.env()?;
            let run = run_ring_in(env, n_ring, m_ring, Placement::OneThread, CpuClock::on())?;
            observers.check(n_ring * m_ring + 1)?; // the tokens and the closing `Next`
            let cpu = run.ring_cpu.ok_or_else(|| {
                BenchError::Harness("the ring's CPU time was not measured".into())
            })?;
            Ok(Sample::new()
                .phase("ring", run.ring, n_ring * m_ring)
                .phase("ring cpu", cpu, n_ring * m_ring))
        }));
    }
    let tick_ms = u64::try_from(tick.as_millis()).unwrap_or(u64::MAX);
    cases.push(
        Case::builder(format!("inspector N={agents} tick={tick_ms}ms"))
            .dispatcher("one_thread")
            .param("N", agents)
            .phase(PhaseSpec::ops("snapshot"))
            .reps(5)
            .runner(move || run_inspector(agents, window, tick)),
    );
    cases
}

fn check_scraper(scraper: Option<Scraper>) -> Result<(), BenchError> {
    if let Some(scraper) = scraper {
        let scrapes = scraper.finish()?;
        ensure(
            scrapes >= 1,
            "the exporter was scraped while the workload ran",
        )?;
    }
    Ok(())
}

struct Idle;
impl Agent for Idle {}

/// `agents` idle agents: one snapshot timed, then the process's CPU over `window` without and
/// with one event-stream client at `tick`.
fn run_inspector(agents: u64, window: Duration, tick: Duration) -> Result<Sample, BenchError> {
    let env = Env::new().map_err(setup("build the environment"))?;
    let h = env.handle().clone();
    let mut coop = h.new_coop();
    for _ in 0..agents {
        coop.add(Idle);
    }
    h.register_coop(coop).map_err(setup("register"))?;
    let runner = std::thread::spawn(move || env.run());
    let agents_usize = usize::try_from(agents).map_err(setup("agents"))?;
    // Registration is synchronous, but the agents start on the dispatcher thread: wait until
    // they are all there and started (their state published).
    let query = SnapshotQuery::new().sort(SortBy::Handled);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = h.snapshot(&SnapshotQuery::new().filter("default").limit(1));
        if s.matched == agents_usize {
            break;
        }
        ensure(Instant::now() < deadline, "the agents started within 60 s")?;
        std::thread::sleep(Duration::from_millis(10));
    }

    let started = Instant::now();
    let snapshot = h.snapshot(&query);
    let snapshot_time = started.elapsed();
    ensure(
        snapshot.agents_total == agents_usize && snapshot.agents.len() == 100.min(agents_usize),
        format!(
            "a snapshot saw {} of {agents} agents, returned {}",
            snapshot.agents_total,
            snapshot.agents.len()
        ),
    )?;

    let cpu = |window: Duration| -> Result<f64, BenchError> {
        let before = process_cpu_time()?;
        let start = Instant::now();
        std::thread::sleep(window);
        let used = process_cpu_time()?.saturating_sub(before);
        Ok(100.0 * used.as_secs_f64() / start.elapsed().as_secs_f64())
    };
    let without = cpu(window)?;

    let server = Inspector::builder(&h)
        .tick(tick)
        .build()
        .map_err(setup("inspector"))?
        .serve("127.0.0.1:0")
        .map_err(setup("serve"))?;
    let events = Arc::new(AtomicU64::new(0));
    let wrong = Arc::new(AtomicU64::new(0));
    let client = {
        let addr = server.local_addr();
        let (events, wrong) = (Arc::clone(&events), Arc::clone(&wrong));
        let expect = format!("\"agents_total\":{agents}");
        let mut stream = TcpStream::connect(addr).map_err(setup("connect"))?;
        stream
            .write_all(b"GET /events HTTP/1.1\r\nHost: bench\r\n\r\n")
            .map_err(setup("request"))?;
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stream).lines();
            while let Some(Ok(line)) = lines.next() {
                if let Some(json) = line.strip_prefix("data: ") {
                    let counter = if json.contains(&expect) {
                        &events
                    } else {
                        &wrong
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    // Wait for the first event (sent at once), then measure whole ticks.
    let deadline = Instant::now() + Duration::from_secs(30);
    while events.load(Ordering::Relaxed) == 0 {
        ensure(
            Instant::now() < deadline,
            "the first event arrived within 30 s",
        )?;
        std::thread::sleep(Duration::from_millis(5));
    }
    let first = events.load(Ordering::Relaxed);
    let with = cpu(window)?;
    let during = events.load(Ordering::Relaxed) - first;
    server.stop();
    let _ = client.join();
    h.stop();
    runner
        .join()
        .map_err(|_| BenchError::Harness("the environment thread panicked".into()))?;

    let ticks = (window.as_secs_f64() / tick.as_secs_f64()).floor() as u64;
    ensure(
        during + 1 >= ticks,
        format!("{during} events in a window of {ticks} ticks"),
    )?;
    ensure(
        wrong.load(Ordering::Relaxed) == 0,
        "every event saw all the agents",
    )?;
    Ok(Sample::new()
        .phase("snapshot", snapshot_time, 1)
        .metric("snapshot_ms", snapshot_time.as_secs_f64() * 1000.0)
        .metric("cpu_pct_without", without)
        .metric("cpu_pct_with_client", with)
        .metric("inspector_cpu_pct", with - without))
}
