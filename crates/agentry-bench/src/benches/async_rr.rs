//! `async_rr` (not from the seeds; issue 15): async code asking an agent.
//!
//! - `ask`: T tokio tasks (a 2-worker multi-thread runtime) each await N/T requests in turn,
//!   `agentry_tokio::MboxExt::ask` to one agent (`on_request`, n ↦ n+1, on the default
//!   `one_thread` dispatcher) — against, in the same run, the hand-rolled tokio pattern: the
//!   same tasks sending (n, oneshot) on an mpsc channel to one server task that answers
//!   n+1 on the oneshot (each ask clones the channel's sender: one atomic increment and
//!   decrement, a few ns beside a round trip). Every reply is checked.
//! - `future→message`: an agent starts a ready future with `agentry_tokio::Tasks`, handles
//!   its output as a message and starts the next, R times in a row: the cost of one round
//!   trip (handler → tokio → the agent's queue → handler) — against a tokio task that spawns
//!   the same future and awaits its `JoinHandle`, R times (on a worker of the same runtime,
//!   where the spawned future runs on the awaiting task's worker). Every output is counted.

use super::support::{env, setup};
use crate::harness::{BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use agentry::{Agent, Ctx, Define, DefineError, UserError, mchain::Mchain};
use agentry_tokio::{MboxExt, Tasks};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, oneshot};

pub static BENCH: BenchDef = BenchDef {
    id: "async_rr",
    description: "T tokio tasks asking one agent (ask) vs mpsc + oneshot to a tokio task; \
                  a future's output back as a message vs spawn + await JoinHandle",
    cases,
    charts: &[ChartKind::Bars],
};

/// How long one ask may wait (a stall fails the repetition instead of hanging it).
const ASK_LIMIT: Duration = Duration::from_secs(30);

fn cases(scale: Scale) -> Vec<Case> {
    // Quick sizes keep the main job short: one task's round trips cost two cross-thread
    // wake-ups each (5–30 µs on a loaded 2-core VM).
    let n = scale.pick(400u64, 50_000, 1_000_000);
    let tasks: &[u64] = scale.pick(&[1, 4], &[1, 100, 1000], &[1, 100, 1000]);
    let rounds = scale.pick(200u64, 20_000, 1_000_000);
    let mut cases = Vec::new();
    for &t in tasks {
        let label = format!("ask T={t} N={n}");
        cases.push(
            Case::builder(label.clone())
                .impl_name("agentry")
                .dispatcher("one_thread + tokio x2")
                .param("T", t)
                .param("N", n)
                .phase(PhaseSpec::msgs("ask"))
                .peer("tokio")
                .interleave()
                .runner(move || ask_agentry(t, n)),
        );
        cases.push(
            Case::builder(label)
                .impl_name("tokio")
                .dispatcher("tokio x2")
                .param("T", t)
                .param("N", n)
                .phase(PhaseSpec::msgs("ask"))
                .interleave()
                .runner(move || ask_tokio(t, n)),
        );
    }
    let label = format!("future→message R={rounds}");
    cases.push(
        Case::builder(label.clone())
            .impl_name("agentry")
            .dispatcher("one_thread + tokio x2")
            .param("R", rounds)
            .phase(PhaseSpec::msgs("round trip"))
            .peer("tokio")
            .interleave()
            .runner(move || future_agentry(rounds)),
    );
    cases.push(
        Case::builder(label)
            .impl_name("tokio")
            .dispatcher("tokio x2")
            .param("R", rounds)
            .phase(PhaseSpec::msgs("round trip"))
            .interleave()
            .runner(move || future_tokio(rounds)),
    );
    cases
}

fn runtime() -> Result<Runtime, BenchError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .map_err(setup("tokio runtime"))
}

/// Answers n with n + 1.
struct Inc;

impl Agent for Inc {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|_: &mut Inc, _: &mut Ctx<Inc>, n: u64| n + 1)?;
        Ok(())
    }
}

