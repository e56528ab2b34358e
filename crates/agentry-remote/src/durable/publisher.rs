//! The publisher of a gateway's durable sends: a bounded queue, one task that publishes in
//! order while connected, and the PubAck of each message awaited on its own task.
//!
//! Every accepted job is in `pending` until it is *settled* — stored (a PubAck) or lost
//! (store timeout, close). Whoever removes it from `pending` settles it, so each job is
//! counted exactly once even when close and a late PubAck race; `unsettled` drops only after
//! the count, so a `flush` that returns sees every counter final.

use super::Durables;
use crate::core::Core;
use crate::core::outbound::{OutKind, OutMsg};
use crate::envelope::Envelope;
use crate::error::FlushError;
use crate::event::LossReason;
use crate::stats::inc;
use async_nats::Subject;
use async_nats::jetstream::message::PublishMessage;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How long one publication waits for its PubAck before it is sent again.
pub(crate) const PUBACK_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause before a failed publication is sent again.
const RETRY_PAUSE: Duration = Duration::from_millis(200);
/// How often the publisher looks whether a lost connection is back.
const RECONNECT_POLL: Duration = Duration::from_millis(20);

/// One durable send.
#[derive(Clone)]
pub(crate) struct Job {
    n: u64,
    subject: Subject,
    id: Arc<str>,
    envelope: Envelope,
    payload: Bytes,
    deadline: Instant,
}

impl Job {
    pub(crate) fn new(
        subject: Subject,
        id: Arc<str>,
        envelope: Envelope,
        payload: Bytes,
        store_timeout: Duration,
    ) -> Job {
        let now = Instant::now();
        Job {
            n: 0,
            subject,
            id,
            envelope,
            payload,
            deadline: now.checked_add(store_timeout).unwrap_or(now),
        }
    }

    fn lose(self, core: &Core) {
        core.lose(
            OutMsg {
                subject: self.subject,
                reply: None,
                envelope: self.envelope,
                payload: self.payload,
                request: None,
                kind: OutKind::Message,
            },
            LossReason::NotStored,
        );
    }
}

pub(crate) enum Refused {
    Full,
    Closed,
}

/// The receiving ends of the publisher's queues (moved into its task).
pub(crate) struct Queues {
    fresh: mpsc::Receiver<Job>,
    again: mpsc::UnboundedReceiver<Job>,
}

/// Accepted jobs not yet settled, and how many of them are not yet counted.
#[derive(Default)]
struct Pending {
    jobs: HashMap<u64, Job>,
    unsettled: usize,
}

pub(crate) struct Publisher {
    fresh: mpsc::Sender<Job>,
    again: mpsc::UnboundedSender<Job>,
    pending: Mutex<Pending>,
    settled: Condvar,
    next: AtomicU64,
    closed: AtomicBool,
}

