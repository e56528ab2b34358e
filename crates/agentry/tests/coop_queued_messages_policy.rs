//! Queued messages at deregistration (coop.rs): messages queued before an agent's finish
//! demand are handled; messages sent after the deregistration started are refused and counted
//! as dead letters. This holds whichever thread sent the messages, whichever thread asked for
//! the deregistration, and on every dispatcher.

mod common;

use agentry::disp::Binder;
use agentry::{
    Agent, CoopDeregistered, CoopId, Ctx, Define, DefineError, DeregReason, Env, EnvHandle, Mbox,
    SendError,
};
use common::{Gate, Sharing, gate, recv, wait_until};
use std::sync::mpsc::{self, Receiver, Sender};

struct Work(u32);

/// Counts the work it handles; reports the count from `on_finish`; can be held in a handler.
struct Sink {
    handled: Vec<u32>,
    gate: Option<Gate>,
    report: Sender<Vec<u32>>,
}
struct Hold;

impl Agent for Sink {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|s: &mut Sink, _: &mut Ctx<Sink>, Work(n): Work| s.handled.push(n))?;
        def.on(|s: &mut Sink, _: &mut Ctx<Sink>, _: Hold| {
            if let Some(g) = &s.gate {
                g.pass();
            }
        })?;
        Ok(())
    }
    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        let _ = self.report.send(std::mem::take(&mut self.handled));
    }
}

struct SinkCoop {
    mbox: Mbox,
    id: CoopId,
    report: Receiver<Vec<u32>>,
    gone: Receiver<CoopDeregistered>,
}

fn register_sink(h: &EnvHandle, gate: Option<Gate>, binder: &Binder) -> SinkCoop {
    let (report_tx, report) = mpsc::channel();
    let (gone_tx, gone) = mpsc::channel();
    let mut coop = h.new_coop();
    let mbox = coop.add_with(
        Sink {
            handled: Vec::new(),
            gate,
            report: report_tx,
        },
        binder,
    );
    coop.on_dereg(move |e| {
        let _ = gone_tx.send(e);
    });
    let id = h.register_coop(coop).expect("register sink");
    SinkCoop {
        mbox,
        id,
        report,
        gone,
    }
}

fn env() -> (Env, EnvHandle) {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    (env, h)
}

#[test]
fn queued_before_finish_is_handled_sent_after_is_refused_and_counted() {
    let (_env, h) = env();
    let (g, key) = gate();
    let sink = register_sink(&h, Some(g), &h.default_binder());
    sink.mbox.send(Hold);
    key.wait_entered();
    for n in 0..10 {
        sink.mbox.send(Work(n));
    }
    h.deregister_coop(sink.id, DeregReason::Normal)
        .expect("deregister");
    // Deregistration has started: the agent no longer accepts messages.
    assert!(!sink.mbox.is_alive());
    for n in 10..15 {
        match sink.mbox.try_send(Work(n)) {
            Err(SendError::AgentGone(Work(back))) => assert_eq!(back, n),
            other => panic!("expected AgentGone, got {other:?}"),
        }
        sink.mbox.send(Work(n));
    }
    key.open();
    assert_eq!(recv(&sink.report), (0..10).collect::<Vec<_>>());
    recv(&sink.gone);
    assert_eq!(h.stats().dead_letters, 10);
    assert_eq!(sink.mbox.stats().refused, 10);
    assert_eq!(sink.mbox.stats().handled, 11, "Hold + ten Work");
}

/// Sends work to the sink from the dispatcher's own thread, and deregisters coops from it.
struct Feeder {
    sink: Mbox,
    gate: Gate,
}
/// Send this many `Work` to the sink, then hold.
struct Feed(u32);
/// Hold, then deregister this coop.
struct HoldThenDeregister(CoopId);
/// Re-sends the inner message to itself, so that it is handled from the dispatcher's own
/// (thread-local) queue.
struct ViaLocal(CoopId);
/// Hold, then send five `Work` (100..105) to the sink, then deregister this coop.
struct FeedThenDeregister(CoopId);

impl Agent for Feeder {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|f: &mut Feeder, _: &mut Ctx<Feeder>, Feed(n): Feed| {
            for i in 0..n {
                f.sink.send(Work(i));
            }
            f.gate.pass();
        })?;
        def.on(
            |_: &mut Feeder, ctx: &mut Ctx<Feeder>, ViaLocal(c): ViaLocal| {
                ctx.mbox().send(HoldThenDeregister(c))
            },
        )?;
        def.on(
            |f: &mut Feeder, ctx: &mut Ctx<Feeder>, HoldThenDeregister(c): HoldThenDeregister| {
                f.gate.pass();
                ctx.env()
                    .deregister_coop(c, DeregReason::Normal)
                    .expect("deregister");
            },
        )?;
        def.on(
            |f: &mut Feeder, ctx: &mut Ctx<Feeder>, FeedThenDeregister(c): FeedThenDeregister| {
                f.gate.pass();
                for n in 100..105 {
                    f.sink.send(Work(n));
                }
                ctx.env()
                    .deregister_coop(c, DeregReason::Normal)
                    .expect("deregister");
            },
        )?;
        Ok(())
    }
}

