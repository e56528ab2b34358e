//! # agentry-remote
//!
//! Agents in other processes: **global mboxes** reached over **NATS** (an existing,
//! clustered broker: `nats-server`) or over a **direct TCP link** between two processes,
//! with typed, versioned envelopes, optional zstd compression and remote request/reply.
//! Agents never need async: a [`Gateway`] owns the connection (and, for NATS, its own tokio
//! runtime); sending and requesting are plain calls, inbound messages arrive in ordinary
//! agent handlers.
//!
//! ```no_run
//! use agentry::{Agent, Ctx, Define, DefineError, Env};
//! use agentry_remote::{Gateway, Registry, RemoteRequest};
//! use serde::{Deserialize, Serialize};
//! use std::time::Duration;
//!
//! #[derive(Serialize, Deserialize)]
//! struct Add { a: i64, b: i64 }
//! #[derive(Serialize, Deserialize, Debug, PartialEq)]
//! struct Sum(i64);
//!
//! /// Serves `Add` requests from any process.
//! struct Adder;
//! impl Agent for Adder {
//!     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
//!         def.on(|_: &mut Adder, _: &mut Ctx<Adder>, req: RemoteRequest<Add, Sum>| {
//!             let sum = Sum(req.query().a + req.query().b);
//!             let _ = req.reply(sum);
//!         })?;
//!         Ok(())
//!     }
//! }
//!
//! // Both processes register the same types under the same names and versions.
//! let registry = Registry::new();
//! registry.register::<Add>("calc.Add", 1).expect("registered");
//! registry.register::<Sum>("calc.Sum", 1).expect("registered");
//!
//! // Process 1: the service.
//! let env = Env::new().expect("env");
//! let gw = Gateway::builder(&registry)
//!     .namespace("demo")
//!     .connect_nats(env.handle(), "nats://127.0.0.1:4222")
//!     .expect("connected");
//! let adder = env.handle().register_agent(Adder).expect("registered");
//! gw.serve::<Add, Sum>("calc", &adder).expect("serving");
//!
//! // Process 2 (or any thread, or an agent): the client.
//! let sum: Sum = gw
//!     .mbox("calc")
//!     .expect("valid name")
//!     .request(Add { a: 2, b: 3 }, Duration::from_secs(1))
//!     .expect("answered");
//! assert_eq!(sum, Sum(5));
//! ```
//!
//! ## Map of the crate
//!
//! - [`Registry`]: message types by stable name and version ([`RemoteMessage`]: serde +
//!   `Send + Sync`), compression per type, zstd dictionaries ([`train_dictionary`]).
//! - [`Gateway`] / [`GatewayBuilder`]: start a NATS gateway ([`GatewayBuilder::connect_nats`])
//!   or a direct link ([`connect_link`](GatewayBuilder::connect_link) /
//!   [`listen_link`](GatewayBuilder::listen_link)); subscribe local mboxes
//!   ([`Gateway::subscribe`], [`Gateway::subscribe_queue`]); serve requests
//!   ([`Gateway::serve`], [`Gateway::serve_on_request`]); counters ([`RemoteStats`]);
//!   reports ([`RemoteEvent`]).
//! - [`RemoteMbox`]: send ([`RemoteMbox::send`]), request blocking
//!   ([`RemoteMbox::request`]) or not ([`RemoteMbox::send_request`] → [`RemoteReply`]).
//! - [`RemoteRequest`] / [`RemoteReplyTo`]: what a serving agent gets and answers with.
//! - Durable mboxes (JetStream, at least once; see the `durable` module's ground rules in
//!   the source and §19 of `docs/SEMANTICS.md`): [`Gateway::durable_mbox`] →
//!   [`DurableMbox`] ([`send`](DurableMbox::send), [`send_with_id`](DurableMbox::send_with_id),
//!   [`flush`](DurableMbox::flush)); [`Gateway::subscribe_durable`] →
//!   [`DurableSubscription`], the agent handling [`Durable<T>`] as a request whose reply is
//!   the ack; [`DurableOptions`]; [`DurableError`].
//! - [`subject`]: names and the subject scheme; [`envelope`]: the envelope fields and
//!   their binary wire format, the same in a NATS payload and a link frame (with the
//!   [`Receipt`](envelope::Receipt) of a plain message); [`frame`]: the link's frames; [`Compression`].
//! - Errors: [`SendError`] (gives the message back), [`RequestError`], [`RemoteFailure`]
//!   (the server's side of a failed request), [`DecodeError`] (why input was rejected),
//!   [`SubscribeError`], [`StartError`], [`RegistryError`], [`NameError`], [`FlushError`].
//!
//! ## Guarantees, in one paragraph
//!
//! Over NATS a plain message is **settled exactly once**: the gateways acknowledge end to end
//! (*receipts*, on by default: [`GatewayBuilder::receipts`]), so an accepted message is sent
//! again after a lost connection until a receiving gateway confirms it, delivered once per
//! subscription however often it arrives, and reported ([`LossReason::Unconfirmed`]) only
//! if nobody confirms it — `accepted == delivered + reported`, across server outages. The
//! direct link, and NATS with receipts off, deliver **at most once**. What the gateway
//! can know, it counts and reports: a send that is refused gives the
//! message back; an accepted envelope that is later dropped (buffer overflow, failed write,
//! close, no receipt) is counted in [`RemoteStats`] and reported as [`RemoteEvent::Lost`];
//! a request whose caller gave up while it was buffered is never sent; inbound
//! input that does not decode — unknown type, wrong version, malformed or oversized — is a
//! typed [`DecodeError`], counted, logged with `tracing` and reported, and never panics or
//! breaks the connection; every request ends in exactly one reply or typed
//! [`RequestError`]. **Durable mboxes** (opt-in, JetStream) add persistence: a message is
//! stored until its handler has returned, delivered again after the receiving process dies,
//! stored once per message id across a sender restart (inside the stream's duplicate
//! window) and handled once while the receiver stays up. The full contract is §19 of
//! `docs/SEMANTICS.md`.
//!
//! ## Running the example
//!
//! `examples/remote_service.rs` runs a service agent in one process and a client agent in
//! another, over NATS and over the direct link:
//!
//! ```text
//! # everything in one go (starts its own nats-server on a free port, re-runs itself as the
//! # server process):
//! cargo run -p agentry-remote --example remote_service
//! # or by hand, against a running server:
//! nats-server -a 127.0.0.1 -p 4222 &
//! cargo run -p agentry-remote --example remote_service -- server nats://127.0.0.1:4222
//! cargo run -p agentry-remote --example remote_service -- client nats://127.0.0.1:4222
//! ```
//!
//! The `remote_rr` benchmark (SObjectizer 4.4 b5 `server_client_speed`) is part of the
//! benchmark suite: `cargo run --release -p agentry-bench -- remote_rr`.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod backoff;
mod compression;
mod core;
mod durable;
pub mod envelope;
mod error;
mod event;
mod gateway;
mod link;
mod nats;
mod registry;
mod remote_mbox;
mod request;
mod stats;
pub mod subject;
mod wire;

pub use crate::{
    compression::{Codec, Compression, train_dictionary},
    core::outbound::Overflow,
    durable::{Durable, DurableMbox, DurableOptions, DurableSubscription, MAX_MESSAGE_ID_LEN},
    error::{
        DecodeError, DurableError, FlushError, NameError, RegistryError, RejectKind, RemoteFailure,
        RequestError, SendError, StartError, SubscribeError,
    },
    event::{LossReason, RemoteEvent},
    gateway::{BridgeOptions, Gateway, GatewayBuilder, LocalMbox, Subscription},
    link::frame,
    registry::{Registry, RemoteMessage},
    remote_mbox::RemoteMbox,
    request::{RemoteReply, RemoteReplyTo, RemoteRequest, RequestId},
    stats::RemoteStats,
};
