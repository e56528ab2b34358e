//! `fan_in`: T plain threads (2, 20, 100) each send S = 1,000,000 numbered messages (quick:
//! fewer) to one agent's mbox, all at once — mailbox contention. The agent counts and sums
//! them; the time runs from the release of the senders to the last message handled.

use super::support::{Finish, Placement, Tally, env, run, setup};
use crate::harness::{BenchDef, BenchError, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use agentry::{Agent, Ctx, Define, DefineError, Mbox};
use std::sync::{Arc, Barrier};
use std::time::Duration;

pub static BENCH: BenchDef = BenchDef {
    id: "fan_in",
    description: "T threads each send S messages to one agent (mailbox contention)",
    cases,
    charts: &[ChartKind::Bars],
};

fn cases(scale: Scale) -> Vec<Case> {
    let per_sender = scale.pick(1_000u64, 50_000, 1_000_000);
    [2u64, 20, 100]
        .into_iter()
        .map(|senders| {
            Case::builder(format!("one_thread T={senders} S={per_sender}"))
                .dispatcher("one_thread")
                .param("T", senders)
                .param("S", per_sender)
                .phase(PhaseSpec::msgs("fan_in"))
                .runner(move || {
                    let t = run_fan_in(senders, per_sender, Placement::OneThread)?;
                    Ok(Sample::new().phase("fan_in", t, senders * per_sender))
                })
        })
        .collect()
}

/// One sender's `i`-th message carries `i`.
struct Item(u64);

struct Sink {
    expected: u64,
    count: u64,
    sum: u64,
    finish: Arc<Finish>,
    /// The count and the sum, published when the last message is handled.
    counted: Tally,
    summed: Tally,
}

impl Agent for Sink {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(Sink::on_item)?;
        Ok(())
    }
}

impl Sink {
    fn on_item(&mut self, ctx: &mut Ctx<Self>, Item(v): Item) {
        self.count += 1;
        self.sum += v;
        if self.count == self.expected {
            self.counted.set(self.count);
            self.summed.set(self.sum);
            if self.finish.arrive() {
                ctx.stop_env();
            }
        }
    }
}

/// The sum a run's sink must compute: every sender sends `0..per_sender`.
pub(crate) fn fan_in_sum(senders: u64, per_sender: u64) -> u64 {
    senders * (per_sender * per_sender.saturating_sub(1) / 2)
}

/// `senders` threads each send `per_sender` messages to one agent placed by `placement`;
/// returns the time from their release to the last message handled, after verifying the
/// count and the sum.
pub(crate) fn run_fan_in(
    senders: u64,
    per_sender: u64,
    placement: Placement,
) -> Result<Duration, BenchError> {
    let env = env()?;
    let binders = placement.binders(env.handle())?;
    let finish = Finish::new(1);
    let (counted, summed) = (Tally::default(), Tally::default());
    let mut coop = env.handle().new_coop();
    let sink = coop.add_with(
        Sink {
            expected: senders * per_sender,
            count: 0,
            sum: 0,
            finish: Arc::clone(&finish),
            counted: counted.clone(),
            summed: summed.clone(),
        },
        binders.of(0, 1),
    );
    env.handle()
        .register_coop(coop)
        .map_err(setup("register the sink"))?;
    let release = Arc::new(Barrier::new(senders as usize + 1));
    let threads = (0..senders)
        .map(|i| {
            let (sink, release): (Mbox, _) = (sink.clone(), Arc::clone(&release));
            std::thread::Builder::new()
                .name(format!("fan_in-{i}"))
                .spawn(move || {
                    release.wait();
                    for v in 0..per_sender {
                        sink.send(Item(v));
                    }
                })
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(setup("spawn a sender"))?;
    finish.start()?;
    release.wait();
    run(env);
    for thread in threads {
        thread
            .join()
            .map_err(|_| BenchError::Harness("a sender panicked".to_owned()))?;
    }
    let t = finish.elapsed()?;
    verify_eq("messages counted", senders * per_sender, counted.get())?;
    verify_eq(
        "sum of the messages",
        fan_in_sum(senders, per_sender),
        summed.get(),
    )?;
    Ok(t)
}
