//! Messages from one sender to one agent are handled in send order, on every dispatcher: from
//! plain threads, from agents on the receiver's own dispatcher (in its coop and in another),
//! from agents on other dispatchers, and through a multi mbox. Nothing is promised about the
//! interleaving of different senders.

mod common;

use agentry::disp::OneThreadDispatcher;
use agentry::disp::ThreadPoolDispatcher;
use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox, MultiMbox, UserError};
use common::{recv, wait_until};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::mpsc::{self, Sender};

/// Message `seq` of sender `sender`.
#[derive(Clone, Copy)]
struct Numbered {
    sender: u32,
    seq: u64,
}

struct Report;

#[derive(Debug, Default, Clone)]
struct Seen {
    /// Per sender: how many messages, and the last number seen.
    last: HashMap<u32, (u64, u64)>,
    out_of_order: Vec<(u32, u64, u64)>,
}

struct Checker {
    seen: Seen,
    topic: MultiMbox,
}

impl Checker {
    fn record(&mut self, m: Numbered) {
        let entry = self.seen.last.entry(m.sender).or_insert((0, 0));
        if entry.0 > 0 && m.seq != entry.1 + 1 {
            self.seen.out_of_order.push((m.sender, entry.1, m.seq));
        }
        if entry.0 == 0 && m.seq != 0 {
            self.seen.out_of_order.push((m.sender, u64::MAX, m.seq));
        }
        *entry = (entry.0 + 1, m.seq);
    }
}

impl Agent for Checker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|c: &mut Checker, _: &mut Ctx<Checker>, m: Numbered| c.record(m))?;
        def.on_request(|c: &mut Checker, _: &mut Ctx<Checker>, _: Report| c.seen.clone())?;
        let topic = self.topic.clone();
        def.from(&topic)
            .on(|c: &mut Checker, _: &mut Ctx<Checker>, m: Arc<Numbered>| c.record(*m))?;
        Ok(())
    }
}

/// Sends its numbered sequence in bursts (so that its sends interleave with other work on its
/// dispatcher), then reports.
struct Burster {
    id: u32,
    target: Mbox,
    next: u64,
    count: u64,
    done: Sender<()>,
}

struct Burst;

impl Agent for Burster {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|s: &mut Burster, ctx: &mut Ctx<Burster>, _: Burst| {
            let end = (s.next + 37).min(s.count);
            while s.next < end {
                s.target.send(Numbered {
                    sender: s.id,
                    seq: s.next,
                });
                s.next += 1;
            }
            if s.next == s.count {
                let _ = s.done.send(());
            } else {
                ctx.mbox().send(Burst);
            }
        })?;
        Ok(())
    }
    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        ctx.mbox().send(Burst);
        Ok(())
    }
}

#[test]
fn each_senders_messages_arrive_in_send_order() {
    const THREADS: u32 = 3;
    const PER_SENDER: u64 = 400;

    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let other = OneThreadDispatcher::new(&h, "other").expect("dispatcher");
    let other_pool = ThreadPoolDispatcher::builder("other-pool")
        .threads(2)
        .build(&h)
        .expect("pool");
    for disp in common::dispatchers(&h) {
        let name = disp.name;
        let topic = h.create_mbox();
        let (done_tx, done_rx) = mpsc::channel();
        let sender = |id, target: &Mbox| Burster {
            id,
            target: target.clone(),
            next: 0,
            count: PER_SENDER,
            done: done_tx.clone(),
        };
        // Sender 100 shares the checker's coop (and, with FIFO per coop, its queue).
        let mut coop = h.new_coop();
        let checker = coop.add_with(
            Checker {
                seen: Seen::default(),
                topic: topic.clone(),
            },
            &disp.binder(0),
        );
        coop.add_with(sender(100, &checker), &disp.binder(1));
        h.register_coop(coop).expect("register checker");
        // Senders 101 (same dispatcher, another coop), 102 and 103 (other dispatchers).
        let mut coop = h.new_coop();
        coop.add_with(sender(101, &checker), &disp.binder(2));
        coop.add_with(sender(102, &checker), &other.binder());
        coop.add_with(sender(103, &checker), &other_pool.binder());
        h.register_coop(coop).expect("register senders");

        // Senders 0..THREADS: plain threads; sender 200: a plain thread through the multi mbox.
        let mut threads: Vec<_> = (0..THREADS)
            .map(|id| {
                let target = checker.clone();
                std::thread::spawn(move || {
                    for seq in 0..PER_SENDER {
                        target.send(Numbered { sender: id, seq });
                    }
                })
            })
            .collect();
        threads.push(std::thread::spawn(move || {
            for seq in 0..PER_SENDER {
                topic.send(Numbered { sender: 200, seq });
            }
        }));
        for t in threads {
            t.join().expect("sender thread");
        }
        for _ in 0..4 {
            recv(&done_rx);
        }

        let senders = u64::from(THREADS) + 5;
        wait_until(
            &format!("the checker handled every message on {name}"),
            || checker.stats().handled >= senders * PER_SENDER,
        );
        let seen: Seen = checker.request(Report, common::DEADLINE).expect("report");
        assert!(
            seen.out_of_order.is_empty(),
            "out of order on {name} (sender, previous, got): {:?}",
            &seen.out_of_order[..seen.out_of_order.len().min(10)]
        );
        assert_eq!(seen.last.len() as u64, senders, "{name}");
        for (sender, (count, last)) in &seen.last {
            assert_eq!(*count, PER_SENDER, "sender {sender} on {name}");
            assert_eq!(*last, PER_SENDER - 1, "sender {sender} on {name}");
        }
    }
}
