//! The queue of one engine: a lane per priority, each with a local part (what the serving
//! thread sends, and what it moved there from the other part) and a cross-thread part; and the
//! closing protocol (module docs of `engine.rs`).
//!
//! Anyone may push. Only the serving thread's [`Server`](super::server::Server) touches the
//! local parts: `push` takes the local path only on the thread recorded in `SERVED_QUEUE`,
//! which a server sets for its own queue while it lives.

use crate::demand::Demand;
use crate::disp::Closable;
use crate::disp::event_lanes::EventLanes;
use crate::priority::Priority;
use crate::slab::AgentSlab;
use crate::stats::EnvCounters;
use crate::sync::mpsc::MpscQueue;
use crate::sync::parker::Parker;
use parking_lot::Mutex;
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

thread_local! {
    /// Address of the queue this thread serves (0 if none); set and cleared by its server.
    pub(super) static SERVED_QUEUE: Cell<usize> = const { Cell::new(0) };
}

/// True if the calling thread serves an engine queue (a one-thread worker, or a driven
/// dispatcher's thread).
pub(crate) fn serves_a_queue() -> bool {
    SERVED_QUEUE.get() != 0
}

/// How a server chooses among its queue's lanes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Policy {
    /// One lane (the plain dispatcher).
    Fifo,
    /// Eight lanes; always the highest non-empty one.
    Strict,
    /// Eight lanes; up to `quotes[p]` demands of lane `p`, highest first, then round again
    /// (every quote at least 1: `PrioOneThreadBuilder::build` refuses a 0).
    RoundRobin([usize; 8]),
}

/// The queues of one priority.
pub(super) struct Lane {
    /// Demands the serving thread sent to agents of its own queue, and those it moved here
    /// from `remote`, by event priority (serving thread only: see [`Server`](super::server::Server)).
    pub(super) local: UnsafeCell<EventLanes>,
    pub(super) remote: MpscQueue<Demand>,
}

impl Lane {
    fn new() -> Self {
        Lane {
            local: UnsafeCell::new(EventLanes::new()),
            remote: MpscQueue::new(),
        }
    }
}

/// The queue of one engine (one `one_thread`-family dispatcher).
pub(crate) struct Queue {
    pub(super) name: String,
    /// Address of the environment whose agents (and slab) this queue serves.
    pub(super) env: usize,
    pub(super) lanes: Box<[Lane]>,
    pub(super) policy: Policy,
    /// The lanes' local lengths, published by the server after each batch (for statistics).
    pub(super) local_len: AtomicUsize,
    pub(super) parker: Parker,
    pub(super) closed: AtomicBool,
    /// Set (once) by the first push of a demand with a raised event priority: a plain
    /// dispatcher then sorts what other threads send by priority (engine ground rules).
    raised: AtomicBool,
    pub(super) counters: Arc<EnvCounters>,
    /// Written only by the server.
    pub(super) handled: AtomicU64,
    /// The environment's agents (the server runs them; what is drained after closing is
    /// counted as theirs).
    pub(super) slab: Weak<AgentSlab>,
    /// Set by the one server the queue ever has (a second claim fails).
    pub(super) claimed: AtomicBool,
    /// Whether the server has left the closed queue (engine ground rules); whoever drains it
    /// after closing holds this lock.
    pub(super) left: Mutex<bool>,
}

// SAFETY: the lanes' `local` parts are touched only by the queue's server on its thread (or
// through `&mut self`): `push` takes the local path only where `SERVED_QUEUE` names this queue,
// which only the server's thread does while the server lives. Everything else is `Sync` on
// its own.
unsafe impl Sync for Queue {}

impl Queue {
    /// The queue of a dispatcher named `name` of the environment at `env` (its address), whose
    /// counters and slab it uses for what it drops.
    pub(crate) fn new(
        env: usize,
        counters: &Arc<EnvCounters>,
        slab: &Arc<AgentSlab>,
        name: String,
        policy: Policy,
        parker: Parker,
    ) -> Self {
        let lanes = if matches!(policy, Policy::Fifo) {
            1
        } else {
            Priority::ALL.len()
        };
        Queue {
            name,
            env,
            lanes: (0..lanes).map(|_| Lane::new()).collect(),
            policy,
            local_len: AtomicUsize::new(0),
            parker,
            closed: AtomicBool::new(false),
            raised: AtomicBool::new(false),
            counters: Arc::clone(counters),
            handled: AtomicU64::new(0),
            slab: Arc::downgrade(slab),
            claimed: AtomicBool::new(false),
            left: Mutex::new(false),
        }
    }

