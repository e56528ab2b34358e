//! `Gateway`: the handle to one NATS connection or one direct link, and the agent that owns
//! its lifecycle.
//!
//! A gateway is started with [`GatewayBuilder`] inside an agentry environment. It registers
//! a coop holding one *gateway agent*; when that coop is deregistered (at the latest when
//! the environment stops) the agent's `on_finish` closes the gateway: buffered envelopes get
//! up to `close_timeout` to leave, then whatever is left is counted, pending requests fail
//! with `Closed`, and the transport's runtime and threads stop. Agents never need async:
//! every operation of [`Gateway`] and [`RemoteMbox`] is a plain blocking or non-blocking
//! call.

use crate::core::outbound::Overflow;
use crate::core::receipts::ReceiptConfig;
use crate::core::routes::{Inbound, RouteFn, RouteTable};
use crate::core::{Core, CoreConfig};
use crate::durable::{DurableMbox, DurableOptions, DurableSubscription, Durables};
use crate::error::{
    DecodeError, DurableError, FlushError, RemoteFailure, StartError, SubscribeError,
};
use crate::link::{LinkOptions, LinkShared};
use crate::nats::{NatsOptions, NatsShared};
use crate::registry::{Registry, RemoteMessage, decode_plain};
use crate::remote_mbox::RemoteMbox;
use crate::request::{RemoteReplyTo, RemoteRequest};
use crate::stats::{RemoteStats, inc};
use agentry::disp::Binder;
use agentry::{Agent, CoopId, Ctx, EnvHandle, Mbox, MultiMbox};
use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Where inbound messages are delivered: an agent's direct mbox or a multi mbox.
#[derive(Clone, Debug)]
pub enum LocalMbox {
    /// An agent's direct mbox (the handler takes `T`).
    Direct(Mbox),
    /// A multi mbox (subscribers' handlers take `Arc<T>`).
    Multi(MultiMbox),
}

impl From<&Mbox> for LocalMbox {
    fn from(m: &Mbox) -> Self {
        LocalMbox::Direct(m.clone())
    }
}
impl From<Mbox> for LocalMbox {
    fn from(m: Mbox) -> Self {
        LocalMbox::Direct(m)
    }
}
impl From<&MultiMbox> for LocalMbox {
    fn from(m: &MultiMbox) -> Self {
        LocalMbox::Multi(m.clone())
    }
}
impl From<MultiMbox> for LocalMbox {
    fn from(m: MultiMbox) -> Self {
        LocalMbox::Multi(m)
    }
}

/// Settings of the bridge that lets an ordinary `on_request` handler answer remote requests
/// ([`Gateway::serve_on_request`]).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct BridgeOptions {
    /// Threads blocked in `Mbox::request` at once (requests handled concurrently).
    pub threads: usize,
    /// Requests waiting for a bridge thread; beyond, a request is answered `Overloaded`.
    pub queue: usize,
    /// The `Mbox::request` timeout (then the requester gets `Remote(Timeout)`).
    pub timeout: Duration,
}

impl Default for BridgeOptions {
    fn default() -> Self {
        BridgeOptions {
            threads: 4,
            queue: 1024,
            timeout: Duration::from_secs(10),
        }
    }
}

impl BridgeOptions {
    /// `threads` bridge threads, other settings default.
    pub fn threads(threads: usize) -> Self {
        BridgeOptions {
            threads,
            ..BridgeOptions::default()
        }
    }
}

#[derive(Clone)]
pub(crate) enum Transport {
    Nats(Arc<NatsShared>),
    Link(Arc<LinkShared>),
}

/// A handle to a running gateway (NATS connection or direct link). Cheap to clone; usable
/// from any thread.
#[derive(Clone)]
pub struct Gateway {
    core: Arc<Core>,
    transport: Transport,
    coop: Arc<Mutex<Option<CoopId>>>,
    /// The JetStream side, made with the first durable mbox or subscription.
    durables: Arc<OnceLock<Arc<Durables>>>,
}

