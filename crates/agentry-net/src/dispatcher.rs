//! The io dispatcher: threads that run agents *and* wait on sockets in one `mio::Poll`
//! (CSO's file-descriptor object processor).
//!
//! # Ground rules
//!
//! - Each io thread owns, created on that thread: a `mio::Poll`, a `mio::Waker` (an eventfd,
//!   under a reserved token) and a *driven* `one_thread` dispatcher
//!   ([`OneThreadBuilder::build_driven`](agentry::disp::OneThreadBuilder::build_driven)) whose serving loop is the thread's event loop
//!   (`dispatcher/io_loop.rs`). Agents bound to it are ordinary agents; they run on that
//!   thread only, one at a time.
//! - Threads are independent loops ([`IoBuilder::threads`]); nothing is shared
//!   between them but the environment. [`IoDispatcher::binder`] spreads agents round-robin;
//!   [`IoDispatcher::binder_at`] picks a thread. A listener spreads its connections the same
//!   way, and a per-connection owner is bound to its channel's thread.
//! - Wake-ups: a send from another thread pushes into the dispatcher's MPSC queue and, only if
//!   the loop announced that it blocks, calls the wake callback, which writes the eventfd —
//!   at most one eventfd write per blocking period, never one per message. A send made on the
//!   io thread itself (an agent to a sibling, the loop to a socket's owner) takes the local
//!   queue: no atomic read-modify-write, no syscall.
//! - Sockets live on their io thread, registered in a thread-local registry (`reactor.rs`);
//!   readiness reaches their owners as [`IoReady`](crate::reactor::IoReady) messages sent by
//!   the loop on that thread.
//! - Shutdown: when the environment shuts down (or the last handle and agent of a thread's
//!   dispatcher are gone) the driven dispatcher is closed; the closer wakes the loop, which
//!   runs what is left and exits, dropping its poll and registry. The environment does not
//!   join io threads (it did not spawn them): [`IoDispatcher::wait_threads`] does.

mod io_loop;

use crate::channel::Channel;
use crate::config::{ConnectConfig, ListenerConfig};
use crate::error::NetError;
use crate::ids::ConnId;
use crate::listener::{Acceptor, ConnOwner, Listener};
use crate::stats::NetStats;
use agentry::BuildError;
use agentry::disp::{Binder, check_name};
use agentry::{EnvHandle, Mbox};
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::{Duration, Instant};

/// Settings of an [`IoDispatcher`] ([`IoDispatcher::builder`]), built the way every agentry
/// dispatcher is (see [`agentry::disp`]): `&mut self` options, then
/// [`build`](Self::build)`(&env) -> Result<IoDispatcher, BuildError>`.
///
/// ```
/// use agentry::Env;
/// use agentry_net::IoDispatcher;
///
/// let env = Env::new().expect("env");
/// let io = IoDispatcher::builder("net").threads(2).build(env.handle()).expect("io threads");
/// assert_eq!(io.threads(), 2);
/// ```
#[derive(Clone, Debug)]
pub struct IoBuilder {
    name: String,
    threads: usize,
    spin: Duration,
    events: usize,
}

impl IoBuilder {
    /// Number of io threads, each an independent loop (default 1; [`build`](Self::build)
    /// refuses 0).
    pub fn threads(&mut self, threads: usize) -> &mut Self {
        self.threads = threads;
        self
    }

    /// How long an idle loop keeps looking for work — messages, and its sockets with a
    /// non-blocking `epoll_wait` — before it blocks in `epoll_wait` (default 0: block at
    /// once). Busy-polling saves the thread's wake-up (tens of µs on a VM whose idle CPUs
    /// halt) for a message or a request that arrives within the spin, at the price of up to
    /// a core while traffic keeps coming: a latency setting for a gateway that answers one
    /// peer at a time (see the `tcp_echo` benchmark's spin case), not a default.
    pub fn spin(&mut self, spin: Duration) -> &mut Self {
        self.spin = spin;
        self
    }

    /// Readiness events taken per `epoll_wait` (default 1024; [`build`](Self::build) refuses
    /// 0).
    pub fn events_capacity(&mut self, events: usize) -> &mut Self {
        self.events = events;
        self
    }

