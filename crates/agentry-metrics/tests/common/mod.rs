//! Shared by the integration tests: a plain `std::net` HTTP client, a parser of the
//! Prometheus text format, bounded waits.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Every wait gives up after this long.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// Sends `request` as is and returns the whole answer (the server closes the connection).
pub fn exchange(addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).expect("connected");
    stream.set_read_timeout(Some(DEADLINE)).expect("timeout");
    stream.write_all(request).expect("sent");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("answer");
    String::from_utf8(answer).expect("utf-8 answer")
}

/// The status code of an answer.
pub fn status(answer: &str) -> u16 {
    answer
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {answer:?}"))
}

/// `GET /metrics`: the body of a 200 answer, whose head must be well formed.
pub fn scrape(addr: SocketAddr) -> String {
    let answer = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n");
    assert_eq!(status(&answer), 200, "{answer}");
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head");
    assert!(
        head.contains("\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
        "{head}"
    );
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .expect("a length")
        .parse()
        .expect("a number");
    assert_eq!(length, body.len());
    body.to_owned()
}

/// A parsed exposition: every sample by `name{labels}` (labels as written), and the
/// `# TYPE` of every family.
#[derive(Debug, Default)]
pub struct Exposition {
    pub samples: BTreeMap<String, f64>,
    pub types: BTreeMap<String, String>,
    pub helps: BTreeMap<String, String>,
}

impl Exposition {
    /// Parses the text, checking the format's rules as it goes: a family's HELP then TYPE
    /// come before its samples (a histogram's: `_bucket`, `_sum`, `_count`), each family
    /// once, each series once.
    pub fn parse(text: &str) -> Exposition {
        let mut e = Exposition::default();
        let mut current: Option<String> = None;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').expect("HELP name text");
                assert!(
                    e.helps.insert(name.to_owned(), help.to_owned()).is_none(),
                    "{name} twice"
                );
                current = Some(name.to_owned());
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
                assert_eq!(current.as_deref(), Some(name), "TYPE right after HELP");
                assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
                e.types.insert(name.to_owned(), kind.to_owned());
            } else {
                let (series, value) = line.rsplit_once(' ').expect("series value");
                let sample = series.split('{').next().expect("name");
                // A histogram's samples are its `_bucket`s, `_sum` and `_count`.
                let name = ["_bucket", "_sum", "_count"]
                    .iter()
                    .filter_map(|suffix| sample.strip_suffix(suffix))
                    .find(|family| e.types.get(*family).is_some_and(|k| k == "histogram"))
                    .unwrap_or(sample);
                assert_eq!(
                    current.as_deref(),
                    Some(name),
                    "{line}: sample outside its family"
                );
                assert!(e.types.contains_key(name), "{line}: no TYPE");
                let value: f64 = value.parse().unwrap_or_else(|_| panic!("{line}: value"));
                assert!(
                    e.samples.insert(series.to_owned(), value).is_none(),
                    "{series} twice"
                );
            }
        }
        e
    }

    /// The value of a series, e.g. `agentry_agents` or
    /// `agentry_dispatcher_agents{dispatcher="pool",kind="thread_pool"}`.
    pub fn get(&self, series: &str) -> f64 {
        *self
            .samples
            .get(series)
            .unwrap_or_else(|| panic!("no series {series} in {:#?}", self.samples.keys()))
    }

    /// The series of a family.
    pub fn family(&self, name: &str) -> Vec<(&str, f64)> {
        self.samples
            .iter()
            .filter(|(s, _)| s.split('{').next() == Some(name))
            .map(|(s, v)| (s.as_str(), *v))
            .collect()
    }
}

/// Polls `condition` until it holds, failing after the deadline.
pub fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}
