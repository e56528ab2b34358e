//! # agentry-net
//!
//! TCP for Agentry agents, on `mio`: an **io dispatcher** whose threads run agents *and* wait
//! on sockets in one `epoll` (woken through an eventfd when a message arrives — CSO's
//! file-descriptor object processor), and on it a **listener** that reports accepted
//! connections, a **connector**, and a **channel** agent per connection that turns bytes
//! into messages and back, with optional framing, bounded buffers and typed close reasons.
//!
//! ```no_run
//! use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox};
//! use agentry_net::{Accepted, Closed, ConnOwner, Frame, Framing, ChannelConfig,
//!                   IoDispatcher, ListenerConfig, SendFrame};
//!
//! /// One per connection: answers every line with its length.
//! struct Session { channel: Mbox }
//!
//! impl Agent for Session {
//!     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
//!         def.on(|s: &mut Session, _: &mut Ctx<Session>, Frame { data, .. }: Frame| {
//!             s.channel.send(SendFrame(data.len().to_string().into_bytes()));
//!         })?
//!         .on(|_: &mut Session, _: &mut Ctx<Session>, _: Accepted| {})?
//!         .on(|_: &mut Session, _: &mut Ctx<Session>, c: Closed| {
//!             tracing::info!(conn = %c.conn, reason = ?c.reason, "bye");
//!         })?;
//!         Ok(())
//!     }
//! }
//!
//! let env = Env::new()?;
//! let io = IoDispatcher::builder("net").threads(2).build(env.handle())?;
//! let config = ListenerConfig::default()
//!     .channel(ChannelConfig::default().framing(Framing::Lines).max_frame(1024))
//!     .max_connections(1000);
//! let owner = ConnOwner::per_connection(|info, coop| {
//!     coop.add_with(Session { channel: info.channel.clone() }, &info.binder)
//! });
//! let listener = io.listen("127.0.0.1:7000".parse()?, config, owner)?;
//! println!("listening on {}", listener.local_addr());
//! env.run();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Map of the crate
//!
//! - [`IoDispatcher`] ([`IoBuilder`]): io threads; `binder()` binds agents to them;
//!   [`listen`](IoDispatcher::listen) and [`connect`](IoDispatcher::connect); [`NetStats`].
//! - [`Listener`], [`ListenerConfig`], [`ConnOwner`] (one owner for all connections, or an
//!   owner agent per connection made by a factory from [`ConnInfo`]), [`ListenerStats`].
//! - [`ChannelConfig`] ([`Framing`], watermarks, limits; time limits: idle timeout, frame
//!   deadline, [`MinRate`], maximum lifetime), [`ConnectConfig`].
//! - Messages to the owner: [`Accepted`], [`Connected`], [`ConnectFailed`], [`Received`],
//!   [`Frame`], [`WriteHigh`], [`WriteLow`], [`Closed`] with a [`CloseReason`].
//! - Messages to the channel: [`SendBytes`], [`SendFrame`], [`Close`], [`PauseReading`],
//!   [`ResumeReading`].
//! - [`reactor`]: register any `mio` source from an agent on an io thread and get
//!   [`IoReady`](reactor::IoReady) messages — the building block the channel uses.
//! - [`ConnId`], [`IoKey`]: typed ids; [`NetError`], [`ConnectError`]: typed errors.
//!
//! ## Guarantees (each with its test in §18 of `docs/SEMANTICS.md`)
//!
//! - Per connection, the owner gets `Accepted`/`Connected` first, then data in stream order,
//!   and `Closed` last, exactly once, with the reason; every close is counted once in
//!   [`NetStats`] under its reason.
//! - Nothing a peer sends can panic the process or grow memory without bound: frames over
//!   `max_frame` are refused before they are buffered; the write buffer is bounded by
//!   `write_max`; unhandled received data by `inbound_max`; connections per listener by
//!   `max_connections`; silent connections by `idle_timeout`.
//! - No peer holds a connection (a listener's slot) by trickling bytes: a frame must be
//!   finished within `frame_timeout` (30 s by default) once it started; optionally a minimum
//!   receive rate (`min_receive_rate`, the tool for raw channels) and a maximum lifetime
//!   (`max_lifetime`) apply too.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod admission;
mod channel;
mod config;
mod credit;
mod dispatcher;
mod error;
mod framing;
mod ids;
mod listener;
mod messages;
pub mod reactor;
mod stats;

pub use config::{ChannelConfig, ConnectConfig, ListenerConfig, MinRate};
pub use credit::Credit;
pub use dispatcher::{IoBuilder, IoDispatcher};
pub use error::{ConnectError, NetError};
pub use framing::Framing;
pub use ids::{ConnId, IoKey};
pub use listener::{ConnInfo, ConnOwner, Listener, OwnerFactory};
pub use messages::{
    Accepted, Close, CloseReason, Closed, ConnectFailed, Connected, Frame, PauseReading, Received,
    ResumeReading, SendBytes, SendFrame, WriteHigh, WriteLow,
};
pub use mio;
pub use stats::{ListenerStats, NetStats};