    /// Starts the io threads (named `agentry-net-<name>-<i>`); each creates its poll, waker
    /// and dispatcher before this returns.
    ///
    /// `env` is an `&EnvHandle` or an `&Env`, as for the core's dispatchers.
    pub fn build(&self, env: &impl AsRef<EnvHandle>) -> Result<IoDispatcher, BuildError> {
        let env = env.as_ref();
        check_name(&self.name)?;
        if self.threads == 0 {
            return Err(BuildError::InvalidSetting(
                "io dispatcher: threads must be at least 1",
            ));
        }
        if self.events == 0 {
            return Err(BuildError::InvalidSetting(
                "io dispatcher: events_capacity must be at least 1",
            ));
        }
        let exits = Arc::new(Exits::default());
        let mut threads = Vec::with_capacity(self.threads);
        for index in 0..self.threads {
            let (started_tx, started_rx) = mpsc::channel();
            let params = io_loop::Params {
                env: env.clone(),
                name: format!("{}-{index}", self.name),
                index,
                spin: self.spin,
                events: self.events,
                started: started_tx,
                exit: ExitGuard(Arc::clone(&exits)),
            };
            exits.spawned();
            std::thread::Builder::new()
                .name(format!("agentry-net-{}-{index}", self.name))
                .spawn(move || io_loop::run(params))
                .map_err(|e| {
                    exits.exited();
                    BuildError::Spawn(e)
                })?;
            // The thread either reports or drops the sender (then `recv` fails): no hang.
            let started = started_rx.recv().map_err(|_| BuildError::ThreadLost)??;
            threads.push(started);
        }
        Ok(IoDispatcher(Arc::new(Shared {
            name: self.name.clone(),
            env: env.clone(),
            threads,
            next: AtomicUsize::new(0),
            exits,
        })))
    }
}

/// Handle of an io dispatcher (cheap to clone). See the module's ground rules.
///
/// ```
/// use agentry::{Agent, Ctx, Define, DefineError, Env};
/// use agentry_net::{ConnOwner, IoDispatcher, ListenerConfig, Received, SendBytes, Accepted};
/// use std::collections::HashMap;
/// use std::io::{Read, Write};
///
/// /// Echoes whatever any connection sends.
/// #[derive(Default)]
/// struct Echo { channels: HashMap<agentry_net::ConnId, agentry::Mbox> }
/// impl Agent for Echo {
///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
///         def.on(|e: &mut Echo, _: &mut Ctx<Echo>, a: Accepted| {
///             e.channels.insert(a.conn, a.channel);
///         })?
///         .on(|e: &mut Echo, _: &mut Ctx<Echo>, Received { conn, data, .. }: Received| {
///             if let Some(ch) = e.channels.get(&conn) { ch.send(SendBytes(data)); }
///         })?;
///         Ok(())
///     }
/// }
///
/// let env = Env::new().expect("env");
/// let io = IoDispatcher::new(&env, "io").expect("io"); // on the `Env` or on `env.handle()`
/// let mut coop = env.handle().new_coop();
/// let echo = coop.add_with(Echo::default(), &io.binder());
/// env.handle().register_coop(coop).expect("registered");
/// let listener = io
///     .listen("127.0.0.1:0".parse().unwrap(), ListenerConfig::default(), ConnOwner::Mbox(echo))
///     .expect("listening");
///
/// let mut client = std::net::TcpStream::connect(listener.local_addr()).expect("connected");
/// client.write_all(b"ping").expect("written");
/// let mut back = [0; 4];
/// client.read_exact(&mut back).expect("echoed");
/// assert_eq!(&back, b"ping");
/// env.handle().stop();
/// env.run();
/// ```
#[derive(Clone)]
pub struct IoDispatcher(Arc<Shared>);

struct Shared {
    name: String,
    env: EnvHandle,
    threads: Vec<io_loop::Started>,
    next: AtomicUsize,
    exits: Arc<Exits>,
}

impl IoDispatcher {
    /// Settings for a new io dispatcher named `name` (threads, spin, events per poll).
    pub fn builder(name: impl Into<String>) -> IoBuilder {
        IoBuilder {
            name: name.into(),
            threads: 1,
            spin: Duration::ZERO,
            events: 1024,
        }
    }