/// A route of a [`Gateway::subscribe`] (or `serve`); it lasts until
/// [`unsubscribe`](Subscription::unsubscribe) or until the gateway closes. Dropping the
/// handle keeps the subscription.
pub struct Subscription {
    gateway: Gateway,
    table: Arc<RouteTable>,
    id: u64,
}

impl Subscription {
    /// The subject subscribed to.
    pub fn subject(&self) -> &str {
        &self.table.subject
    }

    /// Removes this route (and the transport subscription with its last route).
    pub fn unsubscribe(self) {
        if self.gateway.core.remove_route(&self.table, self.id) {
            self.gateway.transport_unsubscribe(&self.table);
        }
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("subject", &self.table.subject)
            .field("group", &self.table.group)
            .finish()
    }
}

impl Gateway {
    /// A builder for a gateway whose message types are registered in `registry`.
    pub fn builder(registry: &Registry) -> GatewayBuilder {
        GatewayBuilder::new(registry)
    }

    /// The global mbox `name` (a dotted name, see [`crate::subject`]).
    pub fn mbox(&self, name: &str) -> Result<RemoteMbox, crate::NameError> {
        RemoteMbox::new(Arc::clone(&self.core), name)
    }

    /// Delivers every `T` sent to the global mbox `name` (from any process) to `to`.
    /// Returns once the transport has the subscription (for NATS: the server confirmed it,
    /// or — while disconnected — it will be made on reconnection).
    pub fn subscribe<T: RemoteMessage>(
        &self,
        name: &str,
        to: impl Into<LocalMbox>,
    ) -> Result<Subscription, SubscribeError> {
        let subject = self.core.scheme.message_subject(name)?;
        self.subscribe_route::<T>(subject, None, false, message_route::<T>(to.into()))
    }

    /// Like [`subscribe`](Self::subscribe), as a member of queue group `group` (a single
    /// token): each message goes to one member of the group (one process; inside it, every
    /// local route of the type), the other groups and plain subscribers get their own copy.
    pub fn subscribe_queue<T: RemoteMessage>(
        &self,
        name: &str,
        group: &str,
        to: impl Into<LocalMbox>,
    ) -> Result<Subscription, SubscribeError> {
        crate::subject::validate_token(group)?;
        let subject = self.core.scheme.message_subject(name)?;
        self.subscribe_route::<T>(subject, Some(group), false, message_route::<T>(to.into()))
    }

