//! The inspector's HTTP endpoint: the metrics endpoint's request handling (`server.rs`,
//! `http.rs`) with the inspector's three routes, and the event-stream thread beside it.
//!
//! # Ground rules
//!
//! - One thread accepts and answers, one request at a time, each with
//!   [`IO_TIMEOUT`](crate::IO_TIMEOUT), as the metrics endpoint does. An event stream's
//!   request is answered with its response head, then handed to the stream thread
//!   (`stream.rs`), so the accept thread is free again at once.
//! - Stopping: set the flag, wake the `accept` (`server::wake`), join the accept thread — its
//!   exit drops the stream thread's sender, so that thread closes every stream and returns —
//!   then join the stream thread. The port is free when `stop` returns.

use super::stream::{self, Client};
use super::{Inspector, PAGE, query};
use crate::http::{self, Status};
use crate::server::{self, IO_TIMEOUT, error_reply, read_head, reply_and_close};
use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

/// The response head of an event stream (its body lasts until the stream is closed).
const EVENT_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n";
/// The stream's first line: a browser that lost it reconnects after a second.
const RETRY: &str = "retry: 1000\n\n";

/// A running inspector endpoint ([`Inspector::serve`]). Dropping it stops it, as
/// [`stop`](Self::stop) does.
#[derive(Debug)]
#[must_use = "dropping the server stops it"]
pub struct InspectorServer {
    local: SocketAddr,
    stop: Arc<AtomicBool>,
    open: Arc<AtomicUsize>,
    threads: Option<(JoinHandle<()>, JoinHandle<()>)>,
}

impl Inspector {
    /// Serves the page on `http://<addr>/` (port 0: any free port, see
    /// [`InspectorServer::local_addr`]), with its event stream and JSON snapshot, from two
    /// threads of its own until the returned server is stopped or dropped. Binding errors are
    /// returned at once.
    ///
    /// ```
    /// use agentry::Env;
    /// use agentry_metrics::inspector::Inspector;
    /// use std::io::{Read, Write};
    ///
    /// let env = Env::new()?;
    /// let server = Inspector::new(env.handle()).serve("127.0.0.1:0")?;
    /// let mut client = std::net::TcpStream::connect(server.local_addr())?;
    /// client.write_all(b"GET /snapshot.json?limit=5 HTTP/1.1\r\nHost: localhost\r\n\r\n")?;
    /// let mut answer = String::new();
    /// client.read_to_string(&mut answer)?;
    /// assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"));
    /// assert!(answer.contains("\"limit\":5"));
    /// server.stop();
    /// env.handle().stop();
    /// env.run();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn serve(&self, addr: impl ToSocketAddrs) -> io::Result<InspectorServer> {
        let listener = TcpListener::bind(addr)?;
        let local = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let open = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        let streams = std::thread::Builder::new()
            .name("agentry-inspector-events".into())
            .spawn({
                let inspector = self.clone();
                let open = Arc::clone(&open);
                move || stream::run(&inspector, &rx, &open)
            })?;
        let accept = std::thread::Builder::new()
            .name("agentry-inspector".into())
            .spawn({
                let inspector = self.clone();
                let stop = Arc::clone(&stop);
                let open = Arc::clone(&open);
                move || accept_loop(&listener, &inspector, &stop, &tx, &open)
            });
        let accept = match accept {
            Ok(accept) => accept,
            Err(e) => {
                // The stream thread's sender was dropped with the closure: it returns.
                let _ = streams.join();
                return Err(e);
            }
        };
        Ok(InspectorServer {
            local,
            stop,
            open,
            threads: Some((accept, streams)),
        })
    }
}

impl InspectorServer {
    /// The address it listens on (with the port the system chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Event streams open now.
    pub fn streams(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// Stops serving, closes every event stream and frees the port.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        let Some((accept, streams)) = self.threads.take() else {
            return;
        };
        self.stop.store(true, Ordering::SeqCst);
        match server::wake(self.local) {
            Ok(()) => {
                if accept.join().is_err() || streams.join().is_err() {
                    tracing::error!("an inspector thread panicked");
                }
            }
            Err(e) => tracing::warn!(addr = %self.local, error = %e,
                "could not wake the inspector endpoint to stop it; it stops at its next connection"),
        }
    }
}

impl Drop for InspectorServer {
    fn drop(&mut self) {
        self.shut_down();
    }
}

fn accept_loop(
    listener: &TcpListener,
    inspector: &Inspector,
    stop: &AtomicBool,
    streams: &Sender<Client>,
    open: &AtomicUsize,
) {
    loop {
        let accepted = listener.accept();
        if stop.load(Ordering::SeqCst) {
            return;
        }
        match accepted {
            Ok((stream, _)) => {
                if let Err(e) = answer(stream, inspector, streams, open) {
                    tracing::debug!(error = %e, "inspector request not answered");
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "inspector endpoint: accept failed");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// Reads one request head and answers it (an event stream's, by handing it over).
fn answer(
    mut stream: TcpStream,
    inspector: &Inspector,
    streams: &Sender<Client>,
    open: &AtomicUsize,
) -> io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let head = match read_head(&mut stream) {
        Ok(Some(head)) => head,
        Ok(None) => return Ok(()),
        Err(status) => return reply_and_close(stream, &error_reply(status)),
    };
    let request = match http::parse(&head) {
        Ok(request) => request,
        Err(status) => return reply_and_close(stream, &error_reply(status)),
    };
    if !matches!(request.path, "/" | "/snapshot.json" | "/events") {
        return reply_and_close(stream, &error_reply(Status::NotFound));
    }
    let head_only = match request.method {
        "GET" => false,
        "HEAD" => true,
        _ => return reply_and_close(stream, &error_reply(Status::MethodNotAllowed)),
    };
    let ok = (200, "OK");
    match request.path {
        "/" => reply_and_close(
            stream,
            &http::response(ok, "text/html; charset=utf-8", PAGE, head_only),
        ),
        path => {
            let query = match query::parse(request.query) {
                Ok(query) => query,
                Err(e) => {
                    let body = format!("400 Bad Request: {e:?}\n");
                    let reply = http::response((400, "Bad Request"), "text/plain", &body, false);
                    return reply_and_close(stream, &reply);
                }
            };
            if path == "/snapshot.json" {
                let reply = match catch_unwind(AssertUnwindSafe(|| inspector.snapshot_json(&query)))
                {
                    Ok(json) => http::response(ok, "application/json", &json, head_only),
                    Err(_) => {
                        tracing::error!("taking an inspector snapshot panicked");
                        error_reply(Status::Internal)
                    }
                };
                return reply_and_close(stream, &reply);
            }
            if head_only {
                return reply_and_close(stream, EVENT_HEAD.as_bytes());
            }
            // Claim a place first, so that concurrent hand-overs never pass the limit.
            if open.fetch_add(1, Ordering::SeqCst) >= inspector.0.max_clients {
                open.fetch_sub(1, Ordering::SeqCst);
                return reply_and_close(stream, &error_reply(Status::Unavailable));
            }
            let handed = stream
                .write_all(format!("{EVENT_HEAD}{RETRY}").as_bytes())
                .and_then(|()| Client::new(stream, query))
                .and_then(|client| {
                    streams
                        .send(client)
                        .map_err(|_| io::Error::other("the event-stream thread is gone"))
                });
            if handed.is_err() {
                open.fetch_sub(1, Ordering::SeqCst);
            }
            handed
        }
    }
}