/// Runs `t` tasks, task `i` asking `ask(i, k)` for its k-th request, and checks each reply
/// (n + 1); returns the elapsed time and the replies checked.
fn drive<F, Fut>(rt: &Runtime, t: u64, n: u64, ask: F) -> Result<(Duration, u64), BenchError>
where
    F: Fn(u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Option<u64>> + Send,
{
    let per_task = n / t;
    rt.block_on(async move {
        let start = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        for i in 0..t {
            let ask = ask.clone();
            set.spawn(async move {
                let mut good = 0u64;
                for k in 0..per_task {
                    let q = i * per_task + k;
                    if ask(q).await == Some(q + 1) {
                        good += 1;
                    }
                }
                good
            });
        }
        let mut good = 0;
        while let Some(done) = set.join_next().await {
            good += done.map_err(setup("asking task"))?;
        }
        Ok((start.elapsed(), good))
    })
}

fn ask_agentry(t: u64, n: u64) -> Result<Sample, BenchError> {
    let rt = runtime()?;
    let env = env()?;
    let agent = env
        .handle()
        .register_agent(Inc)
        .map_err(setup("register"))?;
    let (elapsed, good) = drive(&rt, t, n, move |q| {
        let reply = agent.ask::<u64, u64>(q, ASK_LIMIT);
        async move { reply.await.ok() }
    })?;
    env.handle().stop();
    env.run();
    verify_eq("replies equal to n + 1", n / t * t, good)?;
    Ok(Sample::new().phase("ask", elapsed, good))
}

fn ask_tokio(t: u64, n: u64) -> Result<Sample, BenchError> {
    let rt = runtime()?;
    let (tx, mut rx) = mpsc::channel::<(u64, oneshot::Sender<u64>)>(1024);
    let server = rt.spawn(async move {
        while let Some((q, reply)) = rx.recv().await {
            let _ = reply.send(q + 1);
        }
    });
    let (elapsed, good) = drive(&rt, t, n, move |q| {
        let tx = tx.clone();
        async move {
            let (reply, answer) = oneshot::channel();
            tx.send((q, reply)).await.ok()?;
            tokio::time::timeout(ASK_LIMIT, answer).await.ok()?.ok()
        }
    })?;
    rt.block_on(server).map_err(setup("server task"))?;
    verify_eq("replies equal to n + 1", n / t * t, good)?;
    Ok(Sample::new().phase("ask", elapsed, good))
}

/// A future's output, back as a message.
struct Echo(u64);

/// Starts a ready future, handles its output, starts the next, `left` times.
struct Looper {
    tasks: Tasks,
    left: u64,
    sum: u64,
    done: Mchain,
}

impl Looper {
    fn next(&mut self, ctx: &Ctx<Looper>) {
        let n = self.left;
        self.tasks.spawn(ctx, async move { Echo(n) });
    }
}

impl Agent for Looper {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|l: &mut Looper, ctx: &mut Ctx<Looper>, Echo(n): Echo| {
            l.sum += n;
            l.left -= 1;
            if l.left > 0 {
                l.next(ctx);
            } else {
                l.done.send((Instant::now(), l.sum));
            }
        })?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        self.done.send(Instant::now());
        self.next(ctx);
        Ok(())
    }
}

fn future_agentry(rounds: u64) -> Result<Sample, BenchError> {
    let rt = runtime()?;
    let env = env()?;
    let done = Mchain::unbounded();
    let tasks = Tasks::new(rt.handle().clone());
    let probe = tasks.probe();
    env.handle()
        .register_agent(Looper {
            tasks,
            left: rounds,
            sum: 0,
            done: done.clone(),
        })
        .map_err(setup("register"))?;
    let limit = Duration::from_secs(120);
    let start = done
        .recv(limit)
        .map_err(setup("start"))?
        .downcast::<Instant>()
        .map_err(|_| BenchError::Harness("start: not an Instant".into()))?;
    let (end, sum) = done
        .recv(limit)
        .map_err(setup("end"))?
        .downcast::<(Instant, u64)>()
        .map_err(|_| BenchError::Harness("end: not a report".into()))?;
    env.handle().stop();
    env.run();
    // A task counts its future `delivered` just after its send: the agent may handle the last
    // output (and the report come back) first. Dropping the runtime waits for its tasks, so
    // every count is in.
    drop(rt);
    verify_eq("sum of the outputs", rounds * (rounds + 1) / 2, sum)?;
    let stats = probe.stats();
    verify_eq("futures delivered", rounds, stats.delivered)?;
    let elapsed = end - start;
    Ok(Sample::new()
        .phase("round trip", elapsed, rounds)
        .metric("rtt_ns", elapsed.as_nanos() as f64 / rounds as f64))
}

fn future_tokio(rounds: u64) -> Result<Sample, BenchError> {
    let rt = runtime()?;
    // On a worker (not in `block_on`'s thread): the spawned future runs on the same worker.
    let (elapsed, sum) = rt
        .block_on(rt.spawn(async move {
            let start = Instant::now();
            let mut sum = 0u64;
            for n in (1..=rounds).rev() {
                sum += tokio::spawn(async move { n }).await.unwrap_or(0);
            }
            (start.elapsed(), sum)
        }))
        .map_err(setup("spawning task"))?;
    verify_eq("sum of the outputs", rounds * (rounds + 1) / 2, sum)?;
    Ok(Sample::new()
        .phase("round trip", elapsed, rounds)
        .metric("rtt_ns", elapsed.as_nanos() as f64 / rounds as f64))
}
