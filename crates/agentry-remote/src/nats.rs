//! The NATS transport: one `async-nats` connection driven by the gateway's own tokio
//! runtime.
//!
//! # Ground rules
//!
//! - The runtime (default one worker thread) runs: the connection (async-nats' handler),
//!   the **writer** task (takes envelopes from the core's buffer, writes each with its body
//!   into one payload, publishes), one task per **subscription** (splits the payload into
//!   envelope and body, dispatches through the core), the **reply** task (one wildcard
//!   subscription for all of this gateway's requests) and the client's event callback.
//! - The writer publishes only while the client reports *connected*; meanwhile envelopes
//!   stay in the core's bounded buffer under its overflow policy. (async-nats would also
//!   queue them in its command channel, but invisibly and with no policy.) Whatever the
//!   writer handed over just before a disconnect can still be lost in the client's write
//!   buffer — the at-most-once window of core NATS, which receipts close (`core/receipts.rs`:
//!   the writer also sends unconfirmed messages again, first after a reconnection, and a
//!   subscription confirms what it received whenever it has nothing more to read).
//! - Never `flush()` per message (it forces a write per message). async-nats 0.51's
//!   `flush()` only pushes the client's buffer into the socket; to know that the *server*
//!   has processed everything sent so far (e.g. a new subscription), the gateway uses a
//!   **barrier**: it publishes an empty message to its own reply subject
//!   `<ns>.v1.r.<gateway-id>.b<n>` and waits for it to come back — the server handles one
//!   connection's operations in order. Subscriptions, `Gateway::flush` and closing use one
//!   barrier each.
//! - Blocking calls (`block_on`) are made only from threads outside this runtime.

use crate::backoff::backoff;
use crate::core::outbound::OutMsg;
use crate::core::pending::ReplyBytes;
use crate::core::routes::RouteTable;
use crate::core::{Core, Transport};
use crate::envelope::Envelope;
use crate::error::{DecodeError, FlushError, StartError, SubscribeError};
use crate::stats::inc;
use crate::subject::CONFIRMATION_TOKEN;
use async_nats::{Client, ConnectOptions, Event, StatusCode};
use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};
use tokio::runtime::{Handle, Runtime};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// NATS-specific settings (set through [`GatewayBuilder`](crate::GatewayBuilder)).
#[derive(Debug, Clone)]
pub(crate) struct NatsOptions {
    pub(crate) worker_threads: usize,
    pub(crate) backoff: (Duration, Duration),
    pub(crate) connect_timeout: Duration,
    pub(crate) retry_initial_connect: bool,
    pub(crate) subscription_capacity: usize,
    pub(crate) ping_interval: Duration,
}

impl Default for NatsOptions {
    fn default() -> Self {
        NatsOptions {
            worker_threads: 1,
            backoff: (Duration::from_millis(50), Duration::from_secs(2)),
            connect_timeout: Duration::from_secs(2),
            retry_initial_connect: false,
            subscription_capacity: 262_144,
            ping_interval: Duration::from_secs(10),
        }
    }
}

/// Envelopes the writer takes per batch.
const BATCH: usize = 256;
/// Room left for the version byte and the envelope below the server's `max_payload` (an
/// envelope is at most ~330 bytes).
const ENVELOPE_ALLOWANCE: usize = 1024;

pub(crate) struct NatsShared {
    core: Arc<Core>,
    client: Client,
    handle: Handle,
    runtime: Mutex<Option<Runtime>>,
    wake: Arc<Notify>,
    subs: Mutex<HashMap<usize, JoinHandle<()>>>,
    barriers: Arc<Barriers>,
    close_timeout: Duration,
}

/// Server round trips in progress (see the ground rules).
#[derive(Default)]
struct Barriers {
    next: std::sync::atomic::AtomicU64,
    waiting: Mutex<HashMap<u64, tokio::sync::oneshot::Sender<()>>>,
}

