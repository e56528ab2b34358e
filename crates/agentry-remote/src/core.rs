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
//!   `dropped_on_close`, `unconfirmed` (outbound), or a rejection counter / `unrouted`
//!   (inbound). With receipts on (NATS, the default) a plain message is settled only by a
//!   receiving gateway's confirmation or by `unconfirmed`: what a dying connection swallowed
//!   is sent again ([`receipts`]). Requests
//!   additionally complete exactly once: the pending entry is removed under its lock by
//!   whoever completes it (reply, failure, timeout, loss, disconnect, close).
//! - **Locks are leaves.** The queue lock and the pending lock are never held together
//!   (the disconnect scan copies correlation ids out of the queue first) and never held
//!   while user code (routes, callbacks, agentry sends) runs.

pub(crate) mod outbound;
pub(crate) mod pending;
pub(crate) mod receipts;
pub(crate) mod routes;

use crate::envelope::Envelope;
use crate::error::{DecodeError, RemoteFailure, RequestError};
use crate::event::{LossReason, RemoteEvent};
use crate::registry::Registry;
use crate::stats::{Counters, RemoteStats, inc};
use crate::subject::Scheme;
use agentry::MultiMbox;
use agentry::trace::{ContextPropagation, TraceContext, with_trace_context};
use bytes::Bytes;
use outbound::{OutKind, OutMsg, Overflow, Queue, Refused};
use pending::{Pending, ReplyBytes, ReplyData, Waiter};
use receipts::{ReceiptConfig, Window};
use routes::{Inbound, RouteTable};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The seam between the core and the transport it serves: all the core asks of the NATS
/// client or the direct link. The core knows neither; each implements this (`nats.rs`,
/// `link.rs`) and hands it over once at start ([`Core::set_transport`]).
pub(crate) trait Transport: Send + Sync {
    /// The receipt window has room again: the transport's writer should look.
    fn wake_writer(&self);

    /// An envelope went into the outbound buffer (`was_empty`: it was empty before, so
    /// nobody is about to write it: the transport's writer must look).
    fn pushed(&self, was_empty: bool);

    /// Whether [`publish_now`](Self::publish_now) can ever succeed (the direct path of
    /// `Core::enqueue` is not tried otherwise).
    fn publishes_directly(&self) -> bool;

    /// Hands `msg` over on the caller's thread if that needs no wait; false if it would
    /// (the core then buffers it).
    fn publish_now(&self, msg: &OutMsg) -> bool;
}

pub(crate) struct CoreConfig {
    pub(crate) namespace: String,
    pub(crate) capacity: usize,
    pub(crate) overflow: Overflow,
    pub(crate) max_payload: usize,
    pub(crate) events: Option<MultiMbox>,
    /// Delivery receipts for plain messages (`None`: at most once).
    pub(crate) receipts: Option<ReceiptConfig>,
    /// The environment's trace-context hook, if it has one.
    pub(crate) propagation: Option<Arc<dyn ContextPropagation>>,
}

type Tables = HashMap<String, Vec<Arc<RouteTable>>>;

