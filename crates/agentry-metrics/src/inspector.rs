//! The live inspector (feature `inspector`): a web page that shows a running environment —
//! its coop tree, its agents with their state, queue depth, handled and dropped counts and
//! message rates, its dispatchers, timers, dead letters and the io dispatchers, listeners and
//! gateways given to the builder — updated live over server-sent events.
//!
//! ```
//! use agentry::Env;
//! use agentry_metrics::inspector::Inspector;
//!
//! let env = Env::new()?;
//! let server = Inspector::new(env.handle()).serve("127.0.0.1:0")?; // e.g. "127.0.0.1:9465"
//! println!("open http://{}/", server.local_addr());
//! // … run the application …
//! server.stop(); // or drop it
//! env.handle().stop();
//! env.run();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Ground rules
//!
//! - **Opt-in, nothing on the message paths.** Without the feature none of it is built; with
//!   it, nothing runs until [`Inspector::serve`], and then only its two threads read, once per
//!   tick, what the runtime keeps anyway ([`EnvHandle::snapshot`](agentry::EnvHandle::snapshot)
//!   and the sources' counters).
//! - **One snapshot per tick per distinct query.** Every client of `GET /events` names a
//!   filter, an order and a page (`?filter=&sort=&offset=&limit=`); clients that ask the same
//!   share one snapshot per tick. A page holds at most [`MAX_LIMIT`] agents, so a tick never
//!   serialises an environment's 100 000 agents, only the page.
//! - **Bounded clients.** At most [`InspectorBuilder::max_clients`] event streams (more are
//!   answered 503). Streams are written without blocking; a client that has not taken
//!   [`MAX_BACKLOG`] bytes of events is dropped, not buffered for.
//! - **The page ships inside the crate** (`inspector/page.html`, `include_str!`): no build
//!   step, no CDN, works offline. It computes message rates from successive snapshots.
//! - Requests are answered as the metrics endpoint answers them (`http.rs`): any malformed,
//!   unknown or too slow request gets its status, a bad query 400; stopping or dropping the
//!   [`InspectorServer`] frees the port.
//!
//! # Routes
//!
//! | Route | Answer |
//! |---|---|
//! | `GET /` | the page (`text/html`) |
//! | `GET /snapshot.json?…` | one snapshot (`application/json`) |
//! | `GET /events?…` | `text/event-stream`: one `data:` line of snapshot JSON per tick |
//!
//! Query parameters (all optional): `filter` (substring of an agent's type, state or id),
//! `sort` (`id`, `handled`, `dropped`, `unhandled`, `queue_depth`, `panics`), `offset`,
//! `limit` (at most [`MAX_LIMIT`]).

mod endpoint;
mod json;
mod query;
mod stream;

pub use endpoint::InspectorServer;
pub use query::MAX_LIMIT;
pub use stream::MAX_BACKLOG;

use crate::error::BuildError;
use crate::metrics::{Source, check_names};
use agentry::EnvHandle;
use agentry::snapshot::SnapshotQuery;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The page, served at `GET /`.
const PAGE: &str = include_str!("inspector/page.html");

/// Chooses what an inspector shows besides the environment, and how often it updates.
///
/// ```
/// use agentry::Env;
/// use agentry_metrics::inspector::Inspector;
/// use std::time::Duration;
///
/// let env = Env::new()?;
/// let io = agentry_net::IoDispatcher::new(env.handle(), "io")?;
/// let inspector = Inspector::builder(env.handle())
///     .io_dispatcher(&io)
///     .tick(Duration::from_millis(500))
///     .build()?;
/// assert!(inspector.snapshot_json(&Default::default()).contains("\"io_dispatcher\""));
/// env.handle().stop();
/// env.run();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "call build() to get the inspector"]
pub struct InspectorBuilder {
    env: EnvHandle,
    extra: Vec<Source>,
    tick: Duration,
    max_clients: usize,
}

impl fmt::Debug for InspectorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InspectorBuilder")
            .field("extra", &self.extra)
            .field("tick", &self.tick)
            .field("max_clients", &self.max_clients)
            .finish_non_exhaustive()
    }
}

