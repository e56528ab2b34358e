//! A driven dispatcher runs its agents on an event loop the application owns: messages from
//! other threads wake the loop through the callback, the loop's own sends are handled too,
//! and environment shutdown closes the driver.

mod common;

use agentry::disp::OneThreadDispatcher;
use agentry::{Agent, BuildError, Ctx, Define, DefineError, Env, Mbox};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

/// A stand-in for an event loop's blocking call: `wait` blocks until `wake` (sticky, like an
/// eventfd write).
#[derive(Default)]
struct Wakeup {
    flag: Mutex<bool>,
    cv: Condvar,
}

impl Wakeup {
    fn wake(&self) {
        *self.flag.lock().expect("flag") = true;
        self.cv.notify_one();
    }

    fn wait(&self) {
        let mut woken = self.flag.lock().expect("flag");
        while !*woken {
            let (guard, _) = self.cv.wait_timeout(woken, common::DEADLINE).expect("flag");
            woken = guard;
        }
        *woken = false;
    }
}

struct Add(u64);
struct Total;

#[derive(Default)]
struct Summer {
    sum: u64,
}

impl Agent for Summer {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|s: &mut Summer, _: &mut Ctx<Summer>, Add(n): Add| s.sum += n)?;
        def.on_request(|s: &mut Summer, _: &mut Ctx<Summer>, _: Total| s.sum)?;
        Ok(())
    }
}

#[test]
fn an_event_loop_serves_agents_woken_by_other_threads() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let handle = env.handle().clone();
    let (mbox_tx, mbox_rx) = mpsc::channel::<Mbox>();
    let loop_thread = std::thread::spawn(move || {
        let wakeup = Arc::new(Wakeup::default());
        let w = Arc::clone(&wakeup);
        let (dispatcher, mut driver) = OneThreadDispatcher::builder("loop")
            .build_driven(&handle, move || w.wake())
            .expect("driven dispatcher");
        assert!(
            matches!(
                OneThreadDispatcher::builder("again").build_driven(&handle, || {}),
                Err(BuildError::ThreadBusy)
            ),
            "a thread drives one dispatcher"
        );
        let mut coop = handle.new_coop();
        let summer = coop.add_with(Summer::default(), &dispatcher.binder());
        handle.register_coop(coop).expect("registered");
        // The loop's own sends (the local path) count too.
        summer.send(Add(1000));
        // The test thread gets the agent once the loop is about to block: its sends are
        // handled only if they wake the loop through the callback.
        let mut announce = Some((mbox_tx, summer));
        let mut wakeups = 0u64;
        loop {
            while driver.run() > 0 {}
            if driver.is_closed() {
                break;
            }
            if driver.prepare_to_block() {
                if let Some((tx, summer)) = announce.take() {
                    tx.send(summer).expect("test alive");
                }
                wakeup.wait();
                driver.woke_up();
                wakeups += 1;
            }
        }
        wakeups
    });
    let summer = mbox_rx
        .recv_timeout(common::DEADLINE)
        .expect("the loop registered its agent");
    for n in 1..=100 {
        summer.send(Add(n));
    }
    let total = summer
        .request::<Total, u64>(Total, common::DEADLINE)
        .expect("the loop answers");
    assert_eq!(total, 1000 + 5050);
    assert!(
        env.handle()
            .dispatcher_stats()
            .iter()
            .any(|d| d.kind == "driven" && d.agents == 1)
    );
    env.handle().stop();
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        env.run();
        let _ = done_tx.send(());
    });
    let wakeups = loop_thread.join().expect("loop thread");
    assert!(
        wakeups >= 1,
        "the other thread's sends woke the blocked loop"
    );
    done_rx.recv_timeout(common::DEADLINE).expect("env stopped");
}
