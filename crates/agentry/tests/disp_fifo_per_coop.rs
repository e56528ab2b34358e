//! FIFO per coop (`Fifo::Coop` thread pools): the agents of a coop never run at the same time
//! — as on every dispatcher that runs them all on one thread — and one sender's messages to
//! different agents of the coop are handled in send order (a promise of the shared queue
//! only: a 1-thread pool with FIFO per agent runs its agents' queues in turns). That agents of
//! *different* coops do run in parallel on a `Fifo::Coop` pool is shown in disp_parallelism.rs.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env};
use common::{Sharing, wait_until};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Message `seq` of sender `sender`.
struct Numbered {
    sender: usize,
    seq: u64,
}

/// What the members of one coop share: an overlap detector and the order they handled in.
#[derive(Clone, Default)]
struct Shared {
    busy: Arc<AtomicBool>,
    overlaps: Arc<AtomicU64>,
    handled: Arc<Mutex<Vec<(usize, u64)>>>,
}

struct Member(Shared);

impl Agent for Member {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|m: &mut Member, _: &mut Ctx<Member>, n: Numbered| {
            if m.0.busy.swap(true, Ordering::SeqCst) {
                m.0.overlaps.fetch_add(1, Ordering::SeqCst);
            }
            // Widen the window in which an overlap would be seen.
            std::thread::yield_now();
            m.0.handled.lock().expect("lock").push((n.sender, n.seq));
            m.0.busy.store(false, Ordering::SeqCst);
        })?;
        Ok(())
    }
}

#[test]
fn a_coops_agents_run_one_at_a_time_in_one_fifo_order() {
    const MEMBERS: usize = 4;
    const SENDERS: usize = 3;
    const PER_SENDER: u64 = 400;

    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let serial: Vec<_> = common::dispatchers(&h)
        .into_iter()
        .filter(|d| d.sharing != Sharing::Parallel)
        .collect();
    assert!(serial.iter().any(|d| d.sharing == Sharing::PerCoop));
    for disp in serial {
        let name = disp.name;
        let shared = Shared::default();
        let mut coop = h.new_coop();
        let members: Vec<_> = (0..MEMBERS)
            .map(|i| coop.add_with(Member(shared.clone()), &disp.binder(i)))
            .collect();
        h.register_coop(coop).expect("register the coop");

        // Each sender goes round the members: message `seq` to member `seq % MEMBERS`.
        let senders: Vec<_> = (0..SENDERS)
            .map(|sender| {
                let members = members.clone();
                std::thread::spawn(move || {
                    for seq in 0..PER_SENDER {
                        members[seq as usize % MEMBERS].send(Numbered { sender, seq });
                    }
                })
            })
            .collect();
        for s in senders {
            s.join().expect("sender thread");
        }
        let total = SENDERS * PER_SENDER as usize;
        wait_until(&format!("the coop handled everything on {name}"), || {
            shared.handled.lock().expect("lock").len() == total
        });

        assert_eq!(
            shared.overlaps.load(Ordering::SeqCst),
            0,
            "two agents of one coop ran at once on {name}"
        );
        if disp.sharing != Sharing::PerCoop {
            continue;
        }
        let handled = shared.handled.lock().expect("lock").clone();
        for sender in 0..SENDERS {
            let order: Vec<u64> = handled
                .iter()
                .filter(|(s, _)| *s == sender)
                .map(|(_, seq)| *seq)
                .collect();
            assert!(
                order.iter().copied().eq(0..PER_SENDER),
                "sender {sender}'s messages to the coop were handled out of send order on \
                 {name}: {:?}",
                &order[..order.len().min(20)]
            );
        }
    }
}
