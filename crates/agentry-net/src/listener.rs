//! Listeners: an acceptor agent per listening socket, reporting each accepted connection
//! through a new channel agent.
//!
//! # Ground rules
//!
//! - The acceptor is an agent on one io thread; it owns the `mio::net::TcpListener` and
//!   accepts in its `IoReady` handler until `WouldBlock` (at most [`ACCEPT_BUDGET`] per
//!   activation, then it re-queues itself, so a connection storm cannot starve the thread's
//!   other agents).
//! - Each accepted connection gets a channel agent in a child coop of the listener's coop,
//!   bound to the io threads round-robin. With [`ConnOwner::PerConnection`] the factory adds
//!   the owner agent to the same coop (bound to the channel's thread, so their messages take
//!   the local path); the coop goes when the connection closes.
//! - Connection limit: the count of open connections is an atomic shared by the acceptor and
//!   its channels (`admission.rs`). The acceptor takes a slot before it creates the channel;
//!   the channel gives it back when it closes (or, if its coop never registers, when it is
//!   dropped). Over the limit the connection is accepted and closed at once, and counted.
//! - `accept` errors (e.g. `EMFILE`) are counted and logged; the acceptor retries after
//!   [`ACCEPT_RETRY`] (a pending connection produces no new edge).
//! - A panicking owner factory costs its connection (closed, counted in `accept_errors`),
//!   not the listener.
//! - Closing the listener (or environment shutdown) deregisters its coop: its channels,
//!   children of that coop, close with [`CloseReason::Shutdown`](crate::CloseReason::Shutdown).

use crate::admission::{ConnLimit, OwnerRef};
use crate::channel::Channel;
use crate::config::ListenerConfig;
use crate::ids::{ConnId, IoKey};
use crate::reactor::{self, IoReady};
use crate::stats::{Counters, ListenerStats};
use agentry::disp::Binder;
use agentry::{
    Agent, Coop, CoopId, Ctx, Define, DefineError, DeregReason, EnvHandle, Mbox, UserError,
    timer::TimerHandle,
};
use mio::Interest;
use mio::net::TcpListener;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Accepts per activation before the acceptor yields.
const ACCEPT_BUDGET: usize = 64;
/// Pause after a failed `accept` before trying again.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// Makes the owner agent of each accepted connection.
pub type OwnerFactory = dyn Fn(&ConnInfo, &mut Coop) -> Mbox + Send + Sync;

/// Who gets an accepted connection's messages ([`Accepted`](crate::Accepted),
/// [`Received`](crate::Received) / [`Frame`](crate::Frame), [`Closed`](crate::Closed), …).
#[derive(Clone)]
pub enum ConnOwner {
    /// One agent for every connection (messages carry the [`ConnId`]).
    Mbox(Mbox),
    /// A new agent per connection, added by the factory to the connection's coop (bind it
    /// with [`ConnInfo::binder`] to share the channel's thread); it is deregistered with the
    /// channel when the connection closes.
    PerConnection(Arc<OwnerFactory>),
}

impl ConnOwner {
    /// [`ConnOwner::PerConnection`] from a closure.
    pub fn per_connection(
        factory: impl Fn(&ConnInfo, &mut Coop) -> Mbox + Send + Sync + 'static,
    ) -> Self {
        ConnOwner::PerConnection(Arc::new(factory))
    }
}

impl fmt::Debug for ConnOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnOwner::Mbox(m) => f.debug_tuple("Mbox").field(m).finish(),
            ConnOwner::PerConnection(_) => f.write_str("PerConnection(..)"),
        }
    }
}

/// What an [`OwnerFactory`] learns about a new connection.
#[derive(Debug, Clone)]
pub struct ConnInfo {
    /// The connection.
    pub conn: ConnId,
    /// The channel's mbox (send it [`SendBytes`](crate::SendBytes), …).
    pub channel: Mbox,
    /// The client's address.
    pub peer: SocketAddr,
    /// The listener's address.
    pub local: SocketAddr,
    /// The binder of the channel's io thread.
    pub binder: Binder,
}

