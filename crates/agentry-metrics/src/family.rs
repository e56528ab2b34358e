//! What one scrape reports: metric families, each with its samples, built by the sources
//! (`env.rs`, `net.rs`, `remote.rs`) and written in the Prometheus text format through
//! `prometheus-client`'s encoder.
//!
//! Sources only read counters; a family is made when its first sample is added, so one that
//! nothing reports is left out. Several sources may add to one family (two gateways, one
//! `agentry_remote_sent_total`): the family is written once, with every sample.

use agentry::HandlerTimes;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::exemplar::Exemplar;
use std::collections::HashMap;
use std::fmt::Write;
use std::time::Duration;

/// A metric's kind. Counters and histograms only go up (the exporter sees to it, see
/// [`Monotonic`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
    /// Handler times: [`HandlerTimes`]' buckets, in seconds.
    Histogram,
}

/// A metric family: its name as exposed minus the `_total` a counter gets, its help text,
/// its kind and the labels its samples carry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spec {
    pub(crate) name: &'static str,
    pub(crate) help: &'static str,
    pub(crate) kind: Kind,
    pub(crate) labels: &'static [&'static str],
}

impl Spec {
    /// The name as exposed (`_total` appended to a counter's).
    #[cfg(all(test, feature = "net", feature = "remote"))]
    pub(crate) fn exposed(&self) -> String {
        match self.kind {
            Kind::Counter => format!("{}_total", self.name),
            Kind::Gauge | Kind::Histogram => self.name.to_owned(),
        }
    }
}

/// A sample's value: a count, or handler times (a histogram in seconds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Value {
    Int(u64),
    Histogram(HandlerTimes),
}

impl Value {
    /// The larger of two readings of one series (per bucket for a histogram).
    fn max(self, other: Value) -> Value {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => Value::Int(a.max(b)),
            (Value::Histogram(mut a), Value::Histogram(b)) => {
                a.total = a.total.max(b.total);
                for (x, y) in a.counts.iter_mut().zip(b.counts) {
                    *x = (*x).max(y);
                }
                Value::Histogram(a)
            }
            (a, _) => a,
        }
    }
}

#[derive(Debug)]
struct Sample {
    labels: Vec<(&'static str, String)>,
    value: Value,
}

#[derive(Debug)]
struct Family {
    spec: Spec,
    samples: Vec<Sample>,
}

/// The families of one scrape, in the order they were first added.
#[derive(Debug, Default)]
pub(crate) struct Families {
    list: Vec<Family>,
    index: HashMap<&'static str, usize>,
}

impl Families {
    /// Adds a sample; `labels` are the values of `spec.labels`, in order.
    pub(crate) fn add(&mut self, spec: &Spec, labels: &[&str], value: Value) {
        debug_assert_eq!(spec.labels.len(), labels.len(), "{}", spec.name);
        let at = *self.index.entry(spec.name).or_insert_with(|| {
            self.list.push(Family {
                spec: *spec,
                samples: Vec::new(),
            });
            self.list.len() - 1
        });
        self.list[at].samples.push(Sample {
            labels: spec
                .labels
                .iter()
                .zip(labels)
                .map(|(k, v)| (*k, (*v).to_owned()))
                .collect(),
            value,
        });
    }

    /// Adds an integer sample.
    pub(crate) fn int(&mut self, spec: &Spec, labels: &[&str], value: u64) {
        self.add(spec, labels, Value::Int(value));
    }

    /// Keeps every counter from going below what `last` saw of it (see [`Monotonic`]).
    pub(crate) fn clamp(&mut self, last: &mut Monotonic) {
        let mut seen = HashMap::with_capacity(last.0.len());
        for family in self.list.iter_mut().filter(|f| f.spec.kind != Kind::Gauge) {
            for sample in &mut family.samples {
                let mut key = family.spec.name.to_owned();
                for (_, v) in &sample.labels {
                    // Length-prefixed: unique per series whatever the values hold.
                    let _ = write!(key, "/{}:{v}", v.len());
                }
                if let Some(before) = last.0.get(&key) {
                    sample.value = sample.value.max(*before);
                }
                seen.insert(key, sample.value);
            }
        }
        last.0 = seen;
    }

    /// Every sample: its family's exposed-name stem, the label values past the first (the
    /// first names the source, which the inspector already shows), and the value.
    #[cfg(feature = "inspector")]
    pub(crate) fn for_each_sample(
        &self,
        mut f: impl FnMut(&'static str, &[(&'static str, String)], Value),
    ) {
        for family in &self.list {
            for sample in &family.samples {
                f(
                    family.spec.name,
                    sample.labels.get(1..).unwrap_or(&[]),
                    sample.value,
                );
            }
        }
    }

    /// Writes every family through `prometheus-client`'s encoder.
    pub(crate) fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        for family in &self.list {
            let kind = match family.spec.kind {
                Kind::Counter => MetricType::Counter,
                Kind::Gauge => MetricType::Gauge,
                Kind::Histogram => MetricType::Histogram,
            };
            let mut metric =
                encoder.encode_descriptor(family.spec.name, family.spec.help, None, kind)?;
            for sample in &family.samples {
                let mut series = metric.encode_family(&sample.labels)?;
                match (family.spec.kind, sample.value) {
                    (Kind::Counter, Value::Int(v)) => {
                        series.encode_counter(&v, None::<&Exemplar<NoLabelSet, f64>>)?
                    }
                    (Kind::Gauge, Value::Int(v)) => series.encode_gauge(&v)?,
                    (_, Value::Histogram(h)) => {
                        let buckets: Vec<(f64, u64)> = HandlerTimes::BOUNDS
                            .iter()
                            .map(Duration::as_secs_f64)
                            .chain([f64::INFINITY])
                            .zip(h.counts)
                            .collect();
                        series.encode_histogram::<NoLabelSet>(
                            h.total.as_secs_f64(),
                            h.count(),
                            &buckets,
                            None,
                        )?
                    }
                    (kind, value) => {
                        debug_assert!(false, "{kind:?} sample {value:?}");
                    }
                }
            }
        }
        Ok(())
    }
}

/// The last value exported of every counter series.
///
/// The sources read live counters that may lag for one read (an agent whose last mbox is
/// being dropped as it is read, see `EnvHandle::agent_type_stats`; an io thread that takes
/// back a count for an outcome that did not happen): the exporter never reports a counter
/// below what it reported before, so Prometheus never mistakes a lag for a reset. A series
/// that is not reported in a scrape (its dispatcher or gateway is gone) is forgotten.
#[derive(Debug, Default)]
pub(crate) struct Monotonic(HashMap<String, Value>);

#[cfg(test)]
mod tests;
