use super::{admits, pack};

#[test]
fn a_lineage_admits_its_own_earlier_incarnations_only() {
    // An occupant that began at generation 7 and was restarted twice (now 11).
    let state = pack(11, 7);
    for g in [7, 9, 11] {
        assert!(admits(state, g), "incarnation {g} of the occupant");
    }
    for g in [1, 5, 13, 8] {
        assert!(!admits(state, g), "generation {g} is not the occupant's");
    }
    // A free slot (even) admits nothing; a fresh occupant only itself.
    assert!(!admits(pack(12, 7), 11));
    assert!(admits(pack(13, 13), 13) && !admits(pack(13, 13), 11));
    // Across the wrap of the 32-bit generation.
    let wrapped = pack(3, u32::MAX);
    assert!(admits(wrapped, u32::MAX) && admits(wrapped, 1) && admits(wrapped, 3));
    assert!(!admits(wrapped, u32::MAX - 2));
}

// The slab's `unsafe` paths with a stand-in body (also run under miri, see `scripts/test.sh`).

use super::segments::FIRST_SEGMENT;
use super::{AgentRef, AgentSlab, IncarnationCx};
use crate::ids::{CoopId, MboxId};
use crate::message::LimitSlot;
use crate::message::payload::{Lent, Payload};
use crate::slab::body::{AgentBody, Body, ControlFn, Exit, Taken, erase};
use crate::slab::occupants::Occupant;
use crate::stats::{AgentCounters, AgentStats};
use crate::sync::blocks::BlockBox;
use crate::timer::token::TimerToken;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A body that takes `u64` messages (any other type is unhandled) and counts its drops.
struct Probe {
    name: String,
    drops: Arc<AtomicUsize>,
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

impl AgentBody for Probe {
    fn on_start(&mut self) {}

    fn on_message(&mut self, _: MboxId, payload: Lent<'_>, _: LimitSlot) -> Taken {
        match payload.take().take::<u64>() {
            Ok(_) => Taken::Handled,
            Err(_) => Taken::Unhandled,
        }
    }

    fn on_timer_message(
        &mut self,
        source: MboxId,
        payload: Payload,
        limit: LimitSlot,
        _: Arc<TimerToken>,
    ) -> Taken {
        payload.lend(|p| self.on_message(source, p, limit))
    }

    fn discard(&mut self, _: MboxId, _: Payload, _: LimitSlot) {}

    fn on_finish(&mut self) -> Exit {
        unreachable!("the slab tests remove bodies without finishing them")
    }

    fn control_fn(&self) -> ControlFn {
        |_, _, _| unreachable!("the slab tests restart through `next_incarnation`")
    }

    fn state_name(&self) -> &str {
        &self.name
    }
}

fn probe(name: impl Into<String>, drops: &Arc<AtomicUsize>) -> Body {
    erase(BlockBox::new(Probe {
        name: name.into(),
        drops: Arc::clone(drops),
    }))
}

/// A stand-in for an agent's shared part: its counters, and how many messages were counted
/// against it as not delivered.
#[derive(Default)]
struct Shared {
    stats: AgentCounters,
    undelivered: AtomicUsize,
}

impl Occupant for Shared {
    fn stats(&self) -> &AgentCounters {
        &self.stats
    }

    fn agent_type(&self) -> &'static str {
        "probe"
    }

    fn count_dropped_on_shutdown(&self) {
        self.undelivered.fetch_add(1, Ordering::SeqCst);
    }

    fn count_not_running(&self) {
        self.undelivered.fetch_add(1, Ordering::SeqCst);
    }

    fn left(&self, _: CoopId) {
        unreachable!("the slab tests remove bodies without finishing them")
    }
}

fn shared() -> Arc<Shared> {
    Arc::new(Shared::default())
}

/// Inserts a probe named `name`.
fn insert(
    slab: &AgentSlab,
    shared: &Arc<Shared>,
    name: &str,
    drops: &Arc<AtomicUsize>,
) -> AgentRef {
    slab.insert(shared, probe(name.to_owned(), drops))
}

