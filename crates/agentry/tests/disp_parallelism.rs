//! Which agents can run at the same time. Agent A blocks inside a handler until agent B
//! signals from its own handler: on a dispatcher that runs them in parallel (active_obj,
//! active_group with a group each, a pool with FIFO per agent, a `Fifo::Coop` pool for agents
//! of different coops) they meet; where one thread runs both (one_thread, one active group, a
//! 1-thread pool) or they share a coop's queue (`Fifo::Coop`), A's short wait times out — and
//! B runs right after, so it was only A that held it back.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env};
use common::{DEADLINE, SHORT, Sharing, recv};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

/// Enters, then waits up to `.0` for B's signal; reports whether it came.
struct WaitForB(Duration);
struct Signal;

struct A {
    entered: Sender<()>,
    from_b: Receiver<()>,
    met: Sender<bool>,
}

impl Agent for A {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|a: &mut A, _: &mut Ctx<A>, WaitForB(wait): WaitForB| {
            let _ = a.entered.send(());
            let met = match a.from_b.recv_timeout(wait) {
                Ok(()) => true,
                Err(RecvTimeoutError::Timeout) => false,
                Err(RecvTimeoutError::Disconnected) => panic!("B is gone"),
            };
            let _ = a.met.send(met);
        })?;
        Ok(())
    }
}

struct B {
    to_a: Sender<()>,
    signalled: Sender<()>,
}

impl Agent for B {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|b: &mut B, _: &mut Ctx<B>, _: Signal| {
            let _ = b.to_a.send(());
            let _ = b.signalled.send(());
        })?;
        Ok(())
    }
}

#[test]
fn agents_run_in_parallel_exactly_where_the_dispatcher_allows() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let mut met_somewhere = false;
    let mut kept_apart_somewhere = false;
    for disp in common::dispatchers(&h) {
        for same_coop in [true, false] {
            let name = format!(
                "{} ({})",
                disp.name,
                if same_coop { "one coop" } else { "two coops" }
            );
            let parallel = match disp.sharing {
                Sharing::OneThread => false,
                Sharing::PerCoop => !same_coop,
                Sharing::Parallel => true,
            };
            let (entered_tx, entered) = mpsc::channel();
            let (to_a, from_b) = mpsc::channel();
            let (met_tx, met) = mpsc::channel();
            let (signalled_tx, signalled) = mpsc::channel();
            let a = A {
                entered: entered_tx,
                from_b,
                met: met_tx,
            };
            let b = B {
                to_a,
                signalled: signalled_tx,
            };
            let mut coop = h.new_coop();
            let a = coop.add_with(a, &disp.binder(0));
            let b = if same_coop {
                coop.add_with(b, &disp.binder(1))
            } else {
                let mut other = h.new_coop();
                let b = other.add_with(b, &disp.binder(1));
                h.register_coop(other).expect("register B");
                b
            };
            h.register_coop(coop).expect("register A");

            // Where they cannot meet, A gives up after a short wait instead of deadlocking.
            a.send(WaitForB(if parallel { DEADLINE } else { SHORT }));
            recv(&entered);
            b.send(Signal);
            assert_eq!(
                recv(&met),
                parallel,
                "{name}: A and B {}",
                if parallel {
                    "never ran at the same time"
                } else {
                    "ran at the same time"
                }
            );
            recv(&signalled);
            met_somewhere |= parallel;
            kept_apart_somewhere |= !parallel;
        }
    }
    assert!(met_somewhere && kept_apart_somewhere);
}