#[test]
fn work_sent_from_the_dispatcher_thread_before_a_remote_deregistration_is_handled() {
    let (_env, h) = env();
    let sink = register_sink(&h, None, &h.default_binder());
    let (g, key) = gate();
    let feeder = h
        .register_agent(Feeder {
            sink: sink.mbox.clone(),
            gate: g,
        })
        .expect("feeder");
    feeder.send(Feed(10));
    // The ten messages are queued (sent by the sink's own dispatcher thread) ...
    key.wait_entered();
    // ... before this thread asks for the deregistration.
    h.deregister_coop(sink.id, DeregReason::Normal)
        .expect("deregister");
    key.open();
    assert_eq!(recv(&sink.report), (0..10).collect::<Vec<_>>());
    recv(&sink.gone);
    assert_eq!(h.stats().dead_letters, 0);
}

#[test]
fn work_sent_from_another_thread_before_a_local_deregistration_is_handled() {
    let (_env, h) = env();
    let sink = register_sink(&h, None, &h.default_binder());
    let (g, key) = gate();
    let feeder = h
        .register_agent(Feeder {
            sink: sink.mbox.clone(),
            gate: g,
        })
        .expect("feeder");
    feeder.send(ViaLocal(sink.id));
    key.wait_entered();
    // Queued from this thread before the dispatcher's own thread deregisters the sink.
    for n in 0..10 {
        sink.mbox.send(Work(n));
    }
    key.open();
    assert_eq!(recv(&sink.report), (0..10).collect::<Vec<_>>());
    recv(&sink.gone);
    assert_eq!(h.stats().dead_letters, 0);
}

/// On every dispatcher: ten messages from the test thread and five from an agent on the same
/// dispatcher, all queued before the finish demand, are handled; five sent after are refused
/// and counted. The feeder deregisters the sink right after its sends; where the sink has a
/// thread of its own it is held in a handler meanwhile, so that everything waits in its queue.
#[test]
fn queued_before_finish_is_handled_sent_after_is_refused_on_every_dispatcher() {
    let make_env = || Env::builder().autoshutdown(false).build().expect("env");
    common::on_every_dispatcher(make_env, |env, disp| {
        let (h, name) = (env.handle(), disp.name);
        let held = disp.sharing != Sharing::OneThread;
        let (sink_gate, sink_key) = gate();
        let sink = register_sink(h, held.then_some(sink_gate), &disp.binder(0));
        let (feeder_gate, feeder_key) = gate();
        let mut coop = h.new_coop();
        let feeder = coop.add_with(
            Feeder {
                sink: sink.mbox.clone(),
                gate: feeder_gate,
            },
            &disp.binder(1),
        );
        h.register_coop(coop).expect("register the feeder");

        if held {
            sink.mbox.send(Hold);
            sink_key.wait_entered();
        }
        feeder.send(FeedThenDeregister(sink.id));
        feeder_key.wait_entered();
        for n in 0..10 {
            sink.mbox.send(Work(n));
        }
        feeder_key.open();
        wait_until(&format!("the deregistration started on {name}"), || {
            !sink.mbox.is_alive()
        });
        for n in 10..15 {
            match sink.mbox.try_send(Work(n)) {
                Err(SendError::AgentGone(Work(back))) => assert_eq!(back, n, "{name}"),
                other => panic!("expected AgentGone on {name}, got {other:?}"),
            }
            sink.mbox.send(Work(n));
        }
        if held {
            sink_key.open();
        }

        let handled = recv(&sink.report);
        let from = |range: std::ops::Range<u32>| -> Vec<u32> {
            handled
                .iter()
                .copied()
                .filter(|n| range.contains(n))
                .collect()
        };
        assert_eq!(from(0..10), (0..10).collect::<Vec<_>>(), "{name}");
        assert_eq!(from(100..105), (100..105).collect::<Vec<_>>(), "{name}");
        assert_eq!(handled.len(), 15, "{name}: {handled:?}");
        recv(&sink.gone);
        assert_eq!(h.stats().dead_letters, 10, "{name}");
        assert_eq!(sink.mbox.stats().refused, 10, "{name}");
        assert_eq!(sink.mbox.stats().handled, 15 + u64::from(held), "{name}");
    });
}
