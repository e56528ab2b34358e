//! The event streams: the thread that, once per tick, takes one snapshot per distinct query
//! and writes it to every client that asked for it.
//!
//! # Ground rules
//!
//! - Streams are non-blocking: a write takes what the socket takes; the rest waits in the
//!   client's backlog for the next write. A client whose backlog would pass [`MAX_BACKLOG`] is
//!   dropped (its connection closed): a slow or stalled reader costs bounded memory and never
//!   holds up the others or the environment.
//! - A new client gets a snapshot at once, then one per tick with everybody else.
//! - The thread ends when the endpoint's accept thread drops its sender (stop), closing every
//!   stream; `open` counts the streams it holds, for the accept thread's client limit.

use super::Inspector;
use agentry::snapshot::SnapshotQuery;
use std::collections::HashMap;
use std::io::{self, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Instant;

/// The most bytes of events a client may leave unread before it is dropped.
pub const MAX_BACKLOG: usize = 1024 * 1024;

/// One event stream.
pub(super) struct Client {
    stream: TcpStream,
    query: SnapshotQuery,
    backlog: Vec<u8>,
    /// Bytes of `backlog` already written.
    written: usize,
}

impl Client {
    /// A stream whose response head has been written; `stream` is made non-blocking.
    pub(super) fn new(stream: TcpStream, query: SnapshotQuery) -> io::Result<Client> {
        stream.set_nonblocking(true)?;
        Ok(Client {
            stream,
            query,
            backlog: Vec::new(),
            written: 0,
        })
    }

    /// Queues one event and writes what the socket takes; `Err` if the client must go (its
    /// backlog would pass the bound, or its connection failed).
    fn send(&mut self, json: &str) -> io::Result<()> {
        if self.backlog.len() - self.written + json.len() + 8 > MAX_BACKLOG {
            return Err(io::Error::other("the client's backlog is full"));
        }
        self.backlog.drain(..self.written);
        self.written = 0;
        self.backlog.extend_from_slice(b"data: ");
        self.backlog.extend_from_slice(json.as_bytes());
        self.backlog.extend_from_slice(b"\n\n");
        while self.written < self.backlog.len() {
            match self.stream.write(&self.backlog[self.written..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The thread's loop: serve the clients `new` hands over until it is dropped.
pub(super) fn run(inspector: &Inspector, new: &Receiver<Client>, open: &AtomicUsize) {
    let tick = inspector.0.tick;
    let mut clients: Vec<Client> = Vec::new();
    let mut next = Instant::now() + tick;
    let drop_client = |_: Client| {
        open.fetch_sub(1, Ordering::SeqCst);
    };
    loop {
        match new.recv_timeout(next.saturating_duration_since(Instant::now())) {
            Ok(mut client) => {
                let json = inspector.snapshot_json(&client.query);
                match client.send(&json) {
                    Ok(()) => clients.push(client),
                    Err(e) => {
                        tracing::debug!(error = %e, "inspector: event stream closed");
                        drop_client(client);
                    }
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                let mut taken: HashMap<SnapshotQuery, Arc<str>> = HashMap::new();
                let mut kept = Vec::with_capacity(clients.len());
                for mut client in clients.drain(..) {
                    let json = taken
                        .entry(client.query.clone())
                        .or_insert_with(|| inspector.snapshot_json(&client.query).into())
                        .clone();
                    match client.send(&json) {
                        Ok(()) => kept.push(client),
                        Err(e) => {
                            tracing::debug!(error = %e, "inspector: event stream dropped");
                            drop_client(client);
                        }
                    }
                }
                clients = kept;
                next += tick;
                let now = Instant::now();
                if next < now {
                    // Snapshots took longer than a tick: skip the missed ticks.
                    next = now + tick;
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                for client in clients {
                    drop_client(client);
                }
                return;
            }
        }
    }
}