    /// Serves requests `Q` sent to `name` ([`RemoteMbox::request`]) by delivering a
    /// [`RemoteRequest<Q, R>`] to the agent behind `to`, which answers it (now or later).
    /// Servers of one name form the queue group `name`: each request reaches one of them.
    /// If the agent is gone or its limit refuses the request, the requester gets
    /// `Remote(AgentGone)` / `Remote(Overloaded)` at once; if it drops the request,
    /// `Remote(NoReply)`.
    pub fn serve<Q: RemoteMessage, R: RemoteMessage>(
        &self,
        name: &str,
        to: &Mbox,
    ) -> Result<Subscription, SubscribeError> {
        crate::core::tag_for::<R>(&self.core.registry)?;
        let subject = self.core.scheme.service_subject(name)?;
        let to = to.clone();
        let route: RouteFn = Arc::new(move |core: &Arc<Core>, inb: &Inbound<'_>| {
            let query: Q = decode_plain(inb.plain, std::any::type_name::<Q>())?;
            let reply = inb
                .reply
                .ok_or_else(|| DecodeError::malformed("request", "no reply subject"))?;
            let request = RemoteRequest::new(
                query,
                RemoteReplyTo::<R>::new(Arc::clone(core), reply, inb.corr),
            );
            match to.try_send(request) {
                Ok(()) => {
                    inc(&core.counters.requests_served);
                }
                Err(agentry::SendError::AgentGone(r)) => r.fail(RemoteFailure::AgentGone),
                Err(agentry::SendError::Overloaded(r)) => r.fail(RemoteFailure::Overloaded),
                // Dropping it answers NoReply.
                Err(other) => drop(other),
            }
            Ok(())
        });
        self.subscribe_route::<Q>(subject, Some(name), true, route)
    }

    /// Serves requests `Q` sent to `name` with an ordinary agent that answers with
    /// [`Define::on_request`](agentry::Define::on_request): each request is bridged to
    /// `Mbox::request::<Q, R>` on one of `options.threads` bridge threads (so at most that
    /// many are handled at once; more wait in a queue of `options.queue`, beyond which they
    /// are answered `Overloaded`). Every `agentry::RequestError` travels back as the
    /// matching [`RemoteFailure`]. [`serve`](Self::serve) needs no threads and is faster.
    pub fn serve_on_request<Q: RemoteMessage, R: RemoteMessage>(
        &self,
        name: &str,
        to: &Mbox,
        options: BridgeOptions,
    ) -> Result<Subscription, SubscribeError> {
        crate::core::tag_for::<R>(&self.core.registry)?;
        let subject = self.core.scheme.service_subject(name)?;
        type Job<Q, R> = (Q, RemoteReplyTo<R>);
        let (tx, rx) = std::sync::mpsc::sync_channel::<Job<Q, R>>(options.queue.max(1));
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..options.threads.max(1) {
            let rx = Arc::clone(&rx);
            let to = to.clone();
            let timeout = options.timeout;
            std::thread::Builder::new()
                .name(format!("agentry-remote-bridge-{i}"))
                .spawn(move || {
                    loop {
                        // The lock only serializes taking jobs; requests run unlocked.
                        let job = match rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return,
                        };
                        let Ok((query, reply)) = job else { return };
                        match to.request::<Q, R>(query, timeout) {
                            Ok(r) => {
                                let _ = reply.reply(r);
                            }
                            Err(e) => reply.fail(e.into()),
                        }
                    }
                })
                .map_err(|e| SubscribeError::Spawn(e.to_string()))?;
        }
        let route: RouteFn = Arc::new(move |core: &Arc<Core>, inb: &Inbound<'_>| {
            let query: Q = decode_plain(inb.plain, std::any::type_name::<Q>())?;
            let reply = inb
                .reply
                .ok_or_else(|| DecodeError::malformed("request", "no reply subject"))?;
            let reply = RemoteReplyTo::<R>::new(Arc::clone(core), reply, inb.corr);
            match tx.try_send((query, reply)) {
                Ok(()) => {
                    inc(&core.counters.requests_served);
                }
                Err(std::sync::mpsc::TrySendError::Full((_, r))) => {
                    r.fail(RemoteFailure::Overloaded)
                }
                Err(std::sync::mpsc::TrySendError::Disconnected((_, r))) => {
                    r.fail(RemoteFailure::Shutdown)
                }
            }
            Ok(())
        });
        self.subscribe_route::<Q>(subject, Some(name), true, route)
    }

    fn subscribe_route<T: 'static>(
        &self,
        subject: String,
        group: Option<&str>,
        serving: bool,
        route: RouteFn,
    ) -> Result<Subscription, SubscribeError> {
        let entry = crate::core::tag_for::<T>(&self.core.registry)?;
        if self.core.is_closed() {
            return Err(SubscribeError::Closed);
        }
        let (table, created) = self.core.table(&subject, group, serving);
        let id = self.core.next_route();
        table.add(entry.tag.clone(), id, route);
        if created && let Err(e) = self.transport_subscribe(&table) {
            self.core.remove_route(&table, id);
            return Err(e);
        }
        Ok(Subscription {
            gateway: self.clone(),
            table,
            id,
        })
    }

    fn transport_subscribe(&self, table: &Arc<RouteTable>) -> Result<(), SubscribeError> {
        match &self.transport {
            Transport::Nats(n) => n.subscribe(table),
            // The link routes by subject through the core's tables.
            Transport::Link(_) => Ok(()),
        }
    }

    fn transport_unsubscribe(&self, table: &Arc<RouteTable>) {
        match &self.transport {
            Transport::Nats(n) => n.unsubscribe(table),
            Transport::Link(_) => {}
        }
    }

    fn durables(&self) -> Result<&Arc<Durables>, DurableError> {
        match &self.transport {
            Transport::Link(_) => Err(DurableError::Unsupported),
            Transport::Nats(_) if self.core.is_closed() => Err(DurableError::Closed),
            Transport::Nats(n) => Ok(self.durables.get_or_init(|| {
                Durables::start(
                    Arc::clone(&self.core),
                    n.client().clone(),
                    n.handle().clone(),
                )
            })),
        }
    }

    /// The durable mbox `name` (NATS with JetStream only): its messages are stored in a
    /// JetStream stream — created with `options` unless it exists — until they are handled
    /// (see [`DurableMbox`] and §19 of `docs/SEMANTICS.md`). Blocks until the server
    /// answered (at most 10 s; do not call it from a task of the gateway's own runtime).
    pub fn durable_mbox(
        &self,
        name: &str,
        options: &DurableOptions,
    ) -> Result<DurableMbox, DurableError> {
        DurableMbox::new(Arc::clone(self.durables()?), name, options)
    }

    /// Delivers the messages of the durable mbox `name` to the agent behind `to`, **at least
    /// once**, through the durable consumer `consumer` (a single token): a restarted process
    /// that subscribes with the same consumer name resumes where its predecessor stopped, and
    /// processes sharing a consumer name share its messages (each consumer name gets every
    /// message). The agent handles `Durable<T>` as a request whose reply `()` is the
    /// acknowledgement, so a message counts as handled once its handler has returned:
    ///
    /// ```
    /// use agentry::{Agent, Ctx, Define, DefineError};
    /// use agentry_remote::Durable;
    /// # #[derive(serde::Serialize, serde::Deserialize)] struct Charge { cents: u64 }
    ///
    /// struct Billing { total: u64 }
    /// impl Agent for Billing {
    ///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
    ///         // Returning acknowledges the message; a panic, or agentry refusing it,
    ///         // makes JetStream deliver it again.
    ///         def.on_request(|b: &mut Billing, _: &mut Ctx<Billing>, c: Durable<Charge>| {
    ///             b.total += c.cents;
    ///         })?;
    ///         Ok(())
    ///     }
    /// }
    /// ```
    ///
    /// The agent must answer the request: `on_request` (as above), or a handler of
    /// `Request<Durable<T>, ()>` that replies `()` when done. A plain `on` handler of
    /// `Durable<T>` never matches — the request is refused (`NoHandler`), counted in
    /// `durable_refused` and delivered again and again. `to` is a direct mbox: a multi mbox
    /// could not tell whether anyone handled the message. The consumer's settings (`ack_wait`, `max_ack_pending`, `max_deliver`) apply
    /// when it is created; an existing consumer keeps its own. Blocks until the stream and the
    /// consumer exist (at most 10 s; do not call it from a task of the gateway's own runtime).
    pub fn subscribe_durable<T: RemoteMessage>(
        &self,
        name: &str,
        consumer: &str,
        to: &Mbox,
        options: &DurableOptions,
    ) -> Result<DurableSubscription, DurableError> {
        crate::durable::subscribe::<T>(self.durables()?, name, consumer, to, options)
    }

    /// This gateway's counters.
    pub fn stats(&self) -> RemoteStats {
        self.core.stats()
    }

    /// True while connected to the NATS server (or to the link's peer).
    pub fn is_connected(&self) -> bool {
        self.core.is_connected()
    }

    /// Waits up to `timeout` for the transport to be connected; true if it is.
    pub fn wait_connected(&self, timeout: Duration) -> bool {
        self.core.wait_connected(timeout)
    }

    /// This gateway's random id (the `<gateway-id>` of its reply subjects).
    pub fn id(&self) -> &str {
        &self.core.gateway_id
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        self.core.scheme.namespace()
    }

    /// The registry of message types.
    pub fn registry(&self) -> &Registry {
        &self.core.registry
    }

    /// The largest payload (after compression) this gateway sends or accepts.
    pub fn max_payload(&self) -> usize {
        self.core.max_payload()
    }

    /// The coop of the gateway agent (deregistering it closes the gateway).
    pub fn coop(&self) -> Option<CoopId> {
        *self
            .coop
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The address a listening link is bound to.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match &self.transport {
            Transport::Link(l) => l.local_addr(),
            Transport::Nats(_) => None,
        }
    }

    /// Waits until everything buffered so far has been handed to the transport and (NATS)
    /// the server has acknowledged it with a PONG. Never call it per message: it costs a
    /// round trip.
    pub fn flush(&self, timeout: Duration) -> Result<(), FlushError> {
        match &self.transport {
            Transport::Nats(n) => n.flush(timeout),
            Transport::Link(l) => l.flush(timeout),
        }
    }

    /// Closes the gateway now (what the gateway agent does when its coop leaves): up to
    /// `close_timeout` to send what is buffered, then leftovers are counted
    /// (`dropped_on_close`), pending requests fail with `Closed`, later sends fail with
    /// `Closed`. Idempotent.
    pub fn close(&self) {
        match &self.transport {
            Transport::Nats(n) => {
                if let Some(d) = self.durables.get() {
                    d.close(n.close_timeout());
                }
                n.close()
            }
            Transport::Link(l) => l.close(),
        }
    }
}

