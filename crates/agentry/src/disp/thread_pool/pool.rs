//! The shared part of a thread pool: ready queues, work stealing, and who sleeps.
//!
//! # Ground rules
//!
//! - Ready agent queues sit in the injector (scheduled from outside the pool) or in a worker's
//!   local deque (scheduled by that worker: a message between agents of the same pool stays on
//!   the worker that sent it). Idle workers steal from the injector and from each other
//!   (`crossbeam-deque`).
//! - Affinity (on by default, `ThreadPoolBuilder::affinity`): a worker that schedules a
//!   queue into its *empty* deque wakes nobody — it takes
//!   that queue itself as soon as its current one yields, so agents that talk to each other
//!   (a ping-pong, a ring, a request chain) stay on one worker instead of being stolen across
//!   threads at every message. Once its deque holds more than the queue it is about to take,
//!   it wakes a worker as any producer does. A worker about to block (a request, a chain
//!   receive: [`before_blocking`]) first wakes a worker for what its deque holds, so nothing
//!   waits behind a blocked thread for an agent that another worker could run.
//! - Wake-ups: after scheduling, a producer issues a `SeqCst` fence and wakes one sleeping
//!   worker only if no worker is searching for work. The woken worker counts as searching
//!   from the moment it is chosen, so a burst of sends wakes one worker, not one per message;
//!   a searching worker that finds work while more is waiting wakes the next one.
//! - A worker that gives up searching registers as idle, then parks through its own parker
//!   (`sync/parker.rs`), whose fence pairs with the producer's: either the worker's last look
//!   finds the new work, or the producer sees it idle and wakes it.
//! - Closing: workers run what is ready, then *leave* one by one ([`Pool::leave`]): each
//!   issues a `SeqCst` fence, then under the `left` lock drains the queues still in the
//!   injector (what was scheduled in the race with closing), counting each message as its
//!   agent's; the last marks the pool abandoned. A producer that scheduled a queue checks
//!   `closed` again behind the fence of its wake-up ([`Pool::drained_if_abandoned`]): either
//!   a leaving worker's drain sees the queue, or the producer sees `closed` and — under the
//!   same lock — drains the abandoned pool itself. A message accepted in the race with
//!   closing is never left uncounted in a queue nobody runs.

use super::agent_queue::AgentQueue;
use crate::slab::AgentSlab;
use crate::stats::EnvCounters;
use crate::sync::parker::Parker;
use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
use std::sync::{Arc, OnceLock, Weak};