/// The slab as the worker of some agents sees it. Each test uses it only for agents whose
/// demands it runs on one thread (the `unsafe` contract of the slab's worker-side methods).
struct Worker<'a>(&'a AgentSlab);

impl Worker<'_> {
    /// The name of the body `r` reaches, if any.
    fn name(&self, r: AgentRef) -> Option<String> {
        // SAFETY: the calling thread is the agent's only worker (see the type's docs).
        unsafe { self.0.body_mut(r) }.map(|b| b.state_name().to_owned())
    }

    /// Runs a message demand as `disp/execute.rs` does: the body takes it, the slot counts it.
    fn deliver(&self, r: AgentRef, payload: Payload) -> Option<Taken> {
        // SAFETY: as in `name`.
        let body = unsafe { self.0.body_mut(r) }?;
        let taken = payload.lend(|p| body.on_message(MboxId::next(), p, LimitSlot::NONE));
        // SAFETY: as in `name`; the body's borrow has ended.
        unsafe { self.0.count(r, taken) };
        Some(taken)
    }

    fn count(&self, r: AgentRef, taken: Taken) {
        // SAFETY: as in `name`.
        unsafe { self.0.count(r, taken) }
    }

    fn remove(&self, r: AgentRef) -> Option<Body> {
        // SAFETY: as in `name`; no body reference is alive.
        unsafe { self.0.remove(r) }
    }

    fn take_body(&self, r: AgentRef) -> Option<Body> {
        // SAFETY: as in `remove`.
        unsafe { self.0.take_body(r) }
    }

    fn put_body(&self, r: AgentRef, body: Body) {
        // SAFETY: as in `remove`, after `take_body` for the same agent on this thread.
        unsafe { self.0.put_body(r, body) }
    }

    fn incarnation_cx(&self, r: AgentRef) -> IncarnationCx<'_> {
        // SAFETY: as in `name`; used while the test runs the agent's (control) demand.
        unsafe { IncarnationCx::new(self.0, r) }
    }
}

#[test]
fn a_body_is_reached_counted_looked_up_and_removed_through_its_reference() {
    let slab = AgentSlab::new::<Shared>();
    let worker = Worker(&slab);
    let drops = Arc::new(AtomicUsize::new(0));
    let shared = shared();
    let r = insert(&slab, &shared, "a", &drops);
    assert_eq!(slab.live(), 1);
    assert_eq!(r.id().slot(), 0);
    assert_eq!(worker.name(r).as_deref(), Some("a"));
    assert_eq!(worker.deliver(r, Payload::new(7u64)), Some(Taken::Handled));
    assert_eq!(
        worker.deliver(r, Payload::new("no")),
        Some(Taken::Unhandled)
    );
    worker.count(r, Taken::Deferred);
    assert_eq!(
        slab.live_handled(r),
        Some(1),
        "the slot counts what its agent handled, not what it deferred or had no handler for"
    );
    let looked_up = slab.lookup::<Shared>(r.id()).expect("live");
    assert!(Arc::ptr_eq(&looked_up, &shared));

    let body = worker.remove(r).expect("removed once");
    assert_eq!(drops.load(Ordering::SeqCst), 0, "handed out, not dropped");
    drop(body);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(AgentStats::read(&shared.stats).handled, 1);
    assert_eq!(
        AgentStats::read(&shared.stats).unhandled,
        0,
        "an unhandled message is the agent's to count (`agent/cell.rs`), not the slab's"
    );
    assert_eq!(worker.name(r), None);
    assert_eq!(worker.deliver(r, Payload::new(8u64)), None);
    assert!(worker.remove(r).is_none());
    assert!(slab.lookup::<Shared>(r.id()).is_none());
    assert_eq!(slab.live_handled(r), None);
    assert_eq!(slab.live(), 0);
}