impl Barriers {
    /// Completes barrier `token` (`b<n>`); false if `token` is no barrier.
    fn complete(&self, token: &str) -> bool {
        let Some(n) = token.strip_prefix('b').and_then(|n| n.parse::<u64>().ok()) else {
            return false;
        };
        if let Some(tx) = self
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&n)
        {
            let _ = tx.send(());
        }
        true
    }
}

/// Publishes a barrier and waits (up to `timeout`) until the server has echoed it.
async fn barrier(client: &Client, core: &Core, barriers: &Barriers, timeout: Duration) -> bool {
    let n = barriers
        .next
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (tx, rx) = tokio::sync::oneshot::channel();
    barriers
        .waiting
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(n, tx);
    let subject = format!("{}b{n}", core.scheme.reply_prefix());
    let done = client.publish(subject, bytes::Bytes::new()).await.is_ok()
        && matches!(tokio::time::timeout(timeout, rx).await, Ok(Ok(())));
    barriers
        .waiting
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&n);
    done
}

fn table_key(t: &Arc<RouteTable>) -> usize {
    Arc::as_ptr(t) as usize
}

impl NatsShared {
    pub(crate) fn start(
        core: Arc<Core>,
        url: &str,
        opts: &NatsOptions,
        close_timeout: Duration,
    ) -> Result<Arc<NatsShared>, StartError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(opts.worker_threads)
            .thread_name("agentry-nats")
            .enable_all()
            .build()
            .map_err(StartError::Runtime)?;
        let wake = Arc::new(Notify::new());
        let events_core: Weak<Core> = Arc::downgrade(&core);
        let events_wake = Arc::clone(&wake);
        let range = opts.backoff;
        let mut options = ConnectOptions::new()
            .name(format!("agentry-{}", core.gateway_id))
            .connection_timeout(opts.connect_timeout)
            .ping_interval(opts.ping_interval)
            .subscription_capacity(opts.subscription_capacity)
            .client_capacity(65_536)
            .max_reconnects(None)
            .reconnect_delay_callback(move |attempt| backoff(attempt, range))
            .event_callback(move |event| {
                let core = events_core.clone();
                let wake = Arc::clone(&events_wake);
                async move {
                    if let Some(core) = core.upgrade() {
                        on_event(&core, &wake, event);
                    }
                }
            });
        if opts.retry_initial_connect {
            options = options.retry_on_initial_connect();
        }
        let url = url.to_owned();
        let connect_timeout = opts.connect_timeout;
        let client = runtime
            .block_on(
                async move { tokio::time::timeout(connect_timeout, options.connect(url)).await },
            )
            .map_err(|_| StartError::Connect("timed out".into()))?
            .map_err(|e| StartError::Connect(e.to_string()))?;
        core.set_transport(Box::new(Handoff {
            wake: Arc::clone(&wake),
            client: client.clone(),
        }));
        if client.connection_state() == async_nats::connection::State::Connected {
            core.set_connected();
        }
        if let Some(info) = client.try_server_info()
            && info.max_payload > 0
        {
            core.limit_max_payload(info.max_payload.saturating_sub(ENVELOPE_ALLOWANCE));
        }
        let shared = Arc::new(NatsShared {
            core: Arc::clone(&core),
            client: client.clone(),
            handle: runtime.handle().clone(),
            runtime: Mutex::new(Some(runtime)),
            wake,
            subs: Mutex::new(HashMap::new()),
            barriers: Arc::new(Barriers::default()),
            close_timeout,
        });
        // Replies to this gateway's requests (and "no responders" statuses).
        let reply_core = Arc::clone(&core);
        let reply_client = client.clone();
        let wildcard = core.scheme.reply_wildcard();
        let barriers = Arc::clone(&shared.barriers);
        let replies = shared.handle.block_on(async move {
            let sub = reply_client
                .subscribe(wildcard)
                .await
                .map_err(|e| StartError::Connect(e.to_string()))?;
            Ok::<_, StartError>(tokio::spawn(reply_loop(reply_core, barriers, sub)))
        })?;
        shared.lock_subs().insert(0, replies);
        let writer = Arc::clone(&shared);
        shared.handle.spawn(async move { writer.writer().await });
        Ok(shared)
    }

    /// The connection (the durable mboxes' JetStream context uses it).
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// The gateway's runtime.
    pub(crate) fn handle(&self) -> &Handle {
        &self.handle
    }

    /// How long closing waits for what is in flight.
    pub(crate) fn close_timeout(&self) -> Duration {
        self.close_timeout
    }

    fn lock_subs(&self) -> std::sync::MutexGuard<'_, HashMap<usize, JoinHandle<()>>> {
        self.subs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn writer(&self) {
        let core = &self.core;
        let mut batch: Vec<OutMsg> = Vec::with_capacity(BATCH);
        loop {
            if core.is_closed() && core.queue_len() == 0 {
                return;
            }
            if !core.is_connected() {
                self.wake.notified().await;
                continue;
            }
            // Unconfirmed messages go out again first (after a reconnection: all of them,
            // in order, ahead of anything newer).
            let resend = core.receipts_due();
            if !resend.is_empty() {
                for m in resend {
                    self.publish(m).await;
                }
                core.resends_published();
            }
            core.drain(&mut batch, BATCH);
            if batch.is_empty() {
                core.done_writing();
                match core.next_receipt_due() {
                    Some(at) => {
                        let at = tokio::time::Instant::from_std(at);
                        tokio::select! {
                            () = self.wake.notified() => {}
                            () = tokio::time::sleep_until(at) => {}
                        }
                    }
                    None => self.wake.notified().await,
                }
                continue;
            }
            for m in batch.drain(..) {
                self.publish(m).await;
            }
            core.done_writing();
        }
    }

    /// Hands one envelope to the client (counted as sent, or as failed).
    async fn publish(&self, m: OutMsg) {
        let payload = m.nats_payload();
        let sent = match &m.reply {
            Some(reply) => {
                self.client
                    .publish_with_reply(m.subject.clone(), reply.clone(), payload)
                    .await
            }
            None => self.client.publish(m.subject.clone(), payload).await,
        };
        match sent {
            Ok(()) => self.core.handed_over(std::slice::from_ref(&m)),
            Err(e) => {
                tracing::warn!(subject = %m.subject, error = %e, "publish refused");
                self.core.publish_failed(m);
            }
        }
    }

    /// Makes the NATS subscription of a new route table.
    pub(crate) fn subscribe(&self, table: &Arc<RouteTable>) -> Result<(), SubscribeError> {
        let client = self.client.clone();
        let core = Arc::clone(&self.core);
        let barriers = Arc::clone(&self.barriers);
        let t = Arc::clone(table);
        let make = async move {
            let sub = match &t.group {
                Some(g) => client.queue_subscribe(t.subject.clone(), g.clone()).await,
                None => client.subscribe(t.subject.clone()).await,
            }
            .map_err(|e| SubscribeError::Nats(e.to_string()))?;
            let connected = core.is_connected();
            let task = tokio::spawn(sub_loop(Arc::clone(&core), t, sub));
            // Once a barrier returns, the server has processed the SUB. While disconnected
            // the client re-subscribes on reconnection; don't wait for that.
            if connected && !barrier(&client, &core, &barriers, Duration::from_secs(5)).await {
                tracing::warn!("subscription not confirmed by the server within 5 s");
            }
            Ok::<_, SubscribeError>(task)
        };
        if Handle::try_current().is_ok() {
            // On a runtime thread (e.g. called from a route's user code) we must not block:
            // subscribe in the background.
            let key = table_key(table);
            let task = self.handle.spawn(async move {
                if let Err(e) = make.await {
                    tracing::error!(error = %e, "background subscription failed");
                }
            });
            self.lock_subs().insert(key, task);
            return Ok(());
        }
        let task = self.handle.block_on(make)?;
        self.lock_subs().insert(table_key(table), task);
        Ok(())
    }

    pub(crate) fn unsubscribe(&self, table: &Arc<RouteTable>) {
        if let Some(task) = self.lock_subs().remove(&table_key(table)) {
            // Dropping the subscriber inside the task unsubscribes at the server.
            task.abort();
        }
    }

    pub(crate) fn flush(&self, timeout: Duration) -> Result<(), FlushError> {
        if self.core.is_closed() {
            return Err(FlushError::Closed);
        }
        let deadline = Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400));
        self.wake.notify_one();
        if !self.core.wait_until(deadline, |c| c.is_drained()) {
            return Err(if self.core.is_connected() {
                FlushError::Timeout
            } else {
                FlushError::Disconnected
            });
        }
        if Handle::try_current().is_ok() {
            // Cannot block here; the buffer is drained, the PONG is not awaited.
            return Ok(());
        }
        let client = self.client.clone();
        let core = Arc::clone(&self.core);
        let barriers = Arc::clone(&self.barriers);
        let remaining = deadline.saturating_duration_since(Instant::now());
        if self
            .handle
            .block_on(async move { barrier(&client, &core, &barriers, remaining).await })
        {
            Ok(())
        } else if self.core.is_connected() {
            Err(FlushError::Timeout)
        } else {
            Err(FlushError::Disconnected)
        }
    }

    pub(crate) fn close(&self) {
        let Some(runtime) = self
            .runtime
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return;
        };
        if Handle::try_current().is_ok() {
            // Called from a runtime thread: a runtime cannot be shut down from inside.
            let this = NatsCloser {
                core: Arc::clone(&self.core),
                client: self.client.clone(),
                wake: Arc::clone(&self.wake),
                barriers: Arc::clone(&self.barriers),
                close_timeout: self.close_timeout,
            };
            let spawned = std::thread::Builder::new()
                .name("agentry-nats-close".into())
                .spawn(move || this.run(runtime));
            if let Err(e) = spawned {
                tracing::error!(error = %e, "could not spawn the closing thread");
                self.core.close();
            }
            return;
        }
        NatsCloser {
            core: Arc::clone(&self.core),
            client: self.client.clone(),
            wake: Arc::clone(&self.wake),
            barriers: Arc::clone(&self.barriers),
            close_timeout: self.close_timeout,
        }
        .run(runtime);
    }
}