impl InspectorBuilder {
    /// Shows an io dispatcher's counters (as its `agentry_net_*` metrics).
    #[cfg(feature = "net")]
    pub fn io_dispatcher(&mut self, io: &agentry_net::IoDispatcher) -> &mut Self {
        self.extra
            .push(Source::Io(io.name().to_owned(), io.clone()));
        self
    }

    /// Shows a listener's counters under `name`.
    #[cfg(feature = "net")]
    pub fn listener(&mut self, name: &str, listener: &agentry_net::Listener) -> &mut Self {
        self.extra
            .push(Source::Listener(name.to_owned(), listener.clone()));
        self
    }

    /// Shows a gateway's counters (its remote links) under `name`.
    #[cfg(feature = "remote")]
    pub fn gateway(&mut self, name: &str, gateway: &agentry_remote::Gateway) -> &mut Self {
        self.extra
            .push(Source::Gateway(name.to_owned(), gateway.clone()));
        self
    }

    /// How often event streams get a snapshot (default 1 s).
    pub fn tick(&mut self, every: Duration) -> &mut Self {
        self.tick = every;
        self
    }

    /// How many event streams may be open at once (default 16); more are answered 503.
    pub fn max_clients(&mut self, clients: usize) -> &mut Self {
        self.max_clients = clients;
        self
    }

    /// The inspector; [`BuildError::DuplicateName`] if two sources of a kind share a name,
    /// [`BuildError::InvalidSetting`] for a tick under 10 ms or no client allowed.
    pub fn build(&mut self) -> Result<Inspector, BuildError> {
        check_names(&self.extra)?;
        if self.tick < Duration::from_millis(10) {
            return Err(BuildError::InvalidSetting("tick must be at least 10 ms"));
        }
        if self.max_clients == 0 {
            return Err(BuildError::InvalidSetting("max_clients must be at least 1"));
        }
        Ok(Inspector(Arc::new(Shared {
            env: self.env.clone(),
            extra: std::mem::take(&mut self.extra),
            tick: self.tick,
            max_clients: self.max_clients,
            epoch: Instant::now(),
        })))
    }
}

/// What an inspector reads and how it serves it.
struct Shared {
    env: EnvHandle,
    extra: Vec<Source>,
    tick: Duration,
    max_clients: usize,
    /// Snapshots carry their time since this instant (the page's rates divide by it).
    epoch: Instant,
}

/// A live inspector for one environment: [`snapshot_json`](Self::snapshot_json) reads one
/// snapshot as JSON; [`serve`](Self::serve) serves the page and its event stream. Cheap to
/// clone.
///
/// ```
/// use agentry::Env;
/// use agentry::snapshot::SnapshotQuery;
/// use agentry_metrics::inspector::Inspector;
///
/// let env = Env::new()?;
/// let json = Inspector::new(env.handle()).snapshot_json(&SnapshotQuery::new());
/// assert!(json.contains("\"agents_total\":0"));
/// env.handle().stop();
/// env.run();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Inspector(Arc<Shared>);

impl fmt::Debug for Inspector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inspector")
            .field("extra", &self.0.extra)
            .field("tick", &self.0.tick)
            .finish_non_exhaustive()
    }
}

impl Inspector {
    /// An inspector of the environment alone, ticking every second.
    pub fn new(env: &EnvHandle) -> Inspector {
        Inspector::builder(env)
            .build()
            .expect("invariant: the default settings are valid and there are no extra sources")
    }

    /// An inspector that also shows io dispatchers, listeners or gateways, or ticks at
    /// another interval.
    pub fn builder(env: &EnvHandle) -> InspectorBuilder {
        InspectorBuilder {
            env: env.clone(),
            extra: Vec::new(),
            tick: Duration::from_secs(1),
            max_clients: 16,
        }
    }

    /// One snapshot for `query`, as the JSON object the event stream sends (the page of
    /// agents is capped at [`MAX_LIMIT`]).
    pub fn snapshot_json(&self, query: &SnapshotQuery) -> String {
        let (offset, limit) = query.page();
        let query = query.clone().offset(offset).limit(limit.min(MAX_LIMIT));
        let snapshot = self.0.env.snapshot(&query);
        json::render(&snapshot, &query, &self.0.extra, self.0.epoch.elapsed())
    }
}
