//! The transport-independent heart of a gateway: outbound buffer, pending requests, local
//! routes, inbound dispatch, counters and reports.
//!
//! # Ground rules
//!
//! - **Senders never hop through an agent.** `RemoteMbox::send` encodes on the caller's
//!   thread. Over NATS, while connected and with nothing buffered, it hands the envelope
//!   straight to the client's command channel (one non-blocking poll); otherwise the
//!   envelope goes into the bounded outbound [`Queue`] and the transport's writer (a task of
//!   the NATS gateway's runtime, or the link's writer) takes it from there. SObjectizer 4.4's
//!   SOP channels routed every message through a communicator agent and a transport agent and
//!   ran single messages at half the speed of its raw channels (the SObjectizer 4.4 beta 5
//!   notes, 2007, "Соображения о производительности транспортной подсистемы").
//! - **Inbound delivery runs on the transport's threads**: a NATS subscription task or the
//!   link's reader thread decodes and calls `Mbox::send` / `MultiMbox::send` (allowed from
//!   any thread; agentry counts what it refuses). One task/thread per subscription keeps
//!   per-subject order.
//! - **Every envelope that does not arrive is accounted for exactly once**: the sender got
//!   it back (`SendError`), or it is in one of `overflow_dropped`, `lost_in_flight`,
//!   `dropped_on_close` (outbound), or a rejection counter / `unrouted` (inbound). Requests
//!   additionally complete exactly once: the pending entry is removed under its lock by
//!   whoever completes it (reply, failure, timeout, loss, disconnect, close).
//! - **Locks are leaves.** The queue lock and the pending lock are never held together
//!   (the disconnect scan copies correlation ids out of the queue first) and never held
//!   while user code (routes, callbacks, agentry sends) runs.

pub(crate) mod outbound;
pub(crate) mod pending;
pub(crate) mod routes;

use crate::envelope::Envelope;
use crate::error::{DecodeError, RemoteFailure, RequestError};
use crate::event::{LossReason, RemoteEvent};
use crate::registry::Registry;
use crate::stats::{Counters, RemoteStats, inc};
use crate::subject::Scheme;
use agentry::MultiMbox;
use bytes::Bytes;
use outbound::{OutKind, OutMsg, Overflow, Queue, Refused};
use pending::{Pending, ReplyData, Waiter};
use routes::{Inbound, RouteTable};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError, RwLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How the core wakes its transport's writer after a push into an empty buffer.
pub(crate) enum Kick {
    /// NATS: wake the writer task; `client` allows the direct path (see `enqueue`).
    Nats {
        wake: Arc<tokio::sync::Notify>,
        client: async_nats::Client,
    },
    Link(Weak<crate::link::LinkShared>),
}

pub(crate) struct CoreConfig {
    pub(crate) namespace: String,
    pub(crate) capacity: usize,
    pub(crate) overflow: Overflow,
    pub(crate) max_payload: usize,
    pub(crate) events: Option<MultiMbox>,
}

type Tables = HashMap<String, Vec<Arc<RouteTable>>>;

pub(crate) struct Core {
    pub(crate) scheme: Scheme,
    pub(crate) gateway_id: String,
    pub(crate) registry: Registry,
    pub(crate) counters: Counters,
    max_payload: AtomicUsize,
    capacity: usize,
    overflow: Overflow,
    queue: Mutex<Queue>,
    pub(crate) pending: Pending,
    next_corr: AtomicU64,
    next_route: AtomicU64,
    tables: RwLock<Arc<Tables>>,
    connected: AtomicBool,
    /// Signals `wait_connected` and `wait_drained` (state lives in the atomics / queue).
    state_lock: Mutex<()>,
    state_cv: Condvar,
    /// Envelopes the writer took from the queue and has not yet handed over.
    in_hand: AtomicUsize,
    events: Option<MultiMbox>,
    kick: OnceLock<Kick>,
    sweeper: Mutex<Option<JoinHandle<()>>>,
    log_budget: AtomicU64,
}

/// Logs the first few and then every 2^n-th occurrence (peers can flood us).
fn throttled(n: u64) -> bool {
    n <= 8 || n.is_power_of_two()
}