struct NatsCloser {
    core: Arc<Core>,
    client: Client,
    wake: Arc<Notify>,
    barriers: Arc<Barriers>,
    close_timeout: Duration,
}

impl NatsCloser {
    fn run(self, runtime: Runtime) {
        let deadline = Instant::now() + self.close_timeout;
        if self.core.is_connected() {
            // Buffered envelopes leave, and sent messages get their receipts.
            self.wake.notify_one();
            self.core
                .wait_until(deadline, |c| c.is_settled() || !c.is_connected());
            let client = self.client.clone();
            let core = Arc::clone(&self.core);
            let barriers = Arc::clone(&self.barriers);
            let remaining = deadline.saturating_duration_since(Instant::now());
            runtime.block_on(async move { barrier(&client, &core, &barriers, remaining).await });
        }
        self.core.close();
        drop(self.client);
        runtime.shutdown_timeout(Duration::from_secs(1));
        tracing::debug!(gateway = %self.core.gateway_id, "NATS gateway closed");
    }
}

/// What the core asks of the NATS transport: wake the writer task; publish on the sender's
/// thread when the client's command channel takes the envelope at once.
struct Handoff {
    wake: Arc<Notify>,
    client: Client,
}

impl Transport for Handoff {
    fn wake_writer(&self) {
        self.wake.notify_one();
    }