pub(crate) struct Core {
    pub(crate) scheme: Scheme,
    pub(crate) gateway_id: String,
    /// `gateway_id`, as receipts carry it.
    receipt_from: Arc<str>,
    pub(crate) registry: Registry,
    pub(crate) counters: Counters,
    max_payload: AtomicUsize,
    capacity: usize,
    overflow: Overflow,
    queue: Mutex<Queue>,
    /// Plain messages awaiting a receipt (receipts on only).
    window: Option<Mutex<Window>>,
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
    transport: OnceLock<Box<dyn Transport>>,
    sweeper: Mutex<Option<JoinHandle<()>>>,
    log_budget: AtomicU64,
    /// The environment's trace-context hook: what an outgoing envelope's trace context is
    /// taken from, and whether an inbound one is handed on (`None`: neither).
    propagation: Option<Arc<dyn ContextPropagation>>,
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
            receipt_from: gateway_id.as_str().into(),
            gateway_id,
            registry,
            counters: Counters::default(),
            max_payload: AtomicUsize::new(config.max_payload),
            capacity: config.capacity.max(1),
            overflow: config.overflow,
            queue: Mutex::new(Queue::new()),
            window: config.receipts.map(|c| Mutex::new(Window::new(c))),
            pending: Pending::default(),
            next_corr: AtomicU64::new(1),
            next_route: AtomicU64::new(1),
            tables: RwLock::new(Arc::new(HashMap::new())),
            connected: AtomicBool::new(false),
            state_lock: Mutex::new(()),
            state_cv: Condvar::new(),
            in_hand: AtomicUsize::new(0),
            events: config.events,
            transport: OnceLock::new(),
            sweeper: Mutex::new(None),
            log_budget: AtomicU64::new(0),
            propagation: config.propagation,
        });
        let sweeper = Arc::clone(&core);
        let join = std::thread::Builder::new()
            .name("agentry-remote-sweep".into())
            .spawn(move || {
                sweeper.pending.run_sweeper(|w| {
                    inc(&sweeper.counters.timed_out);
                    w.complete(&sweeper, Err(RequestError::Timeout));
                })
            })
            .map_err(crate::StartError::Runtime)?;
        *core.sweeper.lock().unwrap_or_else(PoisonError::into_inner) = Some(join);
        Ok(core)
    }

    /// The trace context an envelope sent from this thread now carries (none without a
    /// hook, or outside any span).
    pub(crate) fn trace_context(&self) -> Option<TraceContext> {
        self.propagation
            .as_deref()
            .and_then(agentry::trace::current_context)
    }

    /// Runs `deliver` (the local sends of one inbound message) so that they carry the
    /// context `trace` its envelope brought (or none), not whatever span this transport
    /// thread may be in; without a hook, just runs it.
    pub(crate) fn in_sender_context<R>(
        &self,
        trace: Option<TraceContext>,
        deliver: impl FnOnce() -> R,
    ) -> R {
        match self.propagation {
            Some(_) => with_trace_context(trace, deliver),
            None => deliver(),
        }
    }

    pub(crate) fn set_transport(&self, transport: Box<dyn Transport>) {
        // Set once by the transport at start.
        let _ = self.transport.set(transport);
    }

    /// The outbound buffer's capacity (also the durable publish queue's).
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
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

    fn window(&self) -> Option<std::sync::MutexGuard<'_, Window>> {
        self.window
            .as_ref()
            .map(|w| w.lock().unwrap_or_else(PoisonError::into_inner))
    }

    pub(crate) fn stats(&self) -> RemoteStats {
        let buffered = self.queue().items.len();
        let pending = self.pending.len();
        // The counters of settled messages are read under the window's lock, where they
        // change: a message is always either awaiting its receipt or counted.
        let window = self.window();
        self.counters.snapshot(
            self.is_connected(),
            buffered,
            window.as_ref().map_or(0, |w| w.len()),
            pending,
        )
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
    pub(crate) fn enqueue(&self, mut msg: OutMsg) -> Result<(), Refused> {
        if self.publish_direct(&mut msg) {
            self.handed_over(std::slice::from_ref(&msg));
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
        if let Some(transport) = self.transport.get() {
            transport.pushed(was_empty);
        }
        Ok(())
    }

    /// Publishes `msg` on the caller's thread if that keeps order and needs no wait: a
    /// transport that publishes directly (NATS), connected, nothing buffered or in the
    /// writer's hands, and — for a plain message with
    /// receipts on — room in the window and nothing waiting to be sent again (the message
    /// is numbered and tracked under the window's lock, so numbers follow publication).
    fn publish_direct(&self, msg: &mut OutMsg) -> bool {
        let Some(transport) = self.transport.get().filter(|t| t.publishes_directly()) else {
            return false;
        };
        if !self.is_connected() {
            return false;
        }
        {
            // `in_hand` is read under the queue's lock, where `drain` sets it: a batch the
            // writer took from the queue is either still there or in hand, never overtaken.
            let q = self.queue();
            if q.closed || !q.is_empty() || self.in_hand.load(Ordering::Acquire) != 0 {
                return false;
            }
        }
        match self.window() {
            Some(mut window) if msg.kind == OutKind::Message => {
                if !window.takes_direct() {
                    return false;
                }
                window.track(&self.receipt_from, msg, Instant::now());
                if transport.publish_now(msg) {
                    return true;
                }
                window.forget_last();
                msg.envelope.receipt = None;
                false
            }
            _ => transport.publish_now(msg),
        }
    }

    pub(crate) fn wake_writer(&self) {
        if let Some(transport) = self.transport.get() {
            transport.wake_writer();
        }
    }

    /// Moves up to `max` envelopes into `out` — confirmations first, plain messages only
    /// while the receipt window has room — and readies them for the wire: a plain message
    /// is numbered and tracked for its receipt, a request whose caller has stopped waiting
    /// (it timed out while buffered) is dropped and counted (`expired_unsent`). They are
    /// "in hand" until [`done_writing`](Self::done_writing).
    pub(crate) fn drain(&self, out: &mut Vec<OutMsg>, max: usize) {
        let room = self.window().map(|w| w.room());
        {
            // `in_hand` is set under the queue's lock: a sender that finds the queue empty
            // also finds the batch in hand, and does not overtake it.
            let mut q = self.queue();
            let n = q.take(out, max, room);
            self.in_hand.store(n, Ordering::Release);
        }
        let expired = self
            .pending
            .retain_waited(out, |m| m.request.filter(|_| m.kind == OutKind::Request));
        if expired > 0 {
            self.counters
                .expired_unsent
                .fetch_add(expired as u64, Ordering::Relaxed);
        }
        if let Some(mut window) = self.window() {
            let now = Instant::now();
            for m in out.iter_mut().filter(|m| m.kind == OutKind::Message) {
                window.track(&self.receipt_from, m, now);
            }
        }
    }

    /// Handing `msg` to the transport failed: lost, unless its receipt window keeps it to
    /// send again.
    pub(crate) fn publish_failed(&self, msg: OutMsg) {
        if msg.envelope.receipt.is_none() {
            self.lose(msg, LossReason::InFlight);
        }
    }

    /// While connected: the unconfirmed messages to send again now; gives up (and
    /// reports) those unconfirmed for the receipt timeout.
    pub(crate) fn receipts_due(&self) -> Vec<OutMsg> {
        let Some(mut window) = self.window() else {
            return Vec::new();
        };
        let due = window.due(Instant::now());
        // Counted under the window's lock, so that `stats` never sees a message neither
        // awaiting its receipt nor counted.
        let expired: Vec<(OutMsg, u64)> = due
            .expired
            .into_iter()
            .map(|m| (m, self.count_loss(LossReason::Unconfirmed)))
            .collect();
        self.counters
            .resent
            .fetch_add(due.resend.len() as u64, Ordering::Relaxed);
        drop(window);
        for (m, n) in expired {
            self.report_loss(m, LossReason::Unconfirmed, n);
        }
        due.resend
    }

    /// The writer handed the copies [`receipts_due`](Self::receipts_due) gave it to the
    /// transport: senders may publish on their own threads again (copies go first).
    pub(crate) fn resends_published(&self) {
        if let Some(mut w) = self.window() {
            w.resends_published();
        }
    }

    /// When [`receipts_due`](Self::receipts_due) next has work (`None`: receipts off).
    pub(crate) fn next_receipt_due(&self) -> Option<Instant> {
        self.window().map(|w| w.next_due(Instant::now()))
    }

    /// A receiving gateway's confirmations arrived.
    pub(crate) fn confirm(&self, payload: &[u8]) -> Result<(), DecodeError> {
        let ranges = receipts::decode_confirmations(payload)?;
        let now = Instant::now();
        let Some(mut window) = self.window() else {
            return Ok(());
        };
        let confirmed: usize = ranges
            .into_iter()
            .map(|(first, count)| window.confirm(first, count, now))
            .sum();
        // Counted under the window's lock (see `receipts_due`).
        self.counters
            .confirmed
            .fetch_add(confirmed as u64, Ordering::Relaxed);
        drop(window);
        if confirmed > 0 {
            // The window has room again, and a close waiting for every receipt may be done.
            self.wake_writer();
            self.notify_state();
        }
        Ok(())
    }

    /// Sends the confirmations `table` owes (its subscription has nothing more to read).
    pub(crate) fn send_confirmations(&self, table: &RouteTable) {
        for (from, seqs) in table.inbox().take_confirmations(Instant::now()) {
            let msg = OutMsg {
                subject: self.scheme.confirmation_subject(&from).into(),
                reply: None,
                envelope: Envelope::bare(),
                payload: receipts::encode_confirmations(seqs),
                request: None,
                kind: OutKind::Confirmation,
            };
            // Refused only when closed: the sender then reports it unconfirmed.
            let _ = self.enqueue(msg);
        }
    }

    /// Every accepted plain message confirmed or reported, and nothing left to send.
    pub(crate) fn is_settled(&self) -> bool {
        self.is_drained() && self.window().is_none_or(|w| w.len() == 0)
    }

    /// The writer handed over (or accounted for) what it took.
    pub(crate) fn done_writing(&self) {
        self.in_hand.store(0, Ordering::Release);
        self.notify_state();
    }

    /// Nothing buffered and nothing in the writer's hands.
    pub(crate) fn is_drained(&self) -> bool {
        let q = self.queue();
        q.is_empty() && self.in_hand.load(Ordering::Acquire) == 0
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
        let q = self.queue();
        q.items.len() + q.confirmations.len()
    }

    /// Accounts for an envelope that will not be sent.
    pub(crate) fn lose(&self, msg: OutMsg, reason: LossReason) {
        let n = self.count_loss(reason);
        self.report_loss(msg, reason, n);
    }

    /// Counts a loss; returns the reason's new total.
    fn count_loss(&self, reason: LossReason) -> u64 {
        inc(match reason {
            LossReason::Overflow => &self.counters.overflow_dropped,
            LossReason::InFlight => &self.counters.lost_in_flight,
            LossReason::Closed => &self.counters.dropped_on_close,
            LossReason::Unconfirmed => &self.counters.unconfirmed,
            LossReason::NotStored => &self.counters.durable_not_stored,
        })
    }

    /// Logs and reports a counted loss (the `n`-th of its reason), failing its request.
    fn report_loss(&self, msg: OutMsg, reason: LossReason, n: u64) {
        let err = match reason {
            LossReason::Overflow => RequestError::BufferFull,
            LossReason::InFlight | LossReason::Unconfirmed | LossReason::NotStored => {
                RequestError::Disconnected
            }
            LossReason::Closed => RequestError::Closed,
        };
        if throttled(n) {
            tracing::warn!(subject = %msg.subject, ?reason, total = n, "outbound envelope lost");
        }
        if let Some(corr) = msg.request
            && let Some(w) = self.pending.remove(corr)
        {
            w.complete(self, Err(err));
        }
        self.event(RemoteEvent::Lost {
            subject: msg.subject.to_string(),
            type_name: msg.envelope.tag.map(|t| t.name.to_string()),
            reason,
        });
    }

    /// Accounts for envelopes handed to the transport together: counted, and their requests
    /// marked as sent (a dropped connection now fails them with `Disconnected`) under one
    /// lock of the pending table.
    pub(crate) fn handed_over(&self, msgs: &[OutMsg]) {
        for m in msgs {
            self.count_sent(m.kind);
        }
        self.pending
            .mark_sent(msgs.iter().filter_map(|m| m.request));
    }

    fn count_sent(&self, kind: OutKind) {
        let counter = match kind {
            OutKind::Message => None,
            OutKind::Request => Some(&self.counters.requests_sent),
            OutKind::Reply => Some(&self.counters.replies_sent),
            OutKind::Confirmation => {
                inc(&self.counters.confirmations_sent);
                return;
            }
        };
        inc(&self.counters.sent);
        if let Some(c) = counter {
            inc(c);
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

    /// The connection dropped: requests already handed to it fail with `Disconnected`;
    /// the others — buffered, or on their way to the buffer — wait for the next connection.
    pub(crate) fn set_disconnected(&self) {
        if !self.connected.swap(false, Ordering::AcqRel) {
            return;
        }
        inc(&self.counters.disconnects);
        if let Some(mut w) = self.window() {
            w.disconnected();
        }
        self.notify_state();
        tracing::warn!(gateway = %self.gateway_id, "disconnected; buffering sends");
        self.event(RemoteEvent::Disconnected);
        for w in self.pending.take_sent() {
            inc(&self.counters.disconnected_requests);
            w.complete(self, Err(RequestError::Disconnected));
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
        if let Some(receipt) = &envelope.receipt
            && !table.inbox().first_time(receipt)
        {
            inc(&self.counters.duplicates_dropped);
            return;
        }
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
        let deliver = || {
            for (_, route) in routes.iter() {
                if let Err(e) = route(self, &inbound) {
                    fail(self, e);
                }
            }
        };
        self.in_sender_context(envelope.trace, deliver);
    }

    /// Completes a pending request with a reply (or "no responders").
    pub(crate) fn dispatch_reply(
        &self,
        subject: &str,
        no_responders: bool,
        envelope: Result<Envelope, DecodeError>,
        payload: ReplyBytes<'_>,
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
        waiter.complete(self, outcome);
    }

    /// Decodes a reply as `R` (counting a rejection).
    pub(crate) fn decode_reply<R: crate::RemoteMessage>(
        &self,
        data: &ReplyData<'_>,
    ) -> Result<R, RequestError> {
        self.registry
            .decode::<R>(&data.envelope, data.payload.as_slice(), self.max_payload())
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
            q.confirmations.clear();
            q.items.drain(..).collect()
        };
        for m in leftovers {
            self.lose(m, LossReason::Closed);
        }
        let unconfirmed = self.window().map(|mut w| w.take_all()).unwrap_or_default();
        for m in unconfirmed {
            self.lose(m, LossReason::Unconfirmed);
        }
        for w in self.pending.close() {
            w.complete(self, Err(RequestError::Closed));
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