impl Core {
    pub(crate) fn new(
        config: CoreConfig,
        registry: Registry,
    ) -> Result<Arc<Core>, crate::StartError> {
        let gateway_id = crate::subject::new_gateway_id();
        let scheme =
            Scheme::new(&config.namespace, &gateway_id).map_err(crate::StartError::Namespace)?;
        let core = Arc::new(Core {
            scheme,
            gateway_id,
            registry,
            counters: Counters::default(),
            max_payload: AtomicUsize::new(config.max_payload),
            capacity: config.capacity.max(1),
            overflow: config.overflow,
            queue: Mutex::new(Queue::new()),
            pending: Pending::default(),
            next_corr: AtomicU64::new(1),
            next_route: AtomicU64::new(1),
            tables: RwLock::new(Arc::new(HashMap::new())),
            connected: AtomicBool::new(false),
            state_lock: Mutex::new(()),
            state_cv: Condvar::new(),
            in_hand: AtomicUsize::new(0),
            events: config.events,
            kick: OnceLock::new(),
            sweeper: Mutex::new(None),
            log_budget: AtomicU64::new(0),
        });
        let sweeper = Arc::clone(&core);
        let join = std::thread::Builder::new()
            .name("agentry-remote-sweep".into())
            .spawn(move || {
                sweeper.pending.run_sweeper(|w| {
                    inc(&sweeper.counters.timed_out);
                    w.complete(Err(RequestError::Timeout));
                })
            })
            .map_err(crate::StartError::Runtime)?;
        *core.sweeper.lock().unwrap_or_else(PoisonError::into_inner) = Some(join);
        Ok(core)
    }

    pub(crate) fn set_kick(&self, kick: Kick) {
        // Set once by the transport at start.
        let _ = self.kick.set(kick);
    }

    pub(crate) fn max_payload(&self) -> usize {
        self.max_payload.load(Ordering::Relaxed)
    }

    pub(crate) fn limit_max_payload(&self, max: usize) {
        self.max_payload.fetch_min(max, Ordering::Relaxed);
    }