    fn pushed(&self, was_empty: bool) {
        if was_empty {
            self.wake.notify_one();
        }
    }

    fn publishes_directly(&self) -> bool {
        true
    }

    fn publish_now(&self, m: &OutMsg) -> bool {
        publish_now(&self.client, m)
    }
}

/// Publishes `m` if the client's command channel takes it at once (one poll, no runtime
/// needed); false if it would have to wait (the caller then buffers it).
fn publish_now(client: &Client, m: &OutMsg) -> bool {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let payload = m.nats_payload();
    let mut cx = Context::from_waker(Waker::noop());
    let done = match &m.reply {
        Some(reply) => {
            let f = client.publish_with_reply(m.subject.clone(), reply.clone(), payload);
            let mut f = std::pin::pin!(f);
            f.as_mut().poll(&mut cx)
        }
        None => {
            let f = client.publish(m.subject.clone(), payload);
            let mut f = std::pin::pin!(f);
            f.as_mut().poll(&mut cx)
        }
    };
    // Pending: the channel is full; dropping the future withdraws the command.
    matches!(done, Poll::Ready(Ok(())))
}

fn on_event(core: &Core, wake: &Notify, event: Event) {
    match event {
        Event::Connected => {
            core.set_connected();
            wake.notify_one();
        }
        Event::Disconnected => core.set_disconnected(),
        Event::Closed => core.set_disconnected(),
        Event::SlowConsumer(sid) => {
            let n = inc(&core.counters.slow_consumer_events);
            tracing::warn!(
                sid,
                total = n,
                "slow consumer: the client dropped an inbound message"
            );
        }
        Event::LameDuckMode => tracing::warn!("NATS server entered lame duck mode"),
        Event::Draining => tracing::debug!("NATS client draining"),
        Event::ServerError(e) => tracing::warn!(error = %e, "NATS server error"),
        Event::ClientError(e) => tracing::warn!(error = %e, "NATS client error"),
    }
}

