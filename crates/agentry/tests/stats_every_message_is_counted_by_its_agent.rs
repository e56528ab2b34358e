//! Every message sent to an agent is counted by that agent, exactly: `handled + unhandled +
//! insend_handled + dropped == sent` — also for a message that races the agent's
//! deregistration (read "accepting" just before the agent stopped, queued behind its finish
//! demand, discarded when its turn came), as long as its mbox is held. Such a message is
//! also in `EnvStats::dead_letters`, and the agent's `refused` is its share of them.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, DeregReason, Env, Mbox};
use common::{on_every_dispatcher, recv};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

struct Work;

struct Worker;

impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Worker, _: &mut Ctx<Worker>, _: Work| {})?;
        Ok(())
    }
}

/// Rounds per dispatcher configuration.
const ROUNDS: usize = 40;

/// Sends `Work` to `mbox` until told to stop, then a few more; returns how many it sent.
fn sender(mbox: Mbox, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut sent = 0;
        let mut after = 0;
        while after < 16 {
            mbox.send(Work);
            sent += 1;
            if stop.load(Ordering::Relaxed) {
                after += 1;
            }
        }
        sent
    })
}

#[test]
fn a_send_racing_the_deregistration_is_counted_by_the_agent_on_every_dispatcher() {
    let make_env = || Env::builder().autoshutdown(false).build().expect("env");
    on_every_dispatcher(make_env, |env, disp| {
        let h = env.handle().clone();
        for round in 0..ROUNDS {
            let base = h.stats().dead_letters;
            let mut coop = h.new_coop();
            let mbox = coop.add_with(Worker, &disp.binder(0));
            let (tx, gone) = mpsc::channel();
            coop.on_dereg(move |e| {
                let _ = tx.send(e);
            });
            let id = h.register_coop(coop).expect("registered");
            let stop = Arc::new(AtomicBool::new(false));
            let sending = sender(mbox.clone(), Arc::clone(&stop));
            // Deregister while the sender is in full flow.
            common::wait_until("some work handled", || mbox.stats().handled > 0);
            h.deregister_coop(id, DeregReason::Normal)
                .expect("deregister");
            stop.store(true, Ordering::Relaxed);
            let sent = sending.join().expect("sender");
            recv(&gone);
            // A raced message is discarded when the dispatcher reaches it, after the finish.
            let deadline = std::time::Instant::now() + common::DEADLINE;
            loop {
                let s = mbox.stats();
                if s.handled + s.unhandled + s.insend_handled + s.dropped == sent {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "{} round {round}: sent {sent}, the agent counted {s:?}; env {:?}",
                    disp.name,
                    h.stats()
                );
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let s = mbox.stats();
            assert_eq!(
                s.dropped, s.refused,
                "{} round {round}: every drop here is a refusal",
                disp.name
            );
            assert_eq!(
                h.stats().dead_letters - base,
                s.refused,
                "{} round {round}: the agent's refusals are the env's dead letters",
                disp.name
            );
        }
    });
}