    pub(crate) fn next_corr(&self) -> u64 {
        self.next_corr.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn next_route(&self) -> u64 {
        self.next_route.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn stats(&self) -> RemoteStats {
        let buffered = self.queue().items.len();
        self.counters
            .snapshot(self.is_connected(), buffered, self.pending.len())
    }

    pub(crate) fn event(&self, e: RemoteEvent) {
        if let Some(m) = &self.events {
            m.send(e);
        }
    }

    // ----- outbound -----

    /// Hands an envelope to the transport: directly when possible (NATS, connected, nothing
    /// buffered or in the writer's hands — so a sender's order is kept), else through the
    /// outbound buffer (overflow policy applied, writer woken).
    pub(crate) fn enqueue(&self, msg: OutMsg) -> Result<(), Refused> {
        if let Some(Kick::Nats { client, .. }) = self.kick.get()
            && self.is_connected()
            && self.in_hand.load(Ordering::Acquire) == 0
            && {
                let q = self.queue();
                !q.closed && q.items.is_empty()
            }
            && crate::nats::publish_now(client, &msg)
        {
            self.count_sent(msg.kind);
            return Ok(());
        }
        let pushed = self.queue().push(msg, self.capacity, self.overflow);
        let (was_empty, evicted) = match pushed {
            Ok(v) => v,
            Err(Refused::Full(m)) => {
                let n = inc(&self.counters.overflow_rejected);
                if throttled(n) {
                    tracing::warn!(subject = %m.subject, total = n, "outbound buffer full: send refused");
                }
                return Err(Refused::Full(m));
            }
            Err(r) => return Err(r),
        };
        if let Some(victim) = evicted {
            self.lose(victim, LossReason::Overflow);
        }
        if was_empty {
            self.kick();
        }
        Ok(())
    }

    pub(crate) fn kick(&self) {
        match self.kick.get() {
            Some(Kick::Nats { wake, .. }) => wake.notify_one(),
            Some(Kick::Link(l)) => {
                if let Some(l) = l.upgrade() {
                    l.on_push();
                }
            }
            None => {}
        }
    }

    /// Moves up to `max` envelopes into `out` (they are "in hand" until
    /// [`done_writing`](Self::done_writing)).
    pub(crate) fn drain(&self, out: &mut Vec<OutMsg>, max: usize) {
        let mut q = self.queue();
        let n = q.items.len().min(max);
        out.extend(q.items.drain(..n));
        self.in_hand.store(n, Ordering::Release);
    }

    /// The writer handed over (or accounted for) what it took.
    pub(crate) fn done_writing(&self) {
        self.in_hand.store(0, Ordering::Release);
        self.notify_state();
    }

    /// Nothing buffered and nothing in the writer's hands.
    pub(crate) fn is_drained(&self) -> bool {
        let q = self.queue();
        q.items.is_empty() && self.in_hand.load(Ordering::Acquire) == 0
    }

    fn notify_state(&self) {
        let _g = self
            .state_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.state_cv.notify_all();
    }

    /// Waits until `cond` holds (re-checked whenever the connection state changes or the
    /// writer finishes a batch), or `deadline`.
    pub(crate) fn wait_until(&self, deadline: Instant, cond: impl Fn(&Core) -> bool) -> bool {
        let mut g = self
            .state_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        loop {
            if cond(self) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            // Bounded slices: a condition may also change without a notification (e.g. the
            // queue emptied by close).
            let slice = (deadline - now).min(Duration::from_millis(50));
            g = self
                .state_cv
                .wait_timeout(g, slice)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    pub(crate) fn wait_connected(&self, timeout: Duration) -> bool {
        let deadline = Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400));
        self.wait_until(deadline, |c| c.is_connected())
    }

    pub(crate) fn queue_len(&self) -> usize {
        self.queue().items.len()
    }

    /// Accounts for an envelope that will not be sent.
    pub(crate) fn lose(&self, msg: OutMsg, reason: LossReason) {
        let (counter, err) = match reason {
            LossReason::Overflow => (&self.counters.overflow_dropped, RequestError::BufferFull),
            LossReason::InFlight => (&self.counters.lost_in_flight, RequestError::Disconnected),
            LossReason::Closed => (&self.counters.dropped_on_close, RequestError::Closed),
        };
        let n = inc(counter);
        if throttled(n) {
            tracing::warn!(subject = %msg.subject, ?reason, total = n, "outbound envelope lost");
        }
        if let Some(corr) = msg.request
            && let Some(w) = self.pending.remove(corr)
        {
            w.complete(Err(err));
        }
        self.event(RemoteEvent::Lost {
            subject: msg.subject.to_string(),
            type_name: msg.envelope.tag.map(|t| t.name.to_string()),
            reason,
        });
    }

    /// Counts an envelope handed to the transport.
    pub(crate) fn count_sent(&self, kind: OutKind) {
        inc(&self.counters.sent);
        match kind {
            OutKind::Message => {}
            OutKind::Request => {
                inc(&self.counters.requests_sent);
            }
            OutKind::Reply => {
                inc(&self.counters.replies_sent);
            }
        }
    }

    /// Sends a failure reply to `reply` (best effort: a full buffer counts it).
    pub(crate) fn send_failure(&self, reply: &str, corr: Option<u64>, f: RemoteFailure) {
        let msg = OutMsg {
            subject: async_nats::Subject::from(reply),
            reply: None,
            envelope: Envelope::failure(corr, f),
            payload: Bytes::new(),
            request: None,
            kind: OutKind::Reply,
        };
        let _ = self.enqueue(msg);
    }

    // ----- connection state -----

    pub(crate) fn set_connected(&self) {
        if !self.connected.swap(true, Ordering::AcqRel) {
            inc(&self.counters.connects);
            tracing::info!(gateway = %self.gateway_id, "connected");
            self.notify_state();
            self.event(RemoteEvent::Connected);
        }
    }

    /// The connection dropped: requests already handed to it fail with `Disconnected`
    /// (still-buffered ones wait for the next connection).
    pub(crate) fn set_disconnected(&self) {
        if !self.connected.swap(false, Ordering::AcqRel) {
            return;
        }
        inc(&self.counters.disconnects);
        self.notify_state();
        tracing::warn!(gateway = %self.gateway_id, "disconnected; buffering sends");
        self.event(RemoteEvent::Disconnected);
        let keep: HashSet<u64> = self
            .queue()
            .items
            .iter()
            .filter_map(|m| m.request)
            .collect();
        for w in self.pending.take_all_except(&keep) {
            inc(&self.counters.disconnected_requests);
            w.complete(Err(RequestError::Disconnected));
        }
    }

    // ----- routes -----

    /// The table for (subject, group), created by `create` if new (the bool says so).
    pub(crate) fn table(
        &self,
        subject: &str,
        group: Option<&str>,
        serving: bool,
    ) -> (Arc<RouteTable>, bool) {
        let mut g = self.tables.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(t) = g
            .get(subject)
            .and_then(|v| v.iter().find(|t| t.group.as_deref() == group))
        {
            return (Arc::clone(t), false);
        }
        let t = Arc::new(RouteTable::new(
            subject.to_owned(),
            group.map(str::to_owned),
            serving,
        ));
        let mut map = (**g).clone();
        map.entry(subject.to_owned())
            .or_default()
            .push(Arc::clone(&t));
        *g = Arc::new(map);
        (t, true)
    }

    /// Removes route `id` from `table`; returns true if the table became empty and was
    /// dropped (the transport then unsubscribes).
    pub(crate) fn remove_route(&self, table: &Arc<RouteTable>, id: u64) -> bool {
        let mut g = self.tables.write().unwrap_or_else(PoisonError::into_inner);
        if !table.remove(id) {
            return false;
        }
        let mut map = (**g).clone();
        if let Some(v) = map.get_mut(&table.subject) {
            v.retain(|t| !Arc::ptr_eq(t, table));
            if v.is_empty() {
                map.remove(&table.subject);
            }
        }
        *g = Arc::new(map);
        true
    }

    /// Every table of `subject` (the link routes by subject).
    pub(crate) fn tables_of(&self, subject: &str) -> Option<Vec<Arc<RouteTable>>> {
        let map = Arc::clone(&self.tables.read().unwrap_or_else(PoisonError::into_inner));
        map.get(subject).cloned()
    }

    // ----- inbound -----

    /// Counts, logs and reports a rejected inbound envelope.
    pub(crate) fn reject(&self, subject: &str, error: DecodeError) {
        use crate::error::RejectKind as K;
        let c = &self.counters;
        let n = inc(match error.kind() {
            K::UnknownType => &c.rejected_unknown_type,
            K::WrongVersion => &c.rejected_wrong_version,
            K::Oversized => &c.rejected_oversized,
            K::Malformed => &c.rejected_malformed,
        });
        let total = self.log_budget.fetch_add(1, Ordering::Relaxed) + 1;
        if throttled(total) {
            tracing::warn!(subject = %crate::error::truncate(subject, 80), %error, kind_total = n, "inbound envelope rejected");
        }
        self.event(RemoteEvent::Rejected {
            subject: crate::error::truncate(subject, 200),
            error,
        });
    }

    /// Delivers one inbound envelope through `table`.
    pub(crate) fn dispatch(
        self: &Arc<Self>,
        table: &RouteTable,
        subject: &str,
        reply: Option<&str>,
        envelope: Result<Envelope, DecodeError>,
        payload: &[u8],
    ) {
        inc(&self.counters.received);
        let request_reply = reply.filter(|_| table.serving);
        let fail = |core: &Core, e: DecodeError| {
            let kind = e.kind();
            core.reject(subject, e);
            if let Some(r) = request_reply {
                core.send_failure(r, None, RemoteFailure::Rejected(kind));
            }
        };
        let envelope = match envelope {
            Ok(e) => e,
            Err(e) => return fail(self, e),
        };
        let Some(tag) = &envelope.tag else {
            return fail(
                self,
                DecodeError::malformed("envelope", "a failure reply on a subscription subject"),
            );
        };
        if table.serving && reply.is_none() {
            return fail(self, DecodeError::malformed("request", "no reply subject"));
        }
        let Some(routes) = table.lookup(tag) else {
            match self.registry.check_tag(tag) {
                Err(e) => fail(self, e),
                Ok(()) => {
                    let n = inc(&self.counters.unrouted);
                    if throttled(n) {
                        tracing::debug!(subject, type_name = %tag.name, "no local route for this type");
                    }
                    if let Some(r) = request_reply {
                        self.send_failure(r, envelope.corr, RemoteFailure::NoRoute);
                    }
                }
            }
            return;
        };
        let plain = match self
            .registry
            .plain_payload(envelope.codec, payload, self.max_payload())
        {
            Ok(p) => p,
            Err(e) => return fail(self, e),
        };
        let inbound = Inbound {
            plain: &plain,
            reply,
            corr: envelope.corr,
        };
        for (_, route) in routes.iter() {
            if let Err(e) = route(self, &inbound) {
                fail(self, e);
            }
        }
    }

    /// Completes a pending request with a reply (or "no responders").
    pub(crate) fn dispatch_reply(
        &self,
        subject: &str,
        no_responders: bool,
        envelope: Result<Envelope, DecodeError>,
        payload: Bytes,
    ) {
        let Some(corr) = self.scheme.parse_reply(subject) else {
            return self.reject(subject, DecodeError::malformed("reply subject", subject));
        };
        let Some(waiter) = self.pending.remove(corr) else {
            let n = inc(&self.counters.late_replies);
            if throttled(n) {
                tracing::debug!(
                    corr,
                    "reply for no waiting request (late or failed already)"
                );
            }
            return;
        };
        let outcome = if no_responders {
            inc(&self.counters.no_responders);
            Err(RequestError::NoResponders)
        } else {
            match envelope {
                Err(e) => {
                    self.reject(subject, e.clone());
                    Err(RequestError::BadReply(e))
                }
                Ok(env) => match env.failure {
                    Some(f) => {
                        inc(&self.counters.remote_failures);
                        Err(RequestError::Remote(f))
                    }
                    None => {
                        inc(&self.counters.replies_received);
                        Ok(ReplyData {
                            envelope: env,
                            payload,
                        })
                    }
                },
            }
        };
        waiter.complete(outcome);
    }

    /// Decodes a reply as `R` (counting a rejection).
    pub(crate) fn decode_reply<R: crate::RemoteMessage>(
        &self,
        data: &ReplyData,
    ) -> Result<R, RequestError> {
        self.registry
            .decode::<R>(&data.envelope, &data.payload, self.max_payload())
            .map_err(|e| {
                self.reject("(reply)", e.clone());
                RequestError::BadReply(e)
            })
    }

    pub(crate) fn insert_pending(
        &self,
        corr: u64,
        waiter: Waiter,
        deadline: Option<std::time::Instant>,
    ) -> Result<(), Waiter> {
        self.pending.insert(corr, waiter, deadline)
    }

    // ----- close -----

    /// Refuses new sends, accounts for everything still buffered or pending, drops routes.
    pub(crate) fn close(&self) {
        let leftovers: Vec<OutMsg> = {
            let mut q = self.queue();
            q.closed = true;
            q.items.drain(..).collect()
        };
        for m in leftovers {
            self.lose(m, LossReason::Closed);
        }
        for w in self.pending.close() {
            w.complete(Err(RequestError::Closed));
        }
        *self.tables.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(HashMap::new());
        self.connected.store(false, Ordering::Release);
        let sweeper = self
            .sweeper
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(j) = sweeper
            && j.thread().id() != std::thread::current().id()
            && j.join().is_err()
        {
            tracing::error!("the request sweeper thread panicked");
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.queue().closed
    }
}

/// A type tag from the registry for `T`, or the subscribe error.
pub(crate) fn tag_for<T: 'static>(
    registry: &Registry,
) -> Result<Arc<crate::registry::TypeEntry>, crate::SubscribeError> {
    registry
        .entry_of::<T>()
        .ok_or(crate::SubscribeError::NotRegistered(
            std::any::type_name::<T>(),
        ))
}
