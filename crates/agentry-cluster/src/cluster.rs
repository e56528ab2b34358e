//! `Cluster`: one node's membership in a named cluster over NATS, and the handle to the
//! registry, remote watches and remote spawn.
//!
//! # Ground rules
//!
//! - A cluster handle owns its own NATS connection and a small tokio runtime (one worker);
//!   agents never need async — every operation is a plain call, blocking ones bounded by a
//!   timeout.
//! - One **driver task** does membership, in order: heartbeats heard, leave messages,
//!   evictions and the periodic tick (send a heartbeat every `heartbeat` interval; expire the
//!   silent members). Every change is announced from that task, in order: for a `Down`, the
//!   remote watches of the incarnation fire first, then [`NodeDown`] is published on
//!   [`Cluster::events`], then the registry entries of the incarnation are deleted (in the
//!   background). So a subscriber that also watches agents of that node receives their
//!   [`RemoteTerminated`](crate::RemoteTerminated) before the `NodeDown`.
//! - A node that does not hear **its own** heartbeat for `bound` while its connection is
//!   down is cut off from NATS: the others are declaring it down at the same moment. It rejoins at once as a new
//!   incarnation (its view starts empty; [`Rejoined`] is published). A node told by another
//!   that its incarnation is down there (a partition between NATS servers healed) rejoins the
//!   same way.
//! - [`Cluster::leave`] publishes a leave message (the others report
//!   [`DownReason::Left`](crate::DownReason::Left) at once instead of after the bound), stops
//!   the tasks and closes the connection. Dropping every handle without `leave` stops the
//!   runtime: the others see a timeout.

use crate::error::StartError;
use crate::event::{NodeDown, NodeUp};
use crate::membership::{Change, Membership};
use crate::node::{NodeInfo, NodeKey, valid_token};
use crate::sentinel::Sentinel;
use crate::spawn::Factories;
use crate::stats::{ClusterStats, Counters};
use crate::watch::Watches;
use crate::wire::{decode, encode};
use agentry::{EnvHandle, Mbox, MultiMbox};
use async_nats::jetstream::kv;
use futures_util::StreamExt;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Published on [`Cluster::events`] when this node rejoined as a new incarnation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejoined {
    /// The incarnation that the others consider down.
    pub old: NodeKey,
    /// The new one.
    pub new: NodeKey,
}

/// A node of a cluster: the handle. Cheap to clone; usable from any thread (see the module's
/// ground rules).
#[derive(Clone)]
pub struct Cluster {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) bound: Duration,
    pub(crate) heartbeat: Duration,
    pub(crate) timeout: Duration,
    pub(crate) prefix: String,
    pub(crate) me: Mutex<NodeInfo>,
    pub(crate) rt: tokio::runtime::Handle,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    pub(crate) client: async_nats::Client,
    pub(crate) kv: Option<kv::Store>,
    pub(crate) view: Mutex<Membership>,
    pub(crate) events: MultiMbox,
    pub(crate) env: EnvHandle,
    pub(crate) watches: Watches,
    pub(crate) locals: crate::sentinel::Locals,
    pub(crate) factories: Factories,
    pub(crate) sentinel: OnceLock<Mbox>,
    pub(crate) counters: Counters,
    closed: AtomicBool,
}

impl Inner {
    pub(crate) fn me(&self) -> NodeInfo {
        self.me
            .lock()
            .expect("invariant: no panic under this lock")
            .clone()
    }

    pub(crate) fn my_key(&self) -> NodeKey {
        self.me
            .lock()
            .expect("invariant: no panic under this lock")
            .key()
    }

    pub(crate) fn subject(&self, tail: &str) -> String {
        format!("{}.{tail}", self.prefix)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Whether `key` is this node or a member up in its view.
    pub(crate) fn is_live(&self, key: &NodeKey) -> bool {
        *key == self.my_key()
            || self
                .view
                .lock()
                .expect("invariant: no panic under this lock")
                .is_up(key)
    }

    /// Runs `fut` on the runtime and waits for it, at most `timeout`.
    pub(crate) fn block<T: Send + 'static>(
        &self,
        timeout: Duration,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.rt.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv_timeout(timeout).ok()
    }

    /// Announces `changes` (see the ground rules for the order).
    fn announce(self: &Arc<Self>, changes: Vec<Change>) {
        for c in changes {
            match c {
                Change::Up(info) => {
                    self.counters.inc(&self.counters.nodes_up);
                    self.events.send(NodeUp(info));
                }
                Change::Down(node, reason) => {
                    self.counters.inc(&self.counters.nodes_down);
                    self.watches.node_down(self, &node, reason);
                    self.events.send(NodeDown {
                        node: node.clone(),
                        reason,
                    });
                    crate::registry::forget_node(self, node);
                }
            }
        }
    }