/// State shared by a listener's acceptor and its [`Listener`] handle (its channels share
/// only the connection limit).
#[derive(Debug)]
pub(crate) struct ListenerShared {
    local: SocketAddr,
    limit: Arc<ConnLimit>,
    accepted: AtomicU64,
    refused: AtomicU64,
    accept_errors: AtomicU64,
}

/// A listening socket served by an io dispatcher ([`IoDispatcher::listen`](crate::IoDispatcher::listen)).
///
/// Dropping the handle does not close the listener; [`close`](Self::close) does, and so does
/// environment shutdown.
#[derive(Debug, Clone)]
pub struct Listener {
    shared: Arc<ListenerShared>,
    coop: CoopId,
    env: EnvHandle,
}

impl Listener {
    pub(crate) fn new(shared: Arc<ListenerShared>, coop: CoopId, env: EnvHandle) -> Self {
        Listener { shared, coop, env }
    }

    /// The address it listens on (with the port the system chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.local
    }

    /// The listener's coop (its channels are in child coops).
    pub fn coop(&self) -> CoopId {
        self.coop
    }

    /// A snapshot of its counters.
    pub fn stats(&self) -> ListenerStats {
        ListenerStats {
            accepted: self.shared.accepted.load(Ordering::Relaxed),
            refused_over_limit: self.shared.refused.load(Ordering::Relaxed),
            accept_errors: self.shared.accept_errors.load(Ordering::Relaxed),
            open: self.shared.limit.open(),
        }
    }

    /// Stops accepting and closes the listener's connections (their owners get `Closed` with
    /// [`CloseReason::Shutdown`](crate::CloseReason::Shutdown)). Returns immediately.
    pub fn close(&self) {
        // Already going is fine.
        let _ = self.env.deregister_coop(self.coop, DeregReason::Normal);
    }
}

/// Continue accepting after yielding.
struct AcceptMore;

/// The acceptor agent.
pub(crate) struct Acceptor {
    listener: Option<TcpListener>,
    key: Option<IoKey>,
    shared: Arc<ListenerShared>,
    config: ListenerConfig,
    owner: ConnOwner,
    binders: Vec<Binder>,
    next: usize,
    counters: Arc<Counters>,
    retry: Option<TimerHandle>,
    more_queued: bool,
}

impl Acceptor {
    pub(crate) fn new(
        listener: TcpListener,
        local: SocketAddr,
        config: ListenerConfig,
        owner: ConnOwner,
        binders: Vec<Binder>,
        first: usize,
    ) -> (Self, Arc<ListenerShared>) {
        let shared = Arc::new(ListenerShared {
            local,
            limit: ConnLimit::new(config.max_connections),
            accepted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            accept_errors: AtomicU64::new(0),
        });
        let acceptor = Acceptor {
            listener: Some(listener),
            key: None,
            shared: Arc::clone(&shared),
            config,
            owner,
            binders,
            next: first,
            counters: Arc::default(),
            retry: None,
            more_queued: false,
        };
        (acceptor, shared)
    }
}

impl Agent for Acceptor {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(Acceptor::on_ready)?.on(
            |a: &mut Acceptor, ctx: &mut Ctx<Acceptor>, _: AcceptMore| {
                a.more_queued = false;
                a.accept(ctx);
            },
        )?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        let Some(counters) = reactor::counters() else {
            tracing::error!(addr = %self.shared.local, "an acceptor must run on an io thread");
            ctx.deregister_coop(DeregReason::Normal);
            return Ok(());
        };
        self.counters = counters;
        let Some(listener) = self.listener.as_mut() else {
            return Ok(());
        };
        match reactor::register(listener, Interest::READABLE, ctx.mbox()) {
            Ok(key) => self.key = Some(key),
            Err(e) => {
                tracing::error!(addr = %self.shared.local, error = %e, "cannot register the listener");
                ctx.deregister_coop(DeregReason::Normal);
                return Ok(());
            }
        }
        tracing::debug!(addr = %self.shared.local, "listening");
        Ok(())
    }

    fn on_finish(&mut self, _ctx: &mut Ctx<Self>) {
        if let (Some(key), Some(listener)) = (self.key.take(), self.listener.as_mut()) {
            let _ = reactor::deregister(key, listener);
        }
        self.listener = None;
        tracing::debug!(addr = %self.shared.local, "listener closed");
    }
}

