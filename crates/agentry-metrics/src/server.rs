//! The HTTP endpoint: one thread, plain `std::net`, `GET /metrics`.
//!
//! # Ground rules
//!
//! - One thread accepts and answers, one connection at a time: a scrape is a few
//!   milliseconds, and Prometheus scrapes one target once per interval. Each connection gets
//!   [`IO_TIMEOUT`] to send its request and take the answer, so a client that stalls holds
//!   the endpoint for at most that long; it is answered 408 (if it can still be written to)
//!   and closed.
//! - Every request gets a status line (see `http.rs`) and the connection is closed after it.
//!   A panic while rendering (a bug) is caught and answered 500: the endpoint keeps serving.
//! - Stopping: [`MetricsServer::stop`] (or dropping it) sets the stop flag, then connects to
//!   the endpoint to wake the blocked `accept`; the thread sees the flag, returns, and drops
//!   the listener — the port is free when `stop` returns.

use crate::http::{self, MAX_HEAD, Route, Status};
use crate::metrics::{CONTENT_TYPE, Metrics};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a connection may take to send its request, and to take the answer.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// How long, and how much, is read after an answer before the connection is closed.
const DRAIN: Duration = Duration::from_millis(200);
const MAX_DRAIN: usize = 64 * 1024;

/// A running metrics endpoint ([`Metrics::serve`]). Dropping it stops it, as
/// [`stop`](Self::stop) does.
#[derive(Debug)]
#[must_use = "dropping the server stops it"]
pub struct MetricsServer {
    local: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Metrics {
    /// Serves the metrics on `http://<addr>/metrics` (port 0: any free port, see
    /// [`MetricsServer::local_addr`]) from a thread of its own, until the returned server is
    /// stopped or dropped. Binding errors are returned at once.
    ///
    /// ```
    /// use agentry::Env;
    /// use agentry_metrics::Metrics;
    /// use std::io::{Read, Write};
    ///
    /// let env = Env::new()?;
    /// let server = Metrics::new(env.handle()).serve("127.0.0.1:0")?;
    ///
    /// let mut client = std::net::TcpStream::connect(server.local_addr())?;
    /// client.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")?;
    /// let mut answer = String::new();
    /// client.read_to_string(&mut answer)?;
    /// assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"));
    /// assert!(answer.contains("\r\n\r\n# HELP "));
    ///
    /// server.stop();
    /// env.handle().stop();
    /// env.run();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn serve(&self, addr: impl ToSocketAddrs) -> io::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)?;
        let local = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("agentry-metrics".into())
            .spawn({
                let metrics = self.clone();
                let stop = Arc::clone(&stop);
                move || accept_loop(&listener, &metrics, &stop)
            })?;
        Ok(MetricsServer {
            local,
            stop,
            thread: Some(thread),
        })
    }
}

impl MetricsServer {
    /// The address it listens on (with the port the system chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Stops serving and frees the port (a scrape being answered is finished first).
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        self.stop.store(true, Ordering::SeqCst);
        match wake(self.local) {
            Ok(()) => {
                if thread.join().is_err() {
                    tracing::error!("the metrics endpoint's thread panicked");
                }
            }
            // It will see the flag at its next connection; waiting could be forever.
            Err(e) => tracing::warn!(addr = %self.local, error = %e,
                "could not wake the metrics endpoint to stop it; it stops at its next connection"),
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// Wakes an endpoint's `accept` blocked on `local` by connecting to it (an unspecified
/// address is reached through loopback).
pub(crate) fn wake(local: SocketAddr) -> io::Result<()> {
    let mut wake = local;
    if wake.ip().is_unspecified() {
        wake.set_ip(match wake {
            SocketAddr::V4(_) => Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => Ipv6Addr::LOCALHOST.into(),
        });
    }
    TcpStream::connect_timeout(&wake, IO_TIMEOUT).map(drop)
}

fn accept_loop(listener: &TcpListener, metrics: &Metrics, stop: &AtomicBool) {
    loop {
        let accepted = listener.accept();
        if stop.load(Ordering::SeqCst) {
            return;
        }
        match accepted {
            Ok((stream, _)) => {
                if let Err(e) = answer(stream, metrics) {
                    tracing::debug!(error = %e, "metrics request not answered");
                }
            }
            Err(e) => {
                // Out of descriptors and the like: wait a little rather than spin.
                tracing::warn!(error = %e, "metrics endpoint: accept failed");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// Reads one request head and answers it.
fn answer(mut stream: TcpStream, metrics: &Metrics) -> io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let route = match read_head(&mut stream) {
        Ok(Some(head)) => http::route(&head),
        Ok(None) => return Ok(()), // closed without a request
        Err(status) => Route::Status(status),
    };
    let reply = match route {
        Route::Metrics { head } => match catch_unwind(AssertUnwindSafe(|| metrics.render())) {
            Ok(text) => http::response((200, "OK"), CONTENT_TYPE, &text, head),
            Err(_) => {
                tracing::error!("rendering the metrics panicked");
                error_reply(Status::Internal)
            }
        },
        Route::Status(status) => error_reply(status),
    };
    reply_and_close(stream, &reply)
}

/// Writes `reply`, then closes the connection gracefully (see below).
pub(crate) fn reply_and_close(mut stream: TcpStream, reply: &[u8]) -> io::Result<()> {
    stream.write_all(reply)?;
    stream.flush()?;
    // Closing with unread request bytes would reset the connection and could cut the answer
    // short: say we are done, then drain what the client still sends (briefly, boundedly).
    let _ = stream.shutdown(std::net::Shutdown::Write);
    stream.set_read_timeout(Some(DRAIN))?;
    let mut sink = [0u8; 1024];
    let mut drained = 0;
    while drained < MAX_DRAIN {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
    Ok(())
}

pub(crate) fn error_reply(status: Status) -> Vec<u8> {
    let (code, reason) = status.line();
    http::response(
        (code, reason),
        "text/plain; charset=utf-8",
        &format!("{code} {reason}\n"),
        false,
    )
}

/// The request head, `None` if the client closed before sending anything, or the status to
/// answer a head that is too long, cut short or too slow.
pub(crate) fn read_head(stream: &mut TcpStream) -> Result<Option<Vec<u8>>, Status> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = match stream.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(Status::RequestTimeout);
            }
            Err(_) => return Err(Status::BadRequest),
        };
        if n == 0 {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err(Status::BadRequest)
            };
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = http::head_end(&buf) {
            buf.truncate(end);
            return Ok(Some(buf));
        }
        if buf.len() > MAX_HEAD {
            return Err(Status::HeadTooLarge);
        }
    }
}