    pub(super) fn address(&self) -> usize {
        self as *const Queue as usize
    }

    /// The queue's name (its dispatcher's).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// True if the queue serves the environment at `env`.
    pub(crate) fn belongs_to(&self, env: usize) -> bool {
        self.env == env
    }

    /// Queues a demand in lane `lane` (0 on a plain dispatcher).
    #[inline(always)]
    pub(crate) fn push(&self, demand: Demand, lane: u8) -> Result<(), Demand> {
        if self.closed.load(Ordering::Acquire) {
            return Err(demand);
        }
        if demand.priority() != 0 {
            self.note_raised();
        }
        let lane = &self.lanes[usize::from(lane)];
        if SERVED_QUEUE.get() == self.address() {
            // The demand runs behind what is queued before it: by then its agent's slot is in
            // cache (a ring of 10^5 agents waited for it on every hop: 15–18 → 21–26 M msg/s).
            demand.target().prefetch_slot();
            // SAFETY: the calling thread is this queue's server (the `Sync` impl above), and
            // no server method is running: they do not call out while they borrow `local`.
            unsafe { (*lane.local.get()).push(demand) };
        } else {
            lane.remote.push(demand);
            self.parker.unpark();
            // After `unpark`'s `SeqCst` fence (engine ground rules).
            if self.closed.load(Ordering::Relaxed) {
                self.drain_if_abandoned();
            }
        }
        Ok(())
    }

    /// A demand was pushed as the queue closed: if its server has left already, nobody else
    /// will take it (engine ground rules).
    #[cold]
    #[inline(never)]
    fn drain_if_abandoned(&self) {
        let left = self.left.lock();
        if *left {
            for lane in self.lanes.iter() {
                // SAFETY: the server has left (under this lock, held): we are the only one
                // popping.
                while let Some(d) = unsafe { lane.remote.pop() } {
                    self.discard_closed(d);
                }
            }
        }
    }

    /// Counts a demand that will never run because the queue closed, as its agent's.
    pub(super) fn discard_closed(&self, demand: Demand) {
        match self.slab.upgrade() {
            Some(slab) => demand.discard_closed(&slab, &self.counters),
            None => demand.discard(&self.counters),
        }
    }

    /// Remembers that raised event priorities are in use (written once, read per demand).
    #[cold]
    #[inline(never)]
    fn note_raised(&self) {
        if !self.raised.load(Ordering::Relaxed) {
            self.raised.store(true, Ordering::Relaxed);
        }
    }

    /// True once a demand with a raised event priority was pushed. Relaxed: the flag only
    /// picks the serving policy (the demands travel through the queues, which synchronise),
    /// and an acquire load per demand would keep the compiler from holding the server's
    /// state in registers across it.
    #[inline(always)]
    pub(super) fn raised(&self) -> bool {
        self.raised.load(Ordering::Relaxed)
    }

    /// The lane of an agent of priority `priority`.
    pub(crate) fn lane_of(&self, priority: Priority) -> u8 {
        if self.lanes.len() == 1 {
            0
        } else {
            priority as u8
        }
    }

    /// Demands waiting in the lanes (approximate while senders are active).
    pub(crate) fn queued(&self) -> usize {
        self.local_len.load(Ordering::Relaxed)
            + self.lanes.iter().map(|l| l.remote.len()).sum::<usize>()
    }

    pub(crate) fn is_served_by_current_thread(&self) -> bool {
        SERVED_QUEUE.get() == self.address()
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.parker.unpark();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Number of demands handled so far.
    pub(crate) fn handled(&self) -> u64 {
        self.handled.load(Ordering::Relaxed)
    }
}

impl Closable for Queue {
    fn close(&self) {
        Queue::close(self);
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // Demands pushed in the race with `close`, or left by a server that never left: never
        // run, counted.
        for lane in self.lanes.iter_mut() {
            while let Some(d) = lane.local.get_mut().pop() {
                d.discard(&self.counters);
            }
            // SAFETY: `&mut self`: no producer and no server is left, we are the only consumer.
            while let Some(d) = unsafe { lane.remote.pop() } {
                d.discard(&self.counters);
            }
        }
    }
}