impl fmt::Debug for Gateway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gateway")
            .field("id", &self.core.gateway_id)
            .field("namespace", &self.core.scheme.namespace())
            .field(
                "transport",
                &match self.transport {
                    Transport::Nats(_) => "nats",
                    Transport::Link(_) => "link",
                },
            )
            .field("connected", &self.core.is_connected())
            .finish()
    }
}

fn message_route<T: RemoteMessage>(to: LocalMbox) -> RouteFn {
    Arc::new(move |core: &Arc<Core>, inb: &Inbound<'_>| {
        let v: T = decode_plain(inb.plain, std::any::type_name::<T>())?;
        match &to {
            LocalMbox::Direct(m) => m.send(v),
            LocalMbox::Multi(m) => m.send(v),
        }
        inc(&core.counters.delivered);
        Ok(())
    })
}

/// The agent that owns a gateway's lifecycle: its `on_finish` closes the gateway.
struct GatewayAgent {
    gateway: Gateway,
}

impl Agent for GatewayAgent {
    fn on_finish(&mut self, _ctx: &mut Ctx<Self>) {
        self.gateway.close();
    }
}

/// Settings of a new gateway; finish with [`connect_nats`](Self::connect_nats),
/// [`connect_link`](Self::connect_link) or [`listen_link`](Self::listen_link).
///
/// ```no_run
/// use agentry::Env;
/// use agentry_remote::{Gateway, Overflow, Registry};
///
/// let env = Env::new().expect("env");
/// let registry = Registry::new();
/// let gateway = Gateway::builder(&registry)
///     .namespace("shop")
///     .outbound_capacity(10_000)
///     .overflow(Overflow::RejectNew)
///     .connect_nats(env.handle(), "nats://127.0.0.1:4222")
///     .expect("connected");
/// # drop(gateway);
/// ```
#[derive(Debug)]
pub struct GatewayBuilder {
    registry: Registry,
    namespace: String,
    capacity: usize,
    overflow: Overflow,
    max_payload: usize,
    events: Option<MultiMbox>,
    binder: Option<Binder>,
    close_timeout: Duration,
    receipts: bool,
    receipt_timeout: Duration,
    resend_interval: Duration,
    nats: NatsOptions,
    link: LinkOptions,
}