impl Acceptor {
    fn on_ready(&mut self, ctx: &mut Ctx<Self>, IoReady { key }: IoReady) {
        if self.key == Some(key) {
            reactor::take_readiness(key);
            self.accept(ctx);
        }
    }

    fn accept(&mut self, ctx: &mut Ctx<Self>) {
        self.retry = None;
        for _ in 0..ACCEPT_BUDGET {
            let Some(listener) = self.listener.as_ref() else {
                return;
            };
            match listener.accept() {
                Ok((stream, peer)) => self.admit(ctx, stream, peer),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if is_transient(&e) => {
                    // The peer went away between SYN and accept: nothing to retry.
                    tracing::debug!(error = %e, "accept: connection already gone");
                }
                Err(e) => {
                    self.shared.accept_errors.fetch_add(1, Ordering::Relaxed);
                    Counters::add(&self.counters.accept_errors, 1);
                    tracing::warn!(addr = %self.shared.local, error = %e, "accept failed; retrying");
                    self.retry = Some(ctx.send_delayed(ctx.mbox(), ACCEPT_RETRY, AcceptMore));
                    return;
                }
            }
        }
        if !self.more_queued {
            self.more_queued = true;
            ctx.mbox().send(AcceptMore);
        }
    }

    fn admit(&mut self, ctx: &mut Ctx<Self>, stream: mio::net::TcpStream, peer: SocketAddr) {
        let Some(slot) = self.shared.limit.try_take() else {
            self.shared.refused.fetch_add(1, Ordering::Relaxed);
            Counters::add(&self.counters.refused_over_limit, 1);
            tracing::warn!(%peer, max = self.shared.limit.max(), "connection limit reached; refusing");
            drop(stream);
            return;
        };
        if self.binders.is_empty() {
            return;
        }
        let binder = self.binders[self.next % self.binders.len()].clone();
        self.next = self.next.wrapping_add(1);
        let conn = ConnId::next();
        let local = self.shared.local;
        let mut coop = ctx.child_coop();
        // A per-connection owner needs the channel's mbox, and the channel its owner's: the
        // channel is added first and learns its owner (set below) when the coop registers.
        let pending = Arc::new(OnceLock::new());
        let owner = match &self.owner {
            ConnOwner::Mbox(owner) => OwnerRef::Known(owner.clone()),
            ConnOwner::PerConnection(_) => OwnerRef::Pending {
                cell: Arc::clone(&pending),
                placeholder: ctx.mbox().clone(),
            },
        };
        let channel = Channel::accepted(
            conn,
            stream,
            peer,
            local,
            owner,
            self.config.channel.clone(),
            slot,
        );
        let channel_mbox = coop.add_with(channel, &binder);
        if let ConnOwner::PerConnection(factory) = &self.owner {
            let info = ConnInfo {
                conn,
                channel: channel_mbox,
                peer,
                local,
                binder,
            };
            // User code: a panic costs this connection, not the listener.
            match catch_unwind(AssertUnwindSafe(|| factory(&info, &mut coop))) {
                Ok(owner) => {
                    let _ = pending.set(owner);
                }
                Err(_) => {
                    self.shared.accept_errors.fetch_add(1, Ordering::Relaxed);
                    Counters::add(&self.counters.accept_errors, 1);
                    tracing::error!(%conn, %peer, "the owner factory panicked; connection dropped");
                    return;
                }
            }
        }
        // Counted before the channel can run (on another io thread): a client it has already
        // served must find its connection counted.
        self.shared.accepted.fetch_add(1, Ordering::Relaxed);
        Counters::add(&self.counters.accepted, 1);
        match ctx.register_coop(coop) {
            Ok(_) => {
                tracing::debug!(%conn, %peer, "accepted");
            }
            Err(e) => {
                // The channel was dropped with the coop: the socket is closed, the slot free.
                self.shared.accepted.fetch_sub(1, Ordering::Relaxed);
                Counters::sub(&self.counters.accepted, 1);
                self.shared.accept_errors.fetch_add(1, Ordering::Relaxed);
                Counters::add(&self.counters.accept_errors, 1);
                tracing::warn!(%conn, %peer, error = %e, "cannot register the connection's coop");
            }
        }
    }
}

fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    )
}