#[test]
fn a_reused_slot_has_a_new_generation_and_stale_references_reach_nothing() {
    let slab = AgentSlab::new::<Shared>();
    let worker = Worker(&slab);
    let drops = Arc::new(AtomicUsize::new(0));
    let (first, second) = (shared(), shared());
    let old = insert(&slab, &first, "old", &drops);
    drop(worker.remove(old));
    let new = insert(&slab, &second, "new", &drops);
    assert_eq!(new.id().slot(), old.id().slot(), "the free slot is reused");
    assert_eq!(new.id().generation(), old.id().generation() + 2);
    assert_eq!(worker.name(old), None);
    assert!(worker.take_body(old).is_none());
    assert!(worker.remove(old).is_none());
    assert!(slab.lookup::<Shared>(old.id()).is_none());
    assert_eq!(worker.name(new).as_deref(), Some("new"));
    assert!(Arc::ptr_eq(
        &slab.lookup::<Shared>(new.id()).expect("new"),
        &second
    ));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    drop(slab);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        2,
        "the slab drops the bodies left in it"
    );
}

#[test]
fn agents_across_segments_keep_their_slots_and_the_slab_drops_every_body_once() {
    let slab = AgentSlab::new::<Shared>();
    let worker = Worker(&slab);
    let drops = Arc::new(AtomicUsize::new(0));
    let shared = shared();
    // Into the second segment, then free every third agent and fill the holes again.
    let n = FIRST_SEGMENT + 20;
    let mut refs: Vec<AgentRef> = (0..n)
        .map(|i| insert(&slab, &shared, &format!("g{i}"), &drops))
        .collect();
    assert_eq!(slab.live(), n);
    for r in refs.iter().step_by(3) {
        drop(worker.remove(*r).expect("live"));
        assert!(slab.lookup::<Shared>(r.id()).is_none());
    }
    let freed = n.div_ceil(3);
    assert_eq!(slab.live(), n - freed);
    for i in (0..n).step_by(3) {
        refs[i] = insert(&slab, &shared, &format!("h{i}"), &drops);
    }
    assert_eq!(slab.live(), n);
    for (i, r) in refs.iter().enumerate() {
        let prefix = if i % 3 == 0 { "h" } else { "g" };
        let name = worker.name(*r).expect("live");
        assert_eq!(name, format!("{prefix}{i}"));
        assert!(slab.lookup::<Shared>(r.id()).is_some());
    }
    // Slot pointers into the second segment stay valid while more agents are added.
    let late = *refs.last().expect("agents");
    for i in 0..5 {
        insert(&slab, &shared, &format!("m{i}"), &drops);
    }
    assert_eq!(
        worker.deliver(late, Payload::new(1u64)),
        Some(Taken::Handled)
    );
    assert_eq!(drops.load(Ordering::SeqCst), freed);
    drop(slab);
    assert_eq!(drops.load(Ordering::SeqCst), freed + n + 5);
}

#[test]
fn a_restarted_occupant_keeps_its_slot_and_admits_demands_of_its_earlier_incarnations() {
    let slab = AgentSlab::new::<Shared>();
    let worker = Worker(&slab);
    let drops = Arc::new(AtomicUsize::new(0));
    let shared = shared();
    let first = insert(&slab, &shared, "first", &drops);
    // A control demand: the body is taken out, replaced by its next incarnation, put back.
    let taken = worker.take_body(first).expect("occupied");
    assert_eq!(
        worker.name(first),
        None,
        "the slot is empty while controlled"
    );
    let mut cx = worker.incarnation_cx(first);
    let second = cx.next_incarnation();
    for t in [
        Taken::Handled,
        Taken::Handled,
        Taken::Deferred,
        Taken::Unhandled,
    ] {
        cx.count(t);
    }
    cx.publish();
    drop(taken);
    worker.put_body(second, probe("second", &drops));
    assert_eq!(second.id().slot(), first.id().slot());
    assert_eq!(second.id().generation(), first.id().generation() + 2);
    // A demand made for the first incarnation reaches the second one.
    assert_eq!(worker.name(first).as_deref(), Some("second"));
    assert_eq!(
        worker.deliver(first, Payload::new(1u64)),
        Some(Taken::Handled)
    );
    assert_eq!(slab.live_handled(first), Some(3));
    // An id names one incarnation: the old one is gone.
    assert!(slab.lookup::<Shared>(first.id()).is_none());
    assert!(slab.lookup::<Shared>(second.id()).is_some());
    // A finish demand made for the first incarnation removes the current one.
    drop(worker.remove(first).expect("removed"));
    assert_eq!(worker.name(second), None);
    assert_eq!(AgentStats::read(&shared.stats).handled, 3);
    // The next occupant's lineage begins after both: neither old reference reaches it.
    let next = insert(&slab, &shared, "next", &drops);
    assert_eq!(next.id().slot(), first.id().slot());
    assert_eq!(worker.name(first), None);
    assert_eq!(worker.name(second), None);
    assert!(worker.name(next).is_some());
    assert_eq!(drops.load(Ordering::SeqCst), 2);
}