impl GatewayBuilder {
    fn new(registry: &Registry) -> Self {
        GatewayBuilder {
            registry: registry.clone(),
            namespace: "agentry".into(),
            capacity: 65_536,
            overflow: Overflow::RejectNew,
            max_payload: 1024 * 1024,
            events: None,
            binder: None,
            close_timeout: Duration::from_secs(2),
            receipts: true,
            receipt_timeout: Duration::from_secs(10),
            resend_interval: Duration::from_secs(1),
            nats: NatsOptions::default(),
            link: LinkOptions::default(),
        }
    }

    /// The namespace: the first token of every subject (default `agentry`).
    pub fn namespace(&mut self, ns: &str) -> &mut Self {
        self.namespace = ns.to_owned();
        self
    }

    /// Envelopes the outbound buffer holds (default 65,536), connected or not.
    pub fn outbound_capacity(&mut self, capacity: usize) -> &mut Self {
        self.capacity = capacity;
        self
    }

    /// What a send meets when the outbound buffer is full (default `RejectNew`).
    pub fn overflow(&mut self, policy: Overflow) -> &mut Self {
        self.overflow = policy;
        self
    }

    /// The largest payload sent or accepted, compressed or decompressed (default 1 MiB;
    /// NATS lowers it to the server's `max_payload` less room for the envelope).
    pub fn max_payload(&mut self, bytes: usize) -> &mut Self {
        self.max_payload = bytes;
        self
    }

