//! The shared part of a thread pool: ready queues, the workers' `next` slots, work stealing,
//! and who sleeps.
//!
//! # How work moves between workers
//!
//! A ready agent queue is in exactly one of four places, and a worker looks for work in this
//! order: its own `next` slot, its own deque, the injector, the other workers' deques.
//!
//! | place | who puts a queue there | who takes it |
//! |---|---|---|
//! | a worker's `next` slot (one queue, not stealable) | that worker, when a handler it runs makes an idle queue ready (affinity on) | that worker, next |
//! | a worker's deque (FIFO, stealable) | that worker: a queue displaced from its slot, a queue whose budget ran out or that was notified while running, everything it schedules with affinity off | that worker, or a thief |
//! | the injector | any thread outside the pool (a timer, a plain thread, another dispatcher) | any worker |
//!
//! # Ground rules
//!
//! - Affinity (on by default, `ThreadPoolBuilder::affinity`), tokio's LIFO slot for agents:
//!   a handler that makes an idle queue of its own pool ready *claims* it for its worker
//!   (`RunState::claim`, the same one read-modify-write a producer makes anyway: the queue is
//!   held from then on, no ready queue involved) and puts it into the worker's `next` slot,
//!   which the worker runs as soon as its current queue yields and no other worker can
//!   steal. So agents that talk to each other (a ping-pong, a ring, a request chain) stay on
//!   one worker, warm in its cache, with no wake-up and no deque traffic per message. The
//!   queue the slot held is *released* (`RunState::pause`: scheduled) to the back of the
//!   deque, and only then is another worker woken: the worker holds more ready queues than
//!   the one it takes next, and a thief may take them.
//! - The slot is bounded: while the deque holds queues, a worker takes at most
//!   [`NEXT_IN_A_ROW`] queues in a row from its slot, then the oldest of its deque; every
//!   [`INJECTOR_INTERVAL`] activations it looks at the injector first. Two agents that keep
//!   each other busy through the slot starve neither the deque nor the injector.
//! - A queue put back after its budget ran out, or notified while it ran, goes to the back of
//!   the deque (never to the slot, so it yields to what waits); another worker is woken only
//!   if the deque or the slot already held a queue.
//! - A worker about to block (a request, a chain receive: [`before_blocking`]) releases its
//!   slot into its deque and wakes a worker for what the deque holds, so nothing waits behind
//!   a blocked thread for an agent that another worker could run.
//! - Idle workers steal: a searching worker takes a batch from the injector, then one queue
//!   from another worker's deque. A busy worker never steals.
//! - Wake-ups: after putting a queue into the injector or a deque, a producer issues a `SeqCst` fence and wakes one sleeping
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

use super::agent_queue::{AgentQueue, Claimed, PoolQueue};
use crate::slab::AgentSlab;
use crate::stats::EnvCounters;
use crate::sync::parker::Parker;
use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
use std::sync::{Arc, OnceLock, Weak};

thread_local! {
    /// The worker this thread is, while it runs a pool's worker loop: the `Local` its
    /// [`Enrolled`] owns; null on every other thread, and before and after the loop. A plain
    /// pointer in a `Cell` (no `RefCell`'s borrow count, no destructor to register): a send
    /// from a handler looks here once.
    static LOCAL: Cell<*const Local> = const { Cell::new(std::ptr::null()) };
}

/// Calls `f` with the calling thread's worker, if it is one.
#[inline(always)]
fn with_local<R>(f: impl FnOnce(Option<&Local>) -> R) -> R {
    // SAFETY: `LOCAL` is non-null only between `Pool::enter` and the drop of the `Enrolled` it
    // returned, on this thread, and that `Enrolled` owns the boxed `Local` it points to, so
    // the `Local` is alive for the call. It is only ever shared (every field that changes is
    // a `Cell`), and the reference cannot outlive `f`.
    f(unsafe { LOCAL.get().as_ref() })
}

/// The calling thread's enrolment as a worker of a pool ([`Pool::enter`]): it owns the
/// worker's `Local` and clears `LOCAL` when dropped (also when the worker unwinds). Not
/// `Send`: it is dropped on the thread whose `LOCAL` points into it.
pub(super) struct Enrolled {
    local: Box<Local>,
    _not_send: PhantomData<*const ()>,
}

