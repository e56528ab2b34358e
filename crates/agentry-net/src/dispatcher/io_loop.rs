//! One io thread's event loop: the driven dispatcher's agents and the sockets' readiness,
//! served by one thread that blocks in `epoll_wait`.
//!
//! One iteration:
//! 1. run queued demands (up to [`ROUNDS`] driver rounds, so sockets are looked at even
//!    while agents keep sending to each other);
//! 2. if nothing ran, optionally spin for new messages, then *announce* the block
//!    (`prepare_to_block`: from here senders on other threads write the eventfd) and block
//!    in `epoll_wait` until a socket or the eventfd is ready; otherwise poll without
//!    blocking;
//! 3. turn readiness events into `IoReady` messages for the sockets' owners (local sends);
//! 4. stop once the dispatcher is closed, after running what is left.

use super::ExitGuard;
use crate::ids::IoKey;
use crate::reactor::{self, IoReady, LoopState, WAKER_TOKEN};
use crate::stats::Counters;
use agentry::disp::Driver;
use agentry::disp::OneThreadDispatcher;
use agentry::{BuildError, EnvHandle, Mbox};
use mio::{Events, Poll, Waker};
use std::io;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// Driver rounds (each up to a batch of local and a batch of remote demands) between two
/// looks at the sockets.
const ROUNDS: usize = 4;

/// What an io thread hands back to the builder.
pub(crate) struct Started {
    pub(crate) dispatcher: OneThreadDispatcher,
    pub(crate) counters: Arc<Counters>,
}

pub(crate) struct Params {
    pub(crate) env: EnvHandle,
    pub(crate) name: String,
    pub(crate) index: usize,
    pub(crate) spin: Duration,
    pub(crate) events: usize,
    pub(crate) started: mpsc::Sender<Result<Started, BuildError>>,
    pub(crate) exit: ExitGuard,
}

/// The io thread's body.
pub(crate) fn run(params: Params) {
    let Params {
        env,
        name,
        index,
        spin,
        events,
        started,
        exit,
    } = params;
    let (mut poll, mut driver, counters) = match set_up(&env, name, index, &started) {
        Ok(parts) => parts,
        Err(e) => {
            let _ = started.send(Err(e));
            return;
        }
    };
    drop(env);
    drop(started);
    serve(&mut poll, &mut driver, spin, events, &counters);
    reactor::uninstall();
    drop(driver);
    drop(exit);
}

fn set_up(
    env: &EnvHandle,
    name: String,
    index: usize,
    started: &mpsc::Sender<Result<Started, BuildError>>,
) -> Result<(Poll, Driver, Arc<Counters>), BuildError> {
    let poll = Poll::new()?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKER_TOKEN)?);
    let registry = poll.registry().try_clone()?;
    let (dispatcher, driver) = OneThreadDispatcher::builder(name).build_driven(env, move || {
        if let Err(e) = waker.wake() {
            tracing::error!(error = %e, "cannot wake an io thread");
        }
    })?;
    let counters = Arc::new(Counters::default());
    reactor::install(LoopState::new(registry, Arc::clone(&counters), index));
    if started
        .send(Ok(Started {
            dispatcher,
            counters: Arc::clone(&counters),
        }))
        .is_err()
    {
        // The builder is gone; dropping the driver closes the dispatcher.
        reactor::uninstall();
        return Err(BuildError::ThreadLost);
    }
    Ok((poll, driver, counters))
}

fn serve(
    poll: &mut Poll,
    driver: &mut Driver,
    spin: Duration,
    capacity: usize,
    counters: &Counters,
) {
    let mut events = Events::with_capacity(capacity);
    let mut ready: Vec<(Mbox, IoKey)> = Vec::new();
    loop {
        let mut idle = false;
        for _ in 0..ROUNDS {
            if driver.run() == 0 {
                idle = true;
                break;
            }
        }
        if driver.is_closed() {
            while driver.run() > 0 {}
            return;
        }
        if idle && !spin.is_zero() {
            idle = spin_until_work(driver, spin);
        }
        let block = idle && driver.prepare_to_block();
        let result = poll.poll(&mut events, if block { None } else { Some(Duration::ZERO) });
        if block {
            driver.woke_up();
            Counters::add(&counters.loop_blocks, 1);
        }
        match result {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // epoll_wait only fails on a broken poll (EBADF, EINVAL): nothing to retry.
                tracing::error!(error = %e, "io loop: poll failed; the io thread stops");
                return;
            }
        }
        if events.iter().any(|e| e.token() == WAKER_TOKEN) {
            Counters::add(&counters.loop_wakeups, 1);
        }
        reactor::collect(&events, &mut ready);
        for (owner, key) in ready.drain(..) {
            owner.send(IoReady { key });
        }
    }
}

/// Runs the driver until work shows up or `spin` is over; true if still idle.
fn spin_until_work(driver: &mut Driver, spin: Duration) -> bool {
    let start = Instant::now();
    loop {
        for _ in 0..32 {
            if driver.run() > 0 {
                return false;
            }
            std::hint::spin_loop();
        }
        if start.elapsed() >= spin {
            return true;
        }
    }
}
