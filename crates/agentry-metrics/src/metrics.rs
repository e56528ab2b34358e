//! The exporter: what it reads ([`MetricsBuilder`]) and the text it renders ([`Metrics`]).

use crate::error::BuildError;
use crate::family::{Families, Monotonic};
use agentry::EnvHandle;
use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Registry;
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

/// The `Content-Type` of [`Metrics::render`]'s text: the Prometheus text format 0.0.4.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// One thing to read at scrape time besides the environment (the inspector reads them too).
pub(crate) enum Source {
    #[cfg(feature = "net")]
    Io(String, agentry_net::IoDispatcher),
    #[cfg(feature = "net")]
    Listener(String, agentry_net::Listener),
    #[cfg(feature = "remote")]
    Gateway(String, agentry_remote::Gateway),
}

impl Source {
    #[cfg_attr(
        not(any(feature = "net", feature = "remote")),
        allow(unused_variables, unreachable_code)
    )]
    pub(crate) fn collect(&self, out: &mut Families) {
        match *self {
            #[cfg(feature = "net")]
            Source::Io(ref name, ref io) => crate::net::collect_io(name, io, out),
            #[cfg(feature = "net")]
            Source::Listener(ref name, ref l) => crate::net::collect_listener(name, l, out),
            #[cfg(feature = "remote")]
            Source::Gateway(ref name, ref g) => crate::remote::collect(name, g, out),
        }
    }

    #[cfg_attr(not(any(feature = "net", feature = "remote")), allow(unreachable_code))]
    pub(crate) fn key(&self) -> (&'static str, &str) {
        match *self {
            #[cfg(feature = "net")]
            Source::Io(ref name, _) => ("io_dispatcher", name),
            #[cfg(feature = "net")]
            Source::Listener(ref name, _) => ("listener", name),
            #[cfg(feature = "remote")]
            Source::Gateway(ref name, _) => ("gateway", name),
        }
    }
}

/// [`BuildError::DuplicateName`] if two sources of a kind share a name.
pub(crate) fn check_names(sources: &[Source]) -> Result<(), BuildError> {
    let mut names = HashSet::new();
    for source in sources {
        let (kind, name) = source.key();
        if !names.insert((kind, name)) {
            return Err(BuildError::DuplicateName {
                kind,
                name: name.to_owned(),
            });
        }
    }
    Ok(())
}

/// What one exporter reads, each time it is scraped.
struct Sources {
    env: EnvHandle,
    extra: Vec<Source>,
    /// Last exported counter values (see `family.rs`); one scrape at a time updates them.
    last: Mutex<Monotonic>,
}

impl fmt::Debug for Sources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sources")
            .field(
                "extra",
                &self.extra.iter().map(Source::key).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Collector for Sources {
    fn encode(&self, encoder: DescriptorEncoder<'_>) -> Result<(), fmt::Error> {
        let mut families = Families::default();
        crate::env::collect(&self.env, &mut families);
        for source in &self.extra {
            source.collect(&mut families);
        }
        families.clamp(&mut self.last.lock());
        families.encode(encoder)
    }
}

/// Chooses what an exporter reports: the environment (always: its counters, its dispatchers'
/// and its agent types'), and the io dispatchers, listeners and gateways added here.
///
/// ```
/// use agentry::Env;
/// use agentry_metrics::Metrics;
///
/// let env = Env::new()?;
/// let io = agentry_net::IoDispatcher::new(env.handle(), "io")?;
/// let metrics = Metrics::builder(env.handle()).io_dispatcher(&io).build()?;
/// assert!(metrics.render().contains("agentry_net_connections_opened_total{io_dispatcher=\"io\"} 0\n"));
/// env.handle().stop();
/// env.run();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use = "call build() to get the exporter"]
pub struct MetricsBuilder {
    env: EnvHandle,
    extra: Vec<Source>,
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, name) = self.key();
        write!(f, "{kind}={name:?}")
    }
}

impl MetricsBuilder {
    /// Reports an io dispatcher's counters, labelled `io_dispatcher="<its name>"`.
    #[cfg(feature = "net")]
    pub fn io_dispatcher(&mut self, io: &agentry_net::IoDispatcher) -> &mut Self {
        self.extra
            .push(Source::Io(io.name().to_owned(), io.clone()));
        self
    }

    /// Reports a listener's counters, labelled `listener="<name>"`.
    #[cfg(feature = "net")]
    pub fn listener(&mut self, name: &str, listener: &agentry_net::Listener) -> &mut Self {
        self.extra
            .push(Source::Listener(name.to_owned(), listener.clone()));
        self
    }

    /// Reports a gateway's counters, labelled `gateway="<name>"`.
    #[cfg(feature = "remote")]
    pub fn gateway(&mut self, name: &str, gateway: &agentry_remote::Gateway) -> &mut Self {
        self.extra
            .push(Source::Gateway(name.to_owned(), gateway.clone()));
        self
    }

    /// The exporter; [`BuildError::DuplicateName`] if two sources of a kind share a name.
    pub fn build(&mut self) -> Result<Metrics, BuildError> {
        check_names(&self.extra)?;
        let sources = Sources {
            env: self.env.clone(),
            extra: std::mem::take(&mut self.extra),
            last: Mutex::default(),
        };
        let mut registry = Registry::default();
        registry.register_collector(Box::new(sources));
        Ok(Metrics(Arc::new(registry)))
    }
}

/// A Prometheus exporter for one environment: [`render`](Self::render) reads every counter
/// it reports and writes them in the Prometheus text format;
/// [`serve`](Self::serve) answers `GET /metrics` with that text. Cheap to clone.
///
/// It reads the counters the runtime keeps anyway, when asked: nothing is added to any
/// message path, and an application that makes no exporter pays nothing.
///
/// ```
/// use agentry::Env;
/// use agentry_metrics::Metrics;
///
/// let env = Env::new()?;
/// let metrics = Metrics::new(env.handle());
/// let text = metrics.render();
/// assert!(text.contains("# TYPE agentry_dead_letters_total counter\n"));
/// assert!(text.contains("agentry_agents 0\n"));
/// env.handle().stop();
/// env.run();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Metrics(Arc<Registry>);

impl Metrics {
    /// An exporter of the environment's, its dispatchers' and its agent types' counters.
    pub fn new(env: &EnvHandle) -> Metrics {
        Metrics::builder(env)
            .build()
            .expect("invariant: an exporter without extra sources has no duplicate names")
    }

    /// An exporter that also reports TCP or remote counters.
    pub fn builder(env: &EnvHandle) -> MetricsBuilder {
        MetricsBuilder {
            env: env.clone(),
            extra: Vec::new(),
        }
    }

    /// Every metric, read now, in the Prometheus text format ([`CONTENT_TYPE`]) — for an
    /// application that serves it from its own HTTP server.
    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing into a `String` cannot fail, and our collector reports no error of its own.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &self.0);
        text
    }
}
