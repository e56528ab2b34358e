//! `overload` — message limits protect slow consumers, and every overflow is counted.
//!
//! Two consumers are flooded with jobs while they are stalled (each is held inside a
//! handler, standing in for slow work). Each declares `Define::limit::<Job>(3, reaction)`: at
//! most three `Job`s may wait in its queue; the next one meets the reaction.
//!
//! - `Overload::Drop`: the job is refused. `try_send` gives it back to the sender
//!   (`SendError::Overloaded`); a plain `send` would drop it. Either way it is counted in
//!   `EnvStats::limit_dropped`.
//! - `Overload::Redirect(helper)`: the job goes to a helper agent instead, counted in
//!   `EnvStats::limit_redirected`.
//!
//! A place is freed whenever the consumer takes a job from its queue. At the end, handled +
//! dropped = sent: nothing was lost silently.
//!
//! ```text
//! cargo run -p agentry-examples --example overload
//! ```

use agentry::disp::OneThreadDispatcher;
use agentry::{Agent, Define, DefineError, Env, EnvStats, SendError, limit::Overload};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

/// Work item `n`.
struct Job(u32);
/// Holds the consumer in its handler until the sender side of the channel says go (or is
/// dropped): a stand-in for a slow handler.
struct Stall(Receiver<()>);
/// Which jobs did you handle?
struct Done;

/// Handles jobs; at most `limit` may wait, the next meets `overload`.
struct Consumer {
    limit: usize,
    overload: Option<Overload<Job>>,
    done: Vec<u32>,
}

impl Consumer {
    fn new(limit: usize, overload: Overload<Job>) -> Self {
        Consumer {
            limit,
            overload: Some(overload),
            done: Vec::new(),
        }
    }
}

impl Agent for Consumer {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        // Only `Job` is limited: `Stall` and `Done` always get through.
        let overload = self.overload.take().expect("define runs once");
        def.limit::<Job>(self.limit, overload)?;
        def.on(|c, _, Job(n): Job| c.done.push(n))?
            .on(|_, _, Stall(go): Stall| {
                let _ = go.recv_timeout(Duration::from_secs(5));
            })?
            .on_request(|c, _, _: Done| c.done.clone())?;
        Ok(())
    }
}

/// Takes the overflow of the redirecting consumer.
struct Helper {
    done: Vec<u32>,
}

impl Agent for Helper {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|h, _, Job(n): Job| h.done.push(n))?
            .on_request(|h, _, _: Done| h.done.clone())?;
        Ok(())
    }
}

/// Where every job went.
#[derive(Debug)]
struct Summary {
    sent: u32,
    dropper_handled: Vec<u32>,
    /// Jobs `try_send` gave back to the sender.
    given_back: Vec<u32>,
    redirector_handled: Vec<u32>,
    helper_handled: Vec<u32>,
    stats: EnvStats,
}

/// Sends `jobs` jobs to each consumer, both limited to `limit` waiting jobs.
fn run(jobs: u32, limit: usize) -> Summary {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    // One thread per consumer: stalling one does not stall the other, nor the helper (which
    // runs on the default dispatcher).
    let slow_a = OneThreadDispatcher::new(&h, "dropper").expect("dispatcher");
    let slow_b = OneThreadDispatcher::new(&h, "redirector").expect("dispatcher");

    let mut coop = h.new_coop();
    let helper = coop.add(Helper { done: Vec::new() });
    let dropper = coop.add_with(Consumer::new(limit, Overload::Drop), &slow_a.binder());
    let redirector = coop.add_with(
        Consumer::new(limit, Overload::Redirect(helper.clone())),
        &slow_b.binder(),
    );
    h.register_coop(coop).expect("register");

    let (go_a, stall_a) = mpsc::channel();
    let (go_b, stall_b) = mpsc::channel();
    dropper.send(Stall(stall_a));
    redirector.send(Stall(stall_b));

    // The stalls come first in each queue, so no job is taken until they are released:
    // exactly `limit` jobs wait in each queue, the rest overflow.
    let mut given_back = Vec::new();
    for n in 0..jobs {
        match dropper.try_send(Job(n)) {
            Ok(()) => {}
            Err(SendError::Overloaded(Job(n))) => given_back.push(n),
            Err(e) => panic!("the dropper is running: {e}"),
        }
        // The overflow is sent on to the helper, on this thread, before `send` returns.
        redirector.send(Job(n));
    }
    let _ = (go_a.send(()), go_b.send(()));

    let done = |m: &agentry::Mbox| {
        m.request::<Done, Vec<u32>>(Done, Duration::from_secs(5))
            .expect("every agent answers Done")
    };
    // Requests are answered after the jobs this thread sent before them.
    let summary = Summary {
        sent: 2 * jobs,
        dropper_handled: done(&dropper),
        given_back,
        redirector_handled: done(&redirector),
        helper_handled: done(&helper),
        stats: h.stats(),
    };
    h.stop();
    env.run();
    summary
}

fn main() {
    let s = run(10, 3);
    let handled = s.dropper_handled.len() + s.redirector_handled.len() + s.helper_handled.len();
    println!("sent {} jobs", s.sent);
    println!("  dropper handled    {:?}", s.dropper_handled);
    println!("  given back to us   {:?}", s.given_back);
    println!("  redirector handled {:?}", s.redirector_handled);
    println!("  helper handled     {:?}", s.helper_handled);
    println!(
        "EnvStats: limit_dropped {}, limit_redirected {}, dead_letters {}, unhandled {}",
        s.stats.limit_dropped, s.stats.limit_redirected, s.stats.dead_letters, s.stats.unhandled
    );
    println!(
        "handled {handled} + dropped {} = {} sent",
        s.stats.limit_dropped, s.sent
    );
}

#[cfg(test)]
mod tests {
    use super::run;
    use agentry_examples::{TEST_DEADLINE, within};

    #[test]
    fn overflow_is_dropped_or_redirected_and_counted() {
        let s = within(TEST_DEADLINE, || run(10, 3));
        assert_eq!(s.dropper_handled, [0, 1, 2]);
        assert_eq!(s.given_back, (3..10).collect::<Vec<_>>());
        assert_eq!(s.redirector_handled, [0, 1, 2]);
        assert_eq!(s.helper_handled, (3..10).collect::<Vec<_>>());
        assert_eq!(s.stats.limit_dropped, 7);
        assert_eq!(s.stats.limit_redirected, 7);
        assert_eq!(s.stats.dead_letters + s.stats.unhandled, 0);
        let handled = s.dropper_handled.len() + s.redirector_handled.len() + s.helper_handled.len();
        assert_eq!(handled as u64 + s.stats.limit_dropped, u64::from(s.sent));
    }
}