    /// `builder(name).build(env)`: an io dispatcher with one thread.
    pub fn new(env: &impl AsRef<EnvHandle>, name: impl Into<String>) -> Result<Self, BuildError> {
        Self::builder(name).build(env)
    }

    /// The dispatcher's name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// Number of io threads.
    pub fn threads(&self) -> usize {
        self.0.threads.len()
    }

    /// A binder of the next io thread (round-robin).
    pub fn binder(&self) -> Binder {
        let i = self.0.next.fetch_add(1, Ordering::Relaxed) % self.0.threads.len();
        self.0.threads[i].dispatcher.binder()
    }

    /// The binder of io thread `index` (`None` if out of range).
    pub fn binder_at(&self, index: usize) -> Option<Binder> {
        self.0.threads.get(index).map(|t| t.dispatcher.binder())
    }

    fn binders(&self) -> Vec<Binder> {
        self.0
            .threads
            .iter()
            .map(|t| t.dispatcher.binder())
            .collect()
    }

    /// The summed counters of all io threads.
    pub fn stats(&self) -> NetStats {
        let mut total = NetStats::default();
        for t in &self.0.threads {
            t.counters.add_to(&mut total);
        }
        total
    }

    /// Listens on `addr` (bound now, on the calling thread, so errors and the chosen port are
    /// known at once); accepted connections get channels owned as `owner` says. The acceptor
    /// agent runs on the next io thread; connections are spread over all of them.
    pub fn listen(
        &self,
        addr: SocketAddr,
        config: ListenerConfig,
        owner: ConnOwner,
    ) -> Result<Listener, NetError> {
        config.validate()?;
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let local = listener.local_addr()?;
        let listener = mio::net::TcpListener::from_std(listener);
        let first = self.0.next.fetch_add(1, Ordering::Relaxed);
        let binders = self.binders();
        let binder = binders[first % binders.len()].clone();
        let (acceptor, shared) = Acceptor::new(
            listener,
            local,
            config,
            owner,
            binders,
            first.wrapping_add(1),
        );
        let mut coop = self.0.env.new_coop();
        coop.add_with(acceptor, &binder);
        let coop = self.0.env.register_coop(coop)?;
        Ok(Listener::new(shared, coop, self.0.env.clone()))
    }

    /// Connects to `addr`; `owner` gets [`Connected`](crate::Connected) (then the channel's
    /// messages) or [`ConnectFailed`](crate::ConnectFailed), both with the returned id.
    pub fn connect(
        &self,
        addr: SocketAddr,
        config: ConnectConfig,
        owner: &Mbox,
    ) -> Result<ConnId, NetError> {
        config.validate()?;
        let conn = ConnId::next();
        let channel =
            Channel::connecting(conn, addr, config.timeout, owner.clone(), config.channel);
        let mut coop = self.0.env.new_coop();
        coop.add_with(channel, &self.binder());
        self.0.env.register_coop(coop)?;
        Ok(conn)
    }

    /// Waits until every io thread has exited (after environment shutdown); false if some
    /// still run after `timeout`.
    pub fn wait_threads(&self, timeout: Duration) -> bool {
        self.0.exits.wait_all(timeout)
    }
}

impl fmt::Debug for IoDispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IoDispatcher")
            .field("name", &self.0.name)
            .field("threads", &self.0.threads.len())
            .finish()
    }
}

/// Counts io threads still running.
#[derive(Default)]
struct Exits {
    running: Mutex<usize>,
    all_exited: Condvar,
}

impl Exits {
    fn spawned(&self) {
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    }

    fn exited(&self) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        *running = running.saturating_sub(1);
        if *running == 0 {
            self.all_exited.notify_all();
        }
    }

    fn wait_all(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        while *running > 0 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            running = match self.all_exited.wait_timeout(running, deadline - now) {
                Ok((guard, _)) => guard,
                Err(e) => e.into_inner().0,
            };
        }
        true
    }
}

/// Marks its io thread as exited when dropped (also when the thread unwinds).
struct ExitGuard(Arc<Exits>);

impl Drop for ExitGuard {
    fn drop(&mut self) {
        self.0.exited();
    }
}

impl fmt::Debug for ExitGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ExitGuard")
    }
}