    /// This node becomes a new incarnation (see the ground rules).
    fn rejoin(self: &Arc<Self>) {
        let (old, new) = {
            let mut me = self.me.lock().expect("invariant: no panic under this lock");
            let old = me.key();
            me.incarnation = new_incarnation(me.incarnation);
            (old, me.key())
        };
        self.counters.inc(&self.counters.rejoins);
        let changes = self
            .view
            .lock()
            .expect("invariant: no panic under this lock")
            .rejoin();
        self.announce(changes);
        tracing::warn!(%old, %new, "agentry-cluster: rejoined as a new incarnation");
        self.events.send(Rejoined { old, new });
    }
}

/// A fresh incarnation number, greater than `previous`.
fn new_incarnation(previous: u64) -> u64 {
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0);
    // The pid in the low bits tells apart processes started in the same microsecond.
    let candidate = (micros << 8) | u64::from(std::process::id() & 0xff);
    candidate.max(previous + 1)
}

impl Cluster {
    /// A builder for node `node_id` of cluster `cluster` (both one token `[A-Za-z0-9_-]+`).
    pub fn builder(cluster: &str, node_id: &str) -> ClusterBuilder {
        ClusterBuilder {
            cluster: cluster.to_owned(),
            node: node_id.to_owned(),
            meta: BTreeMap::new(),
            bound: Duration::from_secs(2),
            heartbeat: None,
            timeout: Duration::from_secs(5),
            registry: true,
        }
    }

    /// This node as the others see it (its current incarnation).
    pub fn me(&self) -> NodeInfo {
        self.inner.me()
    }

    /// The members up in this node's view (not this node), by id.
    pub fn members(&self) -> Vec<NodeInfo> {
        self.inner
            .view
            .lock()
            .expect("invariant: no panic under this lock")
            .members()
    }

    /// Whether `node` is this node's incarnation or up in its view.
    pub fn is_up(&self, node: &NodeKey) -> bool {
        self.inner.is_live(node)
    }

    /// The multi mbox on which [`NodeUp`], [`NodeDown`] and [`Rejoined`] are published
    /// (subscribers' handlers take `Arc<NodeUp>` etc.). Members already up when an agent
    /// subscribes are in [`members`](Self::members).
    pub fn events(&self) -> MultiMbox {
        self.inner.events.clone()
    }

    /// The failure bound: a member not heard for this long is down.
    pub fn bound(&self) -> Duration {
        self.inner.bound
    }

    /// Counters.
    pub fn stats(&self) -> ClusterStats {
        self.inner.counters.snapshot()
    }

    /// Leaves the cluster: publishes a leave message (the others report `Left`), then stops
    /// this handle's tasks and closes its connection. Later operations fail with `Closed`.
    pub fn leave(&self) {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let inner = Arc::clone(&self.inner);
        let key = inner.my_key();
        let subject = inner.subject("leave");
        let _ = self.inner.block(self.inner.timeout, async move {
            let _ = inner.client.publish(subject, encode(&key)).await;
            let _ = inner.client.flush().await;
        });
        if let Some(rt) = self
            .inner
            .runtime
            .lock()
            .expect("invariant: no panic under this lock")
            .take()
        {
            rt.shutdown_background();
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.get_mut().ok().and_then(Option::take) {
            rt.shutdown_background();
        }
    }
}

impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cluster")
            .field("prefix", &self.inner.prefix)
            .field("me", &self.inner.my_key())
            .finish_non_exhaustive()
    }
}

/// Settings of a [`Cluster`] node ([`Cluster::builder`]).
#[derive(Debug, Clone)]
pub struct ClusterBuilder {
    cluster: String,
    node: String,
    meta: BTreeMap<String, String>,
    bound: Duration,
    heartbeat: Option<Duration>,
    timeout: Duration,
    registry: bool,
}

impl ClusterBuilder {
    /// Adds metadata announced in every heartbeat ([`NodeInfo::meta`]).
    pub fn meta(&mut self, key: &str, value: &str) -> &mut Self {
        self.meta.insert(key.to_owned(), value.to_owned());
        self
    }

    /// The failure bound: a member not heard for this long is declared down (default 2 s,
    /// which with the default heartbeat reports a killed process down within 3 s). At least
    /// 100 ms.
    pub fn failure_bound(&mut self, bound: Duration) -> &mut Self {
        self.bound = bound;
        self
    }

    /// The heartbeat interval (default: a quarter of the bound). At most half the bound.
    pub fn heartbeat(&mut self, interval: Duration) -> &mut Self {
        self.heartbeat = Some(interval);
        self
    }