    /// A multi mbox that receives every [`RemoteEvent`](crate::RemoteEvent).
    pub fn events(&mut self, mbox: &MultiMbox) -> &mut Self {
        self.events = Some(mbox.clone());
        self
    }

    /// The dispatcher of the gateway agent (default: the environment's default).
    pub fn binder(&mut self, binder: &Binder) -> &mut Self {
        self.binder = Some(binder.clone());
        self
    }

    /// How long closing waits for buffered envelopes to leave (default 2 s).
    pub fn close_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.close_timeout = timeout;
        self
    }

    /// NATS: delivery receipts for plain messages (default on). Each message is kept until
    /// a receiving gateway confirms it, sent again after a reconnection (and every
    /// [`resend_interval`](Self::resend_interval) while unconfirmed), delivered once per
    /// subscription however often it arrives, and reported
    /// ([`LossReason::Unconfirmed`](crate::LossReason::Unconfirmed)) if still unconfirmed
    /// after [`receipt_timeout`](Self::receipt_timeout) of connected time — so a send that
    /// was accepted is either delivered or reported, across server outages too. At most
    /// [`outbound_capacity`](Self::outbound_capacity) messages await their receipt; more
    /// wait in the outbound buffer. Off: at most once, as core NATS (what a dying
    /// connection held is lost unreported). Requests do not use receipts (their reply or
    /// typed error is theirs); the direct link does not have them.
    pub fn receipts(&mut self, on: bool) -> &mut Self {
        self.receipts = on;
        self
    }

    /// NATS, receipts on: connected time after which an unconfirmed message is given up and
    /// reported (default 10 s).
    pub fn receipt_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.receipt_timeout = timeout;
        self
    }

    /// NATS, receipts on: connected time after which an unconfirmed message is sent again
    /// (default 1 s; every unconfirmed message is also sent again after a reconnection).
    pub fn resend_interval(&mut self, interval: Duration) -> &mut Self {
        self.resend_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// Reconnection backoff: `min`, doubling per failed attempt up to `max` (default 50 ms
    /// to 2 s; NATS and link).
    pub fn reconnect_backoff(&mut self, min: Duration, max: Duration) -> &mut Self {
        self.nats.backoff = (min, max);
        self.link.backoff = (min, max);
        self
    }

    /// Timeout of one connection attempt (default 2 s).
    pub fn connect_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.nats.connect_timeout = timeout;
        self.link.connect_timeout = timeout;
        self
    }

    /// If the first connection fails, start anyway and keep trying in the background
    /// (default: fail with [`StartError`]).
    pub fn retry_initial_connect(&mut self, on: bool) -> &mut Self {
        self.nats.retry_initial_connect = on;
        self.link.retry_initial_connect = on;
        self
    }

    /// NATS: worker threads of the gateway's tokio runtime (default 1).
    pub fn worker_threads(&mut self, n: usize) -> &mut Self {
        self.nats.worker_threads = n.max(1);
        self
    }

    /// NATS: client-side channel capacity per subscription (default 262,144 — more than a
    /// sender's outbound buffer and receipt window together, so that the burst a sender
    /// flushes after a reconnection fits; the channel only holds messages until the
    /// subscription's task hands them to the agents' queues, whose own limits govern
    /// overload). A full channel drops messages, reported as slow-consumer events (with
    /// receipts on, their senders send them again).
    pub fn subscription_capacity(&mut self, n: usize) -> &mut Self {
        self.nats.subscription_capacity = n.max(1);
        self
    }

    /// NATS: the client's PING interval (default 10 s; two unanswered PINGs disconnect).
    pub fn ping_interval(&mut self, interval: Duration) -> &mut Self {
        self.nats.ping_interval = interval;
        self
    }

    /// Link: heartbeat interval and silence timeout (default 1 s and 5 s).
    pub fn heartbeat(&mut self, interval: Duration, timeout: Duration) -> &mut Self {
        self.link.heartbeat_interval = interval;
        self.link.heartbeat_timeout = timeout.max(interval);
        self
    }

    /// Link: the largest frame accepted (default 1 MiB + 4 KiB, at least 4 KiB); longer frames are skipped
    /// and counted as oversized.
    pub fn max_frame(&mut self, bytes: usize) -> &mut Self {
        self.link.max_frame = bytes.max(4096);
        self
    }

    fn core(&self, env: &EnvHandle, receipts: bool) -> Result<Arc<Core>, StartError> {
        Core::new(
            CoreConfig {
                namespace: self.namespace.clone(),
                capacity: self.capacity,
                overflow: self.overflow,
                max_payload: self.max_payload,
                events: self.events.clone(),
                receipts: receipts.then_some(ReceiptConfig {
                    timeout: self.receipt_timeout,
                    resend_after: self.resend_interval,
                    limit: self.capacity.max(1),
                }),
                propagation: env.trace_context_hook(),
            },
            self.registry.clone(),
        )
    }

    /// Makes the core, starts the transport on it (closing the core if that fails) and
    /// registers the gateway.
    fn start(
        &self,
        env: &EnvHandle,
        receipts: bool,
        transport: impl FnOnce(Arc<Core>) -> Result<Transport, StartError>,
    ) -> Result<Gateway, StartError> {
        let core = self.core(env, receipts)?;
        match transport(Arc::clone(&core)) {
            Ok(transport) => self.finish(env, core, transport),
            Err(e) => {
                core.close();
                Err(e)
            }
        }
    }

    fn finish(
        &self,
        env: &EnvHandle,
        core: Arc<Core>,
        transport: Transport,
    ) -> Result<Gateway, StartError> {
        let gateway = Gateway {
            core,
            transport,
            coop: Arc::new(Mutex::new(None)),
            durables: Arc::new(OnceLock::new()),
        };
        let mut coop = env.new_coop();
        match &self.binder {
            Some(b) => coop.add_with(
                GatewayAgent {
                    gateway: gateway.clone(),
                },
                b,
            ),
            None => coop.add(GatewayAgent {
                gateway: gateway.clone(),
            }),
        };
        match env.register_coop(coop) {
            Ok(id) => {
                *gateway
                    .coop
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(id);
                Ok(gateway)
            }
            Err(e) => {
                gateway.close();
                Err(StartError::Register(e))
            }
        }
    }

    /// Connects to the NATS server(s) at `url` (comma-separated URLs for a cluster; the
    /// client also learns the cluster's other servers) and starts the gateway.
    pub fn connect_nats(&mut self, env: &EnvHandle, url: &str) -> Result<Gateway, StartError> {
        self.start(env, self.receipts, |core| {
            NatsShared::start(core, url, &self.nats, self.close_timeout).map(Transport::Nats)
        })
    }

    /// Starts a direct link that connects to `addr` (and reconnects with backoff).
    pub fn connect_link(
        &mut self,
        env: &EnvHandle,
        addr: impl ToSocketAddrs,
    ) -> Result<Gateway, StartError> {
        let addrs: Vec<SocketAddr> = addr.to_socket_addrs().map_err(StartError::Io)?.collect();
        self.start(env, false, |core| {
            LinkShared::connect(core, addrs, self.link.clone(), self.close_timeout)
                .map(Transport::Link)
        })
    }

    /// Starts a direct link that listens on `addr` (port 0: any free port, see
    /// [`Gateway::local_addr`]) and accepts one peer at a time (a new connection replaces
    /// the old one).
    pub fn listen_link(
        &mut self,
        env: &EnvHandle,
        addr: impl ToSocketAddrs,
    ) -> Result<Gateway, StartError> {
        let listener = std::net::TcpListener::bind(addr).map_err(StartError::Io)?;
        self.start(env, false, |core| {
            LinkShared::listen(core, listener, self.link.clone(), self.close_timeout)
                .map(Transport::Link)
        })
    }
}
