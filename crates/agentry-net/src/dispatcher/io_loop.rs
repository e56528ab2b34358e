//! One io thread's event loop: the driven dispatcher's agents and the sockets' readiness,
//! served by one thread that blocks in `epoll_wait`.
//!
//! One iteration:
//! 1. run queued demands (up to [`ROUNDS`] driver rounds, so sockets are looked at even
//!    while agents keep sending to each other);
//! 2. if nothing ran, optionally *spin* (busy-poll) for up to the configured time: run the
//!    driver for new messages and look at the sockets (`epoll_wait` with a zero timeout)
//!    every [`SPIN_POLL_EVERY`] rounds, until either shows work; then, still idle,
//!    *announce* the block (`prepare_to_block`: from here senders on other threads write the
//!    eventfd) and block in `epoll_wait` until a socket or the eventfd is ready; otherwise
//!    poll without blocking (unless the spin's own poll brought events);
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

/// Driver looks between two looks at the sockets while spinning (a look is one
/// `epoll_wait` system call, a driver look a few loads).
const SPIN_POLL_EVERY: usize = 32;

/// What a spin found.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Spin {
    /// Nothing: block.
    Idle,
    /// Messages to run: poll the sockets without blocking.
    Messages,
    /// Socket events, already in the loop's `Events`.
    Sockets,
}

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
        reactor::next_turn();
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
        let found = match (idle, spin.is_zero()) {
            (false, _) => Spin::Messages,
            (true, true) => Spin::Idle,
            (true, false) => spin_until_work(driver, poll, &mut events, spin),
        };
        if found != Spin::Sockets {
            let block = found == Spin::Idle && driver.prepare_to_block();
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

/// Runs the driver and looks at the sockets until either shows work or `spin` is over.
fn spin_until_work(
    driver: &mut Driver,
    poll: &mut Poll,
    events: &mut Events,
    spin: Duration,
) -> Spin {
    let start = Instant::now();
    loop {
        for _ in 0..SPIN_POLL_EVERY {
            if driver.run() > 0 || driver.is_closed() {
                return Spin::Messages;
            }
            std::hint::spin_loop();
        }
        // A failed look is left to the blocking poll that follows, which reports it.
        if poll.poll(events, Some(Duration::ZERO)).is_ok() && !events.is_empty() {
            return Spin::Sockets;
        }
        if start.elapsed() >= spin {
            return Spin::Idle;
        }
    }
}