impl Drop for Enrolled {
    fn drop(&mut self) {
        debug_assert!(std::ptr::eq(LOCAL.get(), &*self.local));
        LOCAL.set(std::ptr::null());
    }
}

/// A queue a worker found to run.
pub(super) enum Ready {
    /// From its `next` slot: the worker claimed it as it made it ready.
    Claimed(Claimed),
    /// From a ready queue: scheduled, the worker starts it.
    Scheduled(PoolQueue),
}

struct Local {
    /// The pool this thread works for.
    pool: Arc<Pool>,
    deque: Worker<PoolQueue>,
    /// The queue a handler on this worker made ready last: the worker runs it next, and no
    /// other worker can steal it (ground rules: affinity).
    next: Cell<Option<Claimed>>,
    /// Queues taken from `next` in a row while the deque held others (see [`NEXT_IN_A_ROW`]).
    next_streak: Cell<u32>,
    /// Queues this worker has taken so far (see [`INJECTOR_INTERVAL`]).
    activations: Cell<u32>,
    /// The address of the queue this worker is running, 0 between queues.
    running: Cell<usize>,
}

impl Local {
    fn next_is_empty(&self) -> bool {
        let next = self.next.take();
        let empty = next.is_none();
        self.next.set(next);
        empty
    }

    /// The queue in the `next` slot, unless [`NEXT_IN_A_ROW`] were taken from it in a row
    /// and the deque holds others (then the deque's oldest goes first, once).
    fn take_next(&self) -> Option<Claimed> {
        let streak = self.next_streak.get();
        let next = if streak < NEXT_IN_A_ROW || self.deque.is_empty() {
            self.next.take()
        } else {
            None
        };
        self.next_streak.set(if next.is_some() {
            streak.saturating_add(1)
        } else {
            0
        });
        next
    }
}

/// Called before the calling thread blocks waiting for another agent (a request, a chain
/// receive): on a pool worker, the queues its deque holds are handed to another worker
/// (ground rules: affinity). Does nothing on any other thread.
pub(crate) fn before_blocking() {
    with_local(|local| {
        if let Some(l) = local {
            l.pool.share_before_blocking(l);
        }
    });
}