impl Publisher {
    pub(crate) fn new(capacity: usize) -> (Publisher, Queues) {
        let (fresh, fresh_rx) = mpsc::channel(capacity.max(1));
        let (again, again_rx) = mpsc::unbounded_channel();
        (
            Publisher {
                fresh,
                again,
                pending: Mutex::new(Pending::default()),
                settled: Condvar::new(),
                next: AtomicU64::new(1),
                closed: AtomicBool::new(false),
            },
            Queues {
                fresh: fresh_rx,
                again: again_rx,
            },
        )
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh message id: `<gateway-id>-<n>`.
    pub(crate) fn next_id(&self, gateway_id: &str) -> String {
        format!("{gateway_id}-{}", self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// Queues `job` (never blocks).
    pub(crate) fn submit(&self, core: &Core, mut job: Job) -> Result<(), Refused> {
        if self.closed.load(Ordering::Acquire) || core.is_closed() {
            return Err(Refused::Closed);
        }
        job.n = self.next.fetch_add(1, Ordering::Relaxed);
        let n = job.n;
        // In `pending` before the task can see it, so that it is settled only once.
        {
            let mut p = self.lock();
            p.jobs.insert(n, job.clone());
            p.unsettled += 1;
        }
        match self.fresh.try_send(job) {
            Ok(()) => Ok(()),
            Err(e) => {
                if self.claim(n) {
                    self.counted();
                }
                Err(match e {
                    mpsc::error::TrySendError::Full(_) => {
                        inc(&core.counters.overflow_rejected);
                        Refused::Full
                    }
                    mpsc::error::TrySendError::Closed(_) => Refused::Closed,
                })
            }
        }
    }

    /// Removes job `n` from `pending`: true if this call settles it (then the caller counts
    /// it and calls [`counted`](Self::counted)).
    fn claim(&self, n: u64) -> bool {
        self.lock().jobs.remove(&n).is_some()
    }

    /// A claimed job has been counted.
    fn counted(&self) {
        let mut p = self.lock();
        p.unsettled = p.unsettled.saturating_sub(1);
        if p.unsettled == 0 {
            self.settled.notify_all();
        }
    }

    fn is_pending(&self, n: u64) -> bool {
        self.lock().jobs.contains_key(&n)
    }

    pub(crate) fn pending(&self) -> usize {
        self.lock().unsettled
    }

    pub(crate) fn flush(&self, core: &Core, timeout: Duration) -> Result<(), FlushError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(FlushError::Closed);
        }
        if self.wait_settled(timeout) {
            Ok(())
        } else if core.is_connected() {
            Err(FlushError::Timeout)
        } else {
            Err(FlushError::Disconnected)
        }
    }

    fn wait_settled(&self, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut g = self.lock();
        while g.unsettled != 0 {
            let now = Instant::now();
            let Some(left) = deadline.map(|d| d.saturating_duration_since(now)) else {
                g = self.settled.wait(g).unwrap_or_else(PoisonError::into_inner);
                continue;
            };
            if left.is_zero() {
                return false;
            }
            g = self
                .settled
                .wait_timeout(g, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    /// Refuses new sends; gives what is pending up to `timeout` (while connected) for its
    /// PubAck, then reports the rest as not stored.
    pub(crate) fn close(&self, core: &Core, timeout: Duration) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        if core.is_connected() {
            self.wait_settled(timeout);
        }
        let left: Vec<Job> = self.lock().jobs.drain().map(|(_, j)| j).collect();
        for job in left {
            job.lose(core);
            self.counted();
        }
    }

    /// A publication of `job` failed: publish it again, or give it up after its deadline.
    fn failed(&self, core: &Core, job: Job, why: &dyn std::fmt::Display) {
        if Instant::now() >= job.deadline {
            if self.claim(job.n) {
                tracing::warn!(id = %job.id, error = %why, "durable message not stored in time");
                job.lose(core);
                self.counted();
            }
            return;
        }
        inc(&core.counters.durable_retried);
        let again = self.again.clone();
        tokio::spawn(async move {
            tokio::time::sleep(RETRY_PAUSE).await;
            let _ = again.send(job);
        });
    }
}

/// The publisher task: publishes queued jobs (retries first) in order, while connected.
pub(crate) async fn run(d: Arc<Durables>, mut q: Queues) {
    loop {
        let job = tokio::select! {
            biased;
            Some(job) = q.again.recv() => job,
            job = q.fresh.recv() => match job {
                Some(job) => {
                    inc(&d.core.counters.durable_sent);
                    job
                }
                None => return,
            },
        };
        while !d.core.is_connected() && !d.core.is_closed() {
            tokio::time::sleep(RECONNECT_POLL).await;
        }
        if !d.publisher.is_pending(job.n) {
            continue; // settled by close
        }
        let publish = PublishMessage::build()
            .payload(job.envelope.to_nats_payload(&job.payload))
            .message_id(&*job.id);
        match d.js.send_publish(job.subject.clone(), publish).await {
            Ok(ack) => {
                let d = Arc::clone(&d);
                tokio::spawn(async move {
                    match ack.await {
                        Ok(ack) => {
                            if d.publisher.claim(job.n) {
                                inc(&d.core.counters.durable_stored);
                                if ack.duplicate {
                                    inc(&d.core.counters.durable_deduplicated);
                                }
                                d.publisher.counted();
                            }
                        }
                        Err(e) => d.publisher.failed(&d.core, job, &e),
                    }
                });
            }
            Err(e) => d.publisher.failed(&d.core, job, &e),
        }
    }
}
