//! Messages from one sender to one agent are handled in send order: from plain threads, from
//! an agent on the receiver's own dispatcher, from an agent on another dispatcher, and through a
//! multi mbox. Nothing is promised about the interleaving of different senders.

mod common;

use agentry::disp::one_thread::OneThreadDispatcher;
use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox, MultiMbox};
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
    fn on_start(&mut self, ctx: &mut Ctx<Self>) {
        ctx.mbox().send(Burst);
    }
}

#[test]
fn each_senders_messages_arrive_in_send_order() {
    const THREADS: u32 = 4;
    const PER_SENDER: u64 = 2_000;

    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let topic = h.create_mbox();
    let checker = h
        .register_agent(Checker {
            seen: Seen::default(),
            topic: topic.clone(),
        })
        .expect("register checker");

    // Senders 100 (same dispatcher as the checker) and 101 (another dispatcher).
    let (done_tx, done_rx) = mpsc::channel();
    let other = OneThreadDispatcher::new(&h, "other").expect("dispatcher");
    let mut coop = h.new_coop();
    let sender = |id| Burster {
        id,
        target: checker.clone(),
        next: 0,
        count: PER_SENDER,
        done: done_tx.clone(),
    };
    coop.add(sender(100));
    coop.add_with(sender(101), &other.binder());
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
    recv(&done_rx);
    recv(&done_rx);

    let senders = u64::from(THREADS) + 3;
    wait_until("the checker handled every message", || {
        checker.stats().handled >= senders * PER_SENDER
    });
    let seen: Seen = checker.request(Report, common::DEADLINE).expect("report");
    assert!(
        seen.out_of_order.is_empty(),
        "out of order (sender, previous, got): {:?}",
        &seen.out_of_order[..seen.out_of_order.len().min(10)]
    );
    assert_eq!(seen.last.len() as u64, senders);
    for (sender, (count, last)) in &seen.last {
        assert_eq!(*count, PER_SENDER, "sender {sender}");
        assert_eq!(*last, PER_SENDER - 1, "sender {sender}");
    }
}