    /// The timeout of blocking operations: connecting, registry calls, remote spawn
    /// (default 5 s).
    pub fn timeout(&mut self, timeout: Duration) -> &mut Self {
        self.timeout = timeout;
        self
    }

    /// Whether to open the registry's JetStream key-value bucket (default on; the servers
    /// need JetStream). Without it, registry operations fail with `Disabled`.
    pub fn registry(&mut self, on: bool) -> &mut Self {
        self.registry = on;
        self
    }

    /// Connects to NATS at `urls` (comma-separated: the servers this node may use — servers
    /// of the NATS cluster that are not listed are not used), joins the cluster and starts the node's tasks. Agents of `env` receive
    /// the events.
    pub fn join(&self, env: &EnvHandle, urls: &str) -> Result<Cluster, StartError> {
        for (what, v) in [("cluster name", &self.cluster), ("node id", &self.node)] {
            if !valid_token(v) {
                return Err(StartError::InvalidName {
                    what,
                    value: v.clone(),
                });
            }
        }
        if self.bound < Duration::from_millis(100) {
            return Err(StartError::InvalidSetting("failure bound below 100 ms"));
        }
        let heartbeat = self.heartbeat.unwrap_or(self.bound / 4);
        if heartbeat.is_zero() || heartbeat > self.bound / 2 {
            return Err(StartError::InvalidSetting(
                "heartbeat must be positive and at most half the bound",
            ));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("agentry-cluster")
            .enable_all()
            .build()
            .map_err(|e| StartError::Runtime(e.to_string()))?;
        let rt = runtime.handle().clone();
        let addrs: Vec<String> = urls.split(',').map(|s| s.trim().to_owned()).collect();
        let name = format!("agentry-cluster {}/{}", self.cluster, self.node);
        let timeout = self.timeout;
        let connected = rt.block_on(async move {
            tokio::time::timeout(
                timeout,
                async_nats::ConnectOptions::new()
                    .name(name)
                    .retry_on_initial_connect()
                    // Only the servers given: which servers a node may use is the
                    // application's choice (and a partition test's).
                    .ignore_discovered_servers()
                    .connection_timeout(timeout)
                    .max_reconnects(None)
                    .reconnect_delay_callback(|n| {
                        Duration::from_millis((20 * (n as u64 + 1)).min(250))
                    })
                    .connect(addrs),
            )
            .await
        });
        let client = match connected {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(StartError::Connect(e.to_string())),
            Err(_) => return Err(StartError::Connect("timed out".into())),
        };
        let kv = if self.registry {
            Some(crate::registry::open_bucket(
                &rt,
                &client,
                &self.cluster,
                timeout,
            )?)
        } else {
            None
        };
        let me = NodeInfo {
            id: self.node.clone(),
            incarnation: new_incarnation(0),
            meta: self.meta.clone(),
            factories: Vec::new(),
        };
        let inner = Arc::new(Inner {
            bound: self.bound,
            heartbeat,
            timeout,
            prefix: format!("agentry.cluster.{}", self.cluster),
            view: Mutex::new(Membership::new(&self.node, self.bound)),
            me: Mutex::new(me),
            rt,
            runtime: Mutex::new(Some(runtime)),
            client,
            kv,
            events: env.create_mbox(),
            env: env.clone(),
            watches: Watches::default(),
            locals: crate::sentinel::Locals::default(),
            factories: Factories::default(),
            sentinel: OnceLock::new(),
            counters: Counters::default(),
            closed: AtomicBool::new(false),
        });
        let sentinel = env
            .register_agent(Sentinel::new(Arc::downgrade(&inner)))
            .map_err(|e| StartError::Agent(e.to_string()))?;
        let _ = inner.sentinel.set(sentinel);
        start_tasks(&inner)?;
        Ok(Cluster { inner })
    }
}

/// Subscribes the node's subjects and starts its tasks; returns once NATS has the
/// subscriptions.
fn start_tasks(inner: &Arc<Inner>) -> Result<(), StartError> {
    let id = inner.my_key().id;
    let subjects = [
        inner.subject("hb"),
        inner.subject("leave"),
        inner.subject(&format!("evict.{id}")),
        inner.subject("gone"),
        inner.subject(&format!("watch.{id}")),
        inner.subject(&format!("spawn.{id}")),
        inner.subject(&format!("stop.{id}")),
    ];
    let client = inner.client.clone();
    let subs = inner
        .block(inner.timeout, async move {
            let mut subs = Vec::new();
            for s in subjects {
                subs.push(client.subscribe(s).await?);
            }
            client.flush().await.map_err(|e| {
                async_nats::SubscribeError::with_source(
                    async_nats::client::SubscribeErrorKind::Other,
                    e,
                )
            })?;
            Ok::<_, async_nats::SubscribeError>(subs)
        })
        .ok_or_else(|| StartError::Subscribe("timed out".into()))?
        .map_err(|e| StartError::Subscribe(e.to_string()))?;
    let mut subs = subs.into_iter();
    let mut next = || {
        subs.next()
            .expect("invariant: one subscriber per subject above")
    };
    let (hb, leave, evict, gone, watch, spawn, stop) =
        (next(), next(), next(), next(), next(), next(), next());
    inner
        .rt
        .spawn(drive(Arc::downgrade(inner), hb, leave, evict));
    inner
        .rt
        .spawn(crate::watch::serve_gone(Arc::downgrade(inner), gone));
    inner.rt.spawn(crate::sentinel::serve_queries(
        Arc::downgrade(inner),
        watch,
        stop,
    ));
    inner
        .rt
        .spawn(crate::spawn::serve(Arc::downgrade(inner), spawn));
    Ok(())
}

/// The driver task (see the ground rules).
async fn drive(
    weak: std::sync::Weak<Inner>,
    mut hb: async_nats::Subscriber,
    mut leave: async_nats::Subscriber,
    mut evict: async_nats::Subscriber,
) {
    let Some(inner) = weak.upgrade() else { return };
    let tick_every =
        (inner.heartbeat / 4).clamp(Duration::from_millis(5), Duration::from_millis(100));
    let heartbeat = inner.heartbeat;
    let bound = inner.bound;
    drop(inner);
    let mut tick = tokio::time::interval(tick_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_sent: Option<Instant> = None;
    let mut self_heard = Instant::now();
    loop {
        tokio::select! {
            m = hb.next() => {
                let (Some(m), Some(inner)) = (m, weak.upgrade()) else { return };
                let Some(info) = decode::<NodeInfo>(&m.payload) else {
                    inner.counters.inc(&inner.counters.malformed);
                    continue;
                };
                let me = inner.my_key();
                if info.id == me.id {
                    if info.incarnation == me.incarnation {
                        self_heard = Instant::now();
                    }
                    continue;
                }
                let out = inner.view.lock().expect("invariant: no panic under this lock")
                    .heartbeat(Instant::now(), &info);
                if out.evict {
                    inner.counters.inc(&inner.counters.evictions_sent);
                    let subject = inner.subject(&format!("evict.{}", info.id));
                    let publish = inner.client.publish(subject, encode(&info.incarnation));
                    let _ = tokio::time::timeout(heartbeat, publish).await;
                }
                inner.announce(out.changes);
            }
            m = leave.next() => {
                let (Some(m), Some(inner)) = (m, weak.upgrade()) else { return };
                let Some(key) = decode::<NodeKey>(&m.payload) else {
                    inner.counters.inc(&inner.counters.malformed);
                    continue;
                };
                let change = inner.view.lock().expect("invariant: no panic under this lock").leave(&key);
                inner.announce(change.into_iter().collect());
            }
            m = evict.next() => {
                let (Some(m), Some(inner)) = (m, weak.upgrade()) else { return };
                let Some(incarnation) = decode::<u64>(&m.payload) else {
                    inner.counters.inc(&inner.counters.malformed);
                    continue;
                };
                if incarnation == inner.my_key().incarnation {
                    inner.rejoin();
                    self_heard = Instant::now();
                    last_sent = None;
                }
            }
            _ = tick.tick() => {
                let Some(inner) = weak.upgrade() else { return };
                if inner.is_closed() {
                    return;
                }
                let now = Instant::now();
                if now.duration_since(self_heard) >= bound
                    && inner.client.connection_state() != async_nats::connection::State::Connected
                {
                    // Cut off from NATS: the others are declaring this incarnation down. (A
                    // late own heartbeat on a live connection is load, not a cut: if the
                    // others declared this node down meanwhile, their eviction says so.)
                    inner.rejoin();
                    self_heard = now;
                    last_sent = None;
                }
                if last_sent.is_none_or(|t| now.duration_since(t) >= heartbeat) {
                    last_sent = Some(now);
                    let me = inner.me();
                    // Bounded: a full outbound buffer while disconnected must not stop
                    // the tick (expiry and the cut-off check).
                    let publish = inner.client.publish(inner.subject("hb"), encode(&me));
                    let _ = tokio::time::timeout(heartbeat, publish).await;
                }
                let changes = inner.view.lock().expect("invariant: no panic under this lock").expire(now);
                inner.announce(changes);
            }
        }
    }
}