#[test]
fn bodies_inserted_on_one_thread_run_on_their_workers_while_others_look_them_up() {
    const AGENTS: usize = if cfg!(miri) { 6 } else { 64 };
    const MESSAGES: u64 = if cfg!(miri) { 5 } else { 200 };
    let slab = Arc::new(AgentSlab::new::<Shared>());
    let drops = Arc::new(AtomicUsize::new(0));
    let shared = shared();
    let refs: Vec<AgentRef> = (0..AGENTS)
        .map(|i| insert(&slab, &shared, &format!("w{i}"), &drops))
        .collect();
    // Two workers, each running its half of the agents (as two dispatchers would).
    let workers: Vec<_> = refs
        .chunks(AGENTS / 2)
        .map(|mine| {
            let (slab, mine) = (Arc::clone(&slab), mine.to_vec());
            std::thread::spawn(move || {
                let worker = Worker(&slab);
                for n in 0..MESSAGES {
                    for &r in &mine {
                        assert_eq!(worker.deliver(r, Payload::new(n)), Some(Taken::Handled));
                    }
                }
                for &r in &mine {
                    drop(worker.remove(r).expect("live"));
                }
            })
        })
        .collect();
    // Meanwhile, on the test thread: lookups and counter reads, and new agents.
    for i in 0..2 {
        for &r in &refs {
            if let Some(handled) = slab.live_handled(r) {
                assert!(handled <= MESSAGES);
            }
            let _ = slab.lookup::<Shared>(r.id());
        }
        insert(&slab, &shared, &format!("x{i}"), &drops);
    }
    workers.into_iter().for_each(|w| w.join().expect("worker"));
    assert_eq!(slab.live(), 2);
    assert_eq!(drops.load(Ordering::SeqCst), AGENTS);
    // Every agent shares `shared`: the last one removed published its count.
    assert_eq!(AgentStats::read(&shared.stats).handled, MESSAGES);
}

#[test]
fn a_finished_agents_tombstone_outlives_its_slot_until_it_is_buried() {
    let slab = AgentSlab::new::<Shared>();
    let worker = Worker(&slab);
    let drops = Arc::new(AtomicUsize::new(0));
    let first = shared();
    let old = insert(&slab, &first, "old", &drops);
    drop(worker.remove(old));
    // The slot is free at once and taken by the next agent; the tombstone sits beside it.
    let second = shared();
    let new = insert(&slab, &second, "new", &drops);
    assert_eq!(new.id().slot(), old.id().slot());
    let found = slab
        .finished_agent(old)
        .expect("its mbox is held: counted as its own");
    assert!(std::ptr::addr_eq(Arc::as_ptr(&found), Arc::as_ptr(&first)));
    found.count_not_running();
    assert_eq!(first.undelivered.load(Ordering::SeqCst), 1);
    assert!(
        slab.finished_agent(new).is_none(),
        "a live agent has no tombstone"
    );
    // Once nobody holds the first agent's shared part, its tombstone no longer answers...
    drop((found, first));
    assert!(slab.finished_agent(old).is_none());
    // ...and burying it (what the shared part's drop does in an environment) removes it.
    slab.bury(old);
    drop(worker.remove(new));
    let third = slab
        .finished_agent(new)
        .expect("the second agent's tombstone");
    assert!(std::ptr::addr_eq(Arc::as_ptr(&third), Arc::as_ptr(&second)));
}