thread_local! {
    /// The pool this thread works for, with its index and local deque.
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

struct Local {
    /// The pool this thread works for.
    pool: Arc<Pool>,
    deque: Worker<Arc<AgentQueue>>,
    /// Queues this worker has taken so far (see [`INJECTOR_INTERVAL`]).
    activations: Cell<u32>,
    /// The address of the queue this worker is running, 0 between queues.
    running: Cell<usize>,
}

/// Called before the calling thread blocks waiting for another agent (a request, a chain
/// receive): on a pool worker, the queues its deque holds are handed to another worker
/// (ground rules: affinity). Does nothing on any other thread.
pub(crate) fn before_blocking() {
    LOCAL.with_borrow(|local| {
        if let Some(l) = local {
            l.pool.share_before_blocking(&l.deque);
        }
    });
}

/// Every this many activations a worker looks at the injector before its own deque, so that
/// work scheduled from outside the pool is not starved by agents of the pool that keep each
/// other (or themselves) busy — tokio's "global queue interval" plays the same role.
const INJECTOR_INTERVAL: u32 = 61;

/// One pool's shared state.
pub(crate) struct Pool {
    pub(super) name: String,
    pub(super) env: usize,
    pub(super) threads: usize,
    pub(super) max_demands_at_once: usize,
    /// Ground rules: affinity (`ThreadPoolBuilder::affinity`).
    affinity: bool,
    pub(crate) counters: Arc<EnvCounters>,
    injector: Injector<Arc<AgentQueue>>,
    stealers: OnceLock<Box<[Stealer<Arc<AgentQueue>>]>>,
    parkers: Box<[Parker]>,
    /// Indexes of parked (or parking) workers.
    idle: Mutex<Vec<usize>>,
    idle_count: AtomicUsize,
    searching: AtomicUsize,
    closed: AtomicBool,
    /// Demands handled, per worker (single writer each).
    handled: Box<[CachePadded<AtomicU64>]>,
    /// The environment's agents (to count what is drained after closing).
    slab: Weak<AgentSlab>,
    /// Workers that have left the closed pool (ground rules); whoever drains it after closing
    /// holds this lock.
    left: Mutex<usize>,
}

impl Pool {
    /// True if `slab` holds the agents of the pool's environment.
    pub(super) fn runs_agents_of(&self, slab: &AgentSlab) -> bool {
        std::ptr::eq(self.slab.as_ptr(), slab)
    }

    pub(super) fn new(
        name: String,
        env: usize,
        threads: usize,
        max_demands_at_once: usize,
        affinity: bool,
        counters: Arc<EnvCounters>,
        slab: Weak<AgentSlab>,
    ) -> Self {
        Pool {
            name,
            env,
            threads,
            max_demands_at_once,
            affinity,
            counters,
            injector: Injector::new(),
            stealers: OnceLock::new(),
            parkers: (0..threads).map(|_| Parker::new()).collect(),
            idle: Mutex::new(Vec::with_capacity(threads)),
            idle_count: AtomicUsize::new(0),
            searching: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            handled: (0..threads)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            slab,
            left: Mutex::new(0),
        }
    }

    pub(super) fn set_stealers(&self, stealers: Box<[Stealer<Arc<AgentQueue>>]>) {
        if self.stealers.set(stealers).is_err() {
            unreachable!("invariant: the stealers are set once, before any worker runs");
        }
    }

    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        for parker in self.parkers.iter() {
            parker.unpark();
        }
    }

    /// True if only the calling thread can run `queue`: it is one of this pool's workers and
    /// either the pool has only one, or this worker is running `queue` right now (a sibling
    /// in a coop that shares one FIFO). A blocking wait for one of its agents would never
    /// end. (Otherwise another worker can serve the request, unless they are all blocked.)
    pub(super) fn is_served_by_current_thread(&self, queue: &AgentQueue) -> bool {
        LOCAL.with_borrow(|l| {
            l.as_ref().is_some_and(|l| {
                std::ptr::eq(&*l.pool, self)
                    && (self.threads == 1 || l.running.get() == queue as *const AgentQueue as usize)
            })
        })
    }

    /// Records which queue the calling worker runs (`None` between queues).
    pub(super) fn set_running(&self, queue: Option<&AgentQueue>) {
        let address = queue.map_or(0, |q| q as *const AgentQueue as usize);
        LOCAL.with_borrow(|l| {
            if let Some(l) = l {
                l.running.set(address);
            }
        });
    }

    /// Puts a ready queue where a worker will find it, and wakes a worker if needed (ground
    /// rules: affinity).
    pub(super) fn schedule(&self, queue: Arc<AgentQueue>) {
        let scheduled = LOCAL.with_borrow(|local| match local {
            Some(l) if std::ptr::eq(&*l.pool, self) => {
                let had_work = !l.deque.is_empty();
                l.deque.push(queue);
                Ok(had_work)
            }
            _ => Err(queue),
        });
        match scheduled {
            // This worker takes it next; it cannot leave the pool with it queued, so no other
            // thread needs to see it.
            Ok(false) if self.affinity => {}
            Ok(_) => self.wake_one_if_none_searching(),
            Err(queue) => {
                self.injector.push(queue);
                self.wake_one_if_none_searching();
            }
        }
    }

    /// The calling worker is about to block: if its deque holds queues, another worker is
    /// woken to take them (ground rules: affinity).
    fn share_before_blocking(&self, deque: &Worker<Arc<AgentQueue>>) {
        if !deque.is_empty() {
            self.wake_one_if_none_searching();
        }
    }

    /// A worker puts back a queue it paused or that was notified while running.
    pub(super) fn reschedule_local(&self, queue: Arc<AgentQueue>) {
        self.schedule(queue);
    }

    pub(super) fn wake_one_if_none_searching(&self) {
        fence(Ordering::SeqCst);
        if self.searching.load(Ordering::Relaxed) > 0
            || self.idle_count.load(Ordering::Relaxed) == 0
        {
            return;
        }
        let chosen = {
            let mut idle = self.idle.lock();
            let chosen = idle.pop();
            if chosen.is_some() {
                self.idle_count.fetch_sub(1, Ordering::Relaxed);
                // It searches from now on: other producers need not wake another one.
                self.searching.fetch_add(1, Ordering::SeqCst);
            }
            chosen
        };
        if let Some(index) = chosen {
            // Counted as searching from now on, so it must wake even if it is only about to
            // park (see `Parker::unpark_chosen`).
            self.parkers[index].unpark_chosen();
        }
    }

    /// Work for worker `index`: its own deque, then the injector, then the others' deques;
    /// every [`INJECTOR_INTERVAL`] activations the injector first.
    pub(super) fn find_work(&self, index: usize) -> Option<Arc<AgentQueue>> {
        let local = LOCAL.with_borrow(|l| {
            let l = l.as_ref()?;
            let activations = l.activations.get().wrapping_add(1);
            l.activations.set(activations);
            if activations % INJECTOR_INTERVAL == 0
                && let Steal::Success(q) = self.injector.steal()
            {
                return Some(q);
            }
            l.deque.pop()
        });
        if local.is_some() {
            return local;
        }
        loop {
            let steal = LOCAL.with_borrow(|l| match l {
                Some(l) => self.injector.steal_batch_and_pop(&l.deque),
                None => self.injector.steal(),
            });
            let steal = steal.or_else(|| self.steal_from_others(index));
            match steal {
                Steal::Success(q) => return Some(q),
                Steal::Empty => return None,
                Steal::Retry => continue,
            }
        }
    }

    fn steal_from_others(&self, index: usize) -> Steal<Arc<AgentQueue>> {
        let stealers = self
            .stealers
            .get()
            .expect("invariant: set before the workers run");
        let n = stealers.len();
        (1..n)
            .map(|k| &stealers[(index + k) % n])
            .map(Stealer::steal)
            .collect()
    }

    /// True if no queue is waiting anywhere (the last look before parking).
    fn nothing_ready(&self) -> bool {
        let stealers = self
            .stealers
            .get()
            .expect("invariant: set before the workers run");
        self.injector.is_empty() && stealers.iter().all(Stealer::is_empty)
    }

    pub(super) fn start_searching(&self) {
        self.searching.fetch_add(1, Ordering::SeqCst);
    }

    /// Returns true if this worker was the last one searching.
    pub(super) fn stop_searching(&self) -> bool {
        self.searching.fetch_sub(1, Ordering::SeqCst) == 1
    }

    /// More work is waiting than the running workers take (a reason to wake another one).
    pub(super) fn surplus(&self) -> bool {
        !self.injector.is_empty()
    }

    /// Parks worker `index` until woken. Returns true if a producer chose it (it then counts
    /// as searching), false if it woke up by itself (found work, spurious, or closing).
    pub(super) fn park(&self, index: usize) -> bool {
        {
            let mut idle = self.idle.lock();
            idle.push(index);
            self.idle_count.fetch_add(1, Ordering::SeqCst);
        }
        self.parkers[index].park(|| self.nothing_ready() && !self.is_closed());
        let mut idle = self.idle.lock();
        match idle.iter().position(|&i| i == index) {
            Some(pos) => {
                idle.swap_remove(pos);
                self.idle_count.fetch_sub(1, Ordering::Relaxed);
                false
            }
            None => true,
        }
    }

    /// Installs worker `index`'s deque in the calling thread.
    pub(super) fn enter(self: &Arc<Self>, index: usize, deque: Worker<Arc<AgentQueue>>) {
        // SAFETY: called once, on worker `index`'s own thread, before it parks.
        unsafe { self.parkers[index].register_consumer() };
        LOCAL.set(Some(Local {
            pool: Arc::clone(self),
            deque,
            activations: Cell::new(0),
            running: Cell::new(0),
        }));
    }

    /// The calling worker leaves the closed pool, draining what was scheduled in the race
    /// with closing (ground rules). Its own deque is empty: it left its loop when it found no
    /// work, and only it pushes there.
    pub(super) fn leave(&self) {
        LOCAL.set(None);
        fence(Ordering::SeqCst);
        let mut left = self.left.lock();
        self.drain_injector();
        *left += 1;
    }

    /// A producer scheduled a queue: if the pool closed and every worker has left, nobody else
    /// will run it (ground rules). Call after the wake-up's fence (`schedule`).
    pub(super) fn drained_if_abandoned(&self) {
        if !self.closed.load(Ordering::Relaxed) {
            return;
        }
        let left = self.left.lock();
        if *left == self.threads {
            self.drain_injector();
        }
    }

    /// Drains every queue in the injector, counting each message as its agent's (the caller
    /// holds `left`, so it alone takes queues from a closed pool).
    fn drain_injector(&self) {
        loop {
            match self.injector.steal() {
                Steal::Success(queue) => queue.drain_closed(self.slab.upgrade().as_deref()),
                Steal::Empty => break,
                Steal::Retry => {}
            }
        }
    }

    pub(super) fn count_handled(&self, index: usize, n: u64) {
        let c = &self.handled[index];
        c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }

    pub(super) fn handled(&self) -> u64 {
        self.handled.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// Ready queues waiting for a worker (not their demands).
    pub(super) fn ready_queues(&self) -> usize {
        let stealers = self
            .stealers
            .get()
            .map_or(0, |s| s.iter().map(Stealer::len).sum());
        self.injector.len() + stealers
    }
}