/// Messages a subscription reads between two rounds of receipt confirmations, at most.
const CONFIRM_EVERY: usize = 1024;

async fn sub_loop(core: Arc<Core>, table: Arc<RouteTable>, mut sub: async_nats::Subscriber) {
    let mut unconfirmed = 0;
    loop {
        // Confirm what was received whenever the subscription has nothing more to read
        // (and at least every `CONFIRM_EVERY` messages): one confirmation per batch.
        let next = match sub.next().now_or_never() {
            Some(next) if unconfirmed < CONFIRM_EVERY => next,
            ready => {
                if unconfirmed > 0 {
                    core.send_confirmations(&table);
                    unconfirmed = 0;
                }
                match ready {
                    Some(next) => next,
                    None => sub.next().await,
                }
            }
        };
        let Some(msg) = next else { break };
        unconfirmed += 1;
        let (envelope, body) = split_payload(&msg.payload);
        core.dispatch(
            &table,
            msg.subject.as_str(),
            msg.reply.as_ref().map(|r| r.as_str()),
            envelope,
            &body,
        );
    }
}

/// A received payload's envelope (or why it has none) and its body.
fn split_payload(payload: &Bytes) -> (Result<Envelope, DecodeError>, Bytes) {
    match Envelope::from_nats_payload(payload) {
        Ok((envelope, body)) => (Ok(envelope), body),
        Err(e) => (Err(e), Bytes::new()),
    }
}

async fn reply_loop(core: Arc<Core>, barriers: Arc<Barriers>, mut sub: async_nats::Subscriber) {
    while let Some(msg) = sub.next().await {
        let token = msg
            .subject
            .as_str()
            .strip_prefix(core.scheme.reply_prefix());
        if token.is_some_and(|t| barriers.complete(t)) {
            continue;
        }
        if token == Some(CONFIRMATION_TOKEN) {
            if let Err(e) = core.confirm(&msg.payload) {
                core.reject(msg.subject.as_str(), e);
            }
            continue;
        }
        let no_responders = msg.status == Some(StatusCode::NO_RESPONDERS);
        let (envelope, body) = if no_responders {
            (Err(DecodeError::MissingField("type")), Bytes::new())
        } else {
            split_payload(&msg.payload)
        };
        core.dispatch_reply(
            msg.subject.as_str(),
            no_responders,
            envelope,
            ReplyBytes::Shared(body),
        );
    }
}
