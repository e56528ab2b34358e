//! Multi mboxes: publish/subscribe by message type.
//!
//! Subscriber lists are copy-on-write (`Arc<[Subscriber]>` per type): a send takes a short
//! read lock to clone the list's `Arc`, then delivers without holding any lock, so insend
//! handlers and filters may send freely (even to the same mbox).
//!
//! A subscriber is an agent or a message chain ([`Mchain::subscribe`](crate::mchain::Mchain::subscribe)).
//! A chain is held weakly (once its last handle is gone nobody could receive) and never makes
//! the sender wait (see `mchain.rs`).

use crate::ids::MboxId;
use crate::mbox::direct::{AgentShared, Refused};
use crate::mbox::insend::InsendFn;
use crate::message::payload::Payload;
use crate::stats::EnvCounters;
use crate::timer::delivery::Delivery;
use crate::timer::token::TimerToken;
use crate::trace::{DropReason, Outcome, TraceRecord};
use parking_lot::RwLock;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

/// A delivery filter: decides on the sender's thread whether a subscriber gets a message.
pub(crate) type FilterFn<T> = Box<dyn Fn(&T) -> bool + Send + Sync>;

/// Per-subscriber options (both type-erased; the concrete types are `FilterFn<T>` and
/// `InsendFn<Arc<T>>` for the subscribed `T`).
#[derive(Clone, Default)]
pub(crate) struct SubscriberOptions {
    pub(crate) filter: Option<Arc<dyn Any + Send + Sync>>,
    pub(crate) insend: Option<Arc<dyn Any + Send + Sync>>,
}

/// A message chain subscribed to a multi mbox, as the mbox sees it (implemented by
/// `mchain/chain.rs`, so that this layer names no chain type): it takes each fanned-out copy
/// without waiting, counting a refusal itself.
pub(crate) trait ChainSubscriber: Send + Sync {
    fn push_fanned_out(&self, payload: Payload, timer: Option<Arc<TimerToken>>);
}

#[derive(Clone)]
enum Subscriber {
    Agent {
        agent: Arc<AgentShared>,
        options: SubscriberOptions,
    },
    Chain {
        chain: Weak<dyn ChainSubscriber>,
        id: MboxId,
    },
}

impl Subscriber {
    /// The subscriber's mbox (an agent's direct mbox, or the chain's id).
    fn id(&self) -> MboxId {
        match self {
            Subscriber::Agent { agent, .. } => agent.mbox_id,
            Subscriber::Chain { id, .. } => *id,
        }
    }
}

struct Inner {
    id: MboxId,
    name: Option<Box<str>>,
    counters: Arc<EnvCounters>,
    subscribers: RwLock<HashMap<TypeId, Arc<[Subscriber]>>>,
}

/// A multi (publish/subscribe) mbox. Create one with
/// [`EnvHandle::create_mbox`](crate::EnvHandle::create_mbox) or get a named one with
/// [`EnvHandle::named_mbox`](crate::EnvHandle::named_mbox).
#[derive(Clone)]
pub struct MultiMbox(Arc<Inner>);

impl MultiMbox {
    pub(crate) fn new(name: Option<Box<str>>, counters: Arc<EnvCounters>) -> Self {
        MultiMbox(Arc::new(Inner {
            id: MboxId::next(),
            name,
            counters,
            subscribers: RwLock::new(HashMap::new()),
        }))
    }

    /// The mbox's id.
    pub fn id(&self) -> MboxId {
        self.0.id
    }

    /// The mbox's name, if it is a named mbox.
    pub fn name(&self) -> Option<&str> {
        self.0.name.as_deref()
    }