/// While its deque holds other queues, a worker takes at most this many queues in a row from
/// its `next` slot before it takes the oldest one of its deque: two agents that keep each
/// other busy through the slot do not starve what waits behind them (tokio bounds its LIFO
/// slot the same way). With the deque empty the slot has no such bound.
const NEXT_IN_A_ROW: u32 = 16;

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
    injector: Injector<PoolQueue>,
    stealers: OnceLock<Box<[Stealer<PoolQueue>]>>,
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

    pub(super) fn set_stealers(&self, stealers: Box<[Stealer<PoolQueue>]>) {
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
        with_local(|l| {
            l.is_some_and(|l| {
                std::ptr::eq(&*l.pool, self)
                    && (self.threads == 1 || l.running.get() == queue as *const AgentQueue as usize)
            })
        })
    }

    /// Records which queue the calling worker runs (`None` between queues).
    pub(super) fn set_running(&self, queue: Option<&AgentQueue>) {
        let address = queue.map_or(0, |q| q as *const AgentQueue as usize);
        with_local(|l| {
            if let Some(l) = l {
                l.running.set(address);
            }
        });
    }

    /// A demand was pushed to `queue`: if that made it ready, it goes where a worker will find
    /// it, and a worker is woken if needed (ground rules: affinity). On a worker of this pool
    /// with affinity on, the worker claims it for its `next` slot, and the queue it displaces
    /// goes to its deque.
    #[inline]
    pub(super) fn notify(&self, queue: &PoolQueue) {
        let on_worker = self.affinity
            && with_local(|local| match local {
                Some(l) if std::ptr::eq(&*l.pool, self) => {
                    if let Some(claimed) = AgentQueue::claim(queue)
                        && let Some(displaced) = l.next.replace(Some(claimed))
                    {
                        l.deque.push(displaced.release());
                        self.wake_one_if_none_searching();
                    }
                    // Claimed, the worker runs it next, and cannot leave the pool with it in
                    // its slot: no other thread needs to see it.
                    true
                }
                _ => false,
            });
        if !on_worker && let Some(queue) = AgentQueue::notify(queue) {
            self.schedule(queue);
            self.drained_if_abandoned();
        }
    }

    /// Puts a queue made ready by a push into a ready queue: the deque of the calling worker
    /// (affinity off), or the injector.
    fn schedule(&self, queue: PoolQueue) {
        let scheduled = with_local(|local| match local {
            Some(l) if std::ptr::eq(&*l.pool, self) => {
                l.deque.push(queue);
                Ok(())
            }
            _ => Err(queue),
        });
        if let Err(queue) = scheduled {
            self.injector.push(queue);
        }
        self.wake_one_if_none_searching();
    }

    /// The calling worker is about to block: the queue in its `next` slot joins its deque,
    /// and if the deque holds queues another worker is woken to take them (ground rules:
    /// affinity).
    fn share_before_blocking(&self, local: &Local) {
        if let Some(next) = local.next.take() {
            local.deque.push(next.release());
        }
        if !local.deque.is_empty() {
            self.wake_one_if_none_searching();
        }
    }

    /// A worker puts back a queue it paused (budget used up) or that was notified while it
    /// ran: at the back of its deque, behind what waits there. It wakes another worker only
    /// if it now holds more than the one queue it takes next (ground rules: affinity).
    pub(super) fn reschedule_local(&self, queue: PoolQueue) {
        let scheduled = with_local(|local| match local {
            Some(l) if std::ptr::eq(&*l.pool, self) => {
                let alone = l.deque.is_empty() && l.next_is_empty();
                l.deque.push(queue);
                Ok(alone)
            }
            _ => Err(queue),
        });
        match scheduled {
            Ok(true) if self.affinity => {}
            Ok(_) => self.wake_one_if_none_searching(),
            Err(queue) => {
                self.injector.push(queue);
                self.wake_one_if_none_searching();
            }
        }
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

    /// Work for worker `index`: its `next` slot, its own deque, then the injector, then the
    /// others' deques; every [`INJECTOR_INTERVAL`] activations the injector first, and the
    /// deque before the slot after [`NEXT_IN_A_ROW`] queues from the slot.
    pub(super) fn find_work(&self, index: usize) -> Option<Ready> {
        with_local(|local| {
            if let Some(l) = local {
                let activations = l.activations.get().wrapping_add(1);
                l.activations.set(activations);
                if activations % INJECTOR_INTERVAL == 0
                    && let Steal::Success(q) = self.injector.steal()
                {
                    return Some(Ready::Scheduled(q));
                }
                let own = match l.take_next() {
                    Some(claimed) => Some(Ready::Claimed(claimed)),
                    None => l.deque.pop().map(Ready::Scheduled),
                };
                if own.is_some() {
                    return own;
                }
            }
            loop {
                let steal = match local {
                    Some(l) => self.injector.steal_batch_and_pop(&l.deque),
                    None => self.injector.steal(),
                };
                match steal.or_else(|| self.steal_from_others(index)) {
                    Steal::Success(q) => return Some(Ready::Scheduled(q)),
                    Steal::Empty => return None,
                    Steal::Retry => continue,
                }
            }
        })
    }

    fn steal_from_others(&self, index: usize) -> Steal<PoolQueue> {
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

    /// Makes the calling thread worker `index`, with its deque, until the returned
    /// [`Enrolled`] is given to [`leave`](Self::leave) (or dropped, if the worker unwinds).
    pub(super) fn enter(self: &Arc<Self>, index: usize, deque: Worker<PoolQueue>) -> Enrolled {
        assert!(
            LOCAL.get().is_null(),
            "invariant: a thread is the worker of one pool at a time"
        );
        // SAFETY: called once, on worker `index`'s own thread, before it parks.
        unsafe { self.parkers[index].register_consumer() };
        let local = Box::new(Local {
            pool: Arc::clone(self),
            deque,
            next: Cell::new(None),
            next_streak: Cell::new(0),
            activations: Cell::new(0),
            running: Cell::new(0),
        });
        LOCAL.set(&*local);
        Enrolled {
            local,
            _not_send: PhantomData,
        }
    }

    /// The calling worker leaves the closed pool, draining what was scheduled in the race
    /// with closing (ground rules). Its own deque and `next` slot are empty: it left its loop
    /// when it found no work, and only it pushes there.
    pub(super) fn leave(&self, enrolled: Enrolled) {
        drop(enrolled);
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
