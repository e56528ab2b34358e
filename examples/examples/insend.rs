//! `insend` — handlers that run on the *sender's* thread, before `send` returns.
//!
//! A page-hit counter receives `Hit`s from several threads. Queuing each hit for the agent
//! would cost a queue push and a wake-up per hit; instead an insend handler counts it in a
//! shared `AtomicU64` right on the sending thread. Every `CHECKPOINT_EVERY`-th hit is rare
//! work that needs the agent itself (its state, one message at a time): the insend handler
//! forwards it to a queued handler through `InsendCtx::mbox()`.
//!
//! - An insend handler is `Fn(&InsendCtx, M) + Send + Sync`: it never gets `&mut` agent (the
//!   agent may be busy on its own thread at that very moment), only what it captured.
//! - It runs in every state and bypasses message limits; it is counted in
//!   `AgentStats::insend_handled`, the forwarded work in `AgentStats::handled`.
//! - A message type has either an insend handler or queued handlers on one mbox, not both.
//!
//! ```text
//! cargo run -p agentry-examples --example insend
//! ```

use agentry::{Agent, Ctx, Define, DefineError, Env, InsendCtx};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::thread::ThreadId;

/// Every this many hits, the agent writes a checkpoint.
const CHECKPOINT_EVERY: u64 = 1_000;

/// A page was viewed.
struct Hit;
/// Tell me which thread runs your `Hit` handler (answered by an insend handler).
struct WhereDoYouRun(Sender<ThreadId>);
/// Rare work for the agent itself: the hit count reached `n`.
struct Checkpoint(u64);

/// What the agent saw, sent from `on_finish`.
struct Report {
    checkpoints: Vec<u64>,
    agent_thread: Option<ThreadId>,
}

/// Counts hits on the senders' threads; writes checkpoints on its own.
struct HitCounter {
    hits: Arc<AtomicU64>,
    checkpoints: Vec<u64>,
    /// The thread running the queued handlers (for comparison).
    agent_thread: Option<ThreadId>,
    report: Sender<Report>,
}

impl Agent for HitCounter {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let hits = Arc::clone(&self.hits);
        def.insend(move |ctx: &InsendCtx<'_>, _: Hit| {
            let n = hits.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_multiple_of(CHECKPOINT_EVERY) {
                // To the agent's queue: handled later, on the agent's thread.
                ctx.mbox().send(Checkpoint(n));
            }
        })?
        .insend(|_: &InsendCtx<'_>, WhereDoYouRun(answer): WhereDoYouRun| {
            let _ = answer.send(std::thread::current().id());
        })?
        .on(|c, _, Checkpoint(n): Checkpoint| {
            c.agent_thread = Some(std::thread::current().id());
            c.checkpoints.push(n);
        })?;
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        let _ = self.report.send(Report {
            checkpoints: std::mem::take(&mut self.checkpoints),
            agent_thread: self.agent_thread,
        });
    }
}

/// What happened to the hits.
#[derive(Debug)]
struct Summary {
    /// The counter, read as soon as every sender had returned.
    hits_when_senders_returned: u64,
    /// Checkpoints written by the queued handler (sorted).
    checkpoints: Vec<u64>,
    /// The `Hit` handler ran on the asking thread; checkpoints on another one.
    insend_ran_on_sender: bool,
    checkpoints_ran_elsewhere: bool,
    insend_handled: u64,
    handled: u64,
}

/// `threads` threads send `hits_each` hits each.
fn run(threads: u64, hits_each: u64) -> Summary {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let hits = Arc::new(AtomicU64::new(0));
    let (report, reports) = mpsc::channel();
    let counter = h
        .register_agent(HitCounter {
            hits: Arc::clone(&hits),
            checkpoints: Vec::new(),
            agent_thread: None,
            report,
        })
        .expect("register");

    let (answer, answers) = mpsc::channel();
    counter.send(WhereDoYouRun(answer));
    // Already answered: the insend handler ran inside `send`, on this thread.
    let insend_thread = answers.try_recv().expect("answered before send returned");
    let insend_ran_on_sender = insend_thread == std::thread::current().id();

    std::thread::scope(|s| {
        for _ in 0..threads {
            let counter = counter.clone();
            s.spawn(move || {
                for _ in 0..hits_each {
                    counter.send(Hit);
                }
            });
        }
    });
    // No waiting: every hit was counted before its `send` returned.
    let hits_when_senders_returned = hits.load(Ordering::Relaxed);

    // Forwarded checkpoints queued before the stop are handled before `on_finish`.
    h.stop();
    env.run();
    let report = reports.try_recv().expect("on_finish reported");
    let mut checkpoints = report.checkpoints;
    checkpoints.sort_unstable();
    let stats = counter.stats();
    Summary {
        hits_when_senders_returned,
        checkpoints,
        insend_ran_on_sender,
        checkpoints_ran_elsewhere: report.agent_thread != Some(insend_thread),
        insend_handled: stats.insend_handled,
        handled: stats.handled,
    }
}

fn main() {
    let s = run(4, 25_000);
    println!(
        "hits counted when the senders returned: {}",
        s.hits_when_senders_returned
    );
    if let (Some(first), Some(last)) = (s.checkpoints.first(), s.checkpoints.last()) {
        println!("{} checkpoints: {first}, ..., {last}", s.checkpoints.len());
    }
    println!(
        "insend handler ran on the sender's thread: {}; checkpoints on the agent's: {}",
        s.insend_ran_on_sender, s.checkpoints_ran_elsewhere
    );
    println!(
        "AgentStats: insend_handled {}, handled {}",
        s.insend_handled, s.handled
    );
}

#[cfg(test)]
mod tests {
    use super::run;
    use agentry_examples::{TEST_DEADLINE, within};

    #[test]
    fn hits_counted_on_senders_and_checkpoints_queued() {
        let s = within(TEST_DEADLINE, || run(4, 2_500));
        assert_eq!(s.hits_when_senders_returned, 10_000);
        assert_eq!(
            s.checkpoints,
            (1..=10).map(|k| k * 1_000).collect::<Vec<_>>()
        );
        assert!(s.insend_ran_on_sender);
        assert!(s.checkpoints_ran_elsewhere);
        assert_eq!(s.insend_handled, 10_001, "the hits and the WhereDoYouRun");
        assert_eq!(s.handled, 10, "only the checkpoints were queued");
    }
}