    /// Number of subscribers (agents and chains) of `T`.
    pub fn subscriber_count<T: 'static>(&self) -> usize {
        self.0
            .subscribers
            .read()
            .get(&TypeId::of::<T>())
            .map_or(0, |s| s.len())
    }

    /// Delivers `message` to every agent subscribed to `T` whose filter accepts it. A message
    /// with no subscriber at all is counted in `EnvStats::no_subscribers`.
    pub fn send<T: Send + Sync + 'static>(&self, message: T) {
        self.fan_out(message, None);
    }

    /// Sends a timer's message (see `timer.rs`).
    pub(crate) fn send_timed<T: Send + Sync + 'static>(&self, message: T, token: &Arc<TimerToken>) {
        self.fan_out(message, Some(token));
    }

    fn fan_out<T: Send + Sync + 'static>(&self, message: T, timer: Option<&Arc<TimerToken>>) {
        let subscribers = self.0.subscribers.read().get(&TypeId::of::<T>()).cloned();
        let Some(subscribers) = subscribers else {
            self.0
                .counters
                .no_subscribers
                .fetch_add(1, Ordering::Relaxed);
            self.0.counters.trace(|| TraceRecord {
                agent: None,
                agent_type: None,
                mbox: Some(self.0.id),
                message: std::any::type_name::<T>(),
                message_type: TypeId::of::<T>(),
                outcome: Outcome::Dropped(DropReason::NoSubscribers),
            });
            return;
        };
        let message = Arc::new(message);
        for s in subscribers.iter() {
            let (agent, options) = match s {
                Subscriber::Agent { agent, options } => (agent, options),
                Subscriber::Chain { chain, .. } => {
                    self.push_to_chain(chain, &message, timer);
                    continue;
                }
            };
            if let Some(filter) = &options.filter {
                let filter = filter
                    .downcast_ref::<FilterFn<T>>()
                    .expect("invariant: filters are stored under their message type");
                if !catch_filter(filter, &message, agent, self.0.id) {
                    continue;
                }
            }
            if let Some(insend) = &options.insend {
                let insend = insend
                    .downcast_ref::<InsendFn<Arc<T>>>()
                    .expect("invariant: insend handlers are stored under their message type");
                match agent.live() {
                    // A timer's delivery lasts until the handler returns (`timer.rs`).
                    Some(b) => match Delivery::begin_timed(timer) {
                        Ok(_delivery) => agent.run_insend(b, insend, Arc::clone(&message)),
                        Err(_) => agent.revoked_insend::<Arc<T>>(self.0.id),
                    },
                    None => agent.count_refused(Refused::Gone(Arc::clone(&message)), Payload::new),
                }
                continue;
            }
            if let Err(refused) =
                agent.deliver(self.0.id, Arc::clone(&message), Payload::new, timer)
            {
                agent.count_refused(refused, Payload::new);
            }
        }
    }

    /// Queues one subscriber chain's copy (never waiting; a refusal is counted by the chain).
    fn push_to_chain<T: Send + Sync + 'static>(
        &self,
        chain: &Weak<dyn ChainSubscriber>,
        message: &Arc<T>,
        timer: Option<&Arc<TimerToken>>,
    ) {
        match chain.upgrade() {
            Some(chain) => chain.push_fanned_out(Payload::new(Arc::clone(message)), timer.cloned()),
            // Its last handle was dropped while this send was under way.
            None => {
                self.0.counters.dead_letters.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub(crate) fn add_subscriber(
        &self,
        type_id: TypeId,
        agent: Arc<AgentShared>,
        options: SubscriberOptions,
    ) {
        let mut map = self.0.subscribers.write();
        let list = map.entry(type_id).or_insert_with(|| Arc::from(Vec::new()));
        let mut updated: Vec<Subscriber> = list.iter().cloned().collect();
        updated.push(Subscriber::Agent { agent, options });
        *list = Arc::from(updated);
    }

    /// Adds a chain as a subscriber of `type_id` (see `Mchain::subscribe`).
    pub(crate) fn add_chain_subscriber(
        &self,
        type_id: TypeId,
        chain: Weak<dyn ChainSubscriber>,
        id: MboxId,
    ) {
        let mut map = self.0.subscribers.write();
        let list = map.entry(type_id).or_insert_with(|| Arc::from(Vec::new()));
        let mut updated: Vec<Subscriber> = list.iter().cloned().collect();
        updated.push(Subscriber::Chain { chain, id });
        *list = Arc::from(updated);
    }

    /// Removes the subscriber (agent or chain) whose mbox is `subscriber`.
    pub(crate) fn remove_subscriber(&self, type_id: TypeId, subscriber: MboxId) {
        let mut map = self.0.subscribers.write();
        let Some(list) = map.get_mut(&type_id) else {
            return;
        };
        let updated: Vec<Subscriber> = list
            .iter()
            .filter(|s| s.id() != subscriber)
            .cloned()
            .collect();
        if updated.is_empty() {
            map.remove(&type_id);
        } else {
            *list = Arc::from(updated);
        }
    }
}

/// A panicking filter counts as a panic of the subscriber and rejects the message.
fn catch_filter<T: 'static>(
    filter: &FilterFn<T>,
    message: &Arc<T>,
    agent: &AgentShared,
    source: MboxId,
) -> bool {
    match catch_unwind(AssertUnwindSafe(|| filter(message))) {
        Ok(pass) => {
            if !pass {
                agent
                    .counters()
                    .filtered_out
                    .fetch_add(1, Ordering::Relaxed);
                agent.trace_drop::<Arc<T>>(source, DropReason::FilteredOut);
            }
            pass
        }
        Err(_) => {
            agent.stats.rare().panics.fetch_add(1, Ordering::Relaxed);
            agent.counters().panics.fetch_add(1, Ordering::Relaxed);
            agent.trace_drop::<Arc<T>>(source, DropReason::FilterPanicked);
            tracing::error!(agent_type = agent.agent_type(), "delivery filter panicked");
            false
        }
    }
}

impl PartialEq for MultiMbox {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for MultiMbox {}

impl fmt::Debug for MultiMbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiMbox")
            .field("id", &self.0.id)
            .field("name", &self.0.name)
            .finish()
    }
}
