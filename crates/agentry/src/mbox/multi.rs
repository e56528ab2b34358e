//! Multi mboxes: publish/subscribe by message type.
//!
//! Subscriber lists are copy-on-write (`Arc<[Subscriber]>` per type): a send takes a short
//! read lock to clone the list's `Arc`, then delivers without holding any lock, so insend
//! handlers and filters may send freely (even to the same mbox).

use crate::agent::insend::InsendFn;
use crate::agent::shared::{AgentShared, Refused};
use crate::ids::MboxId;
use crate::message::payload::Payload;
use crate::stats::EnvCounters;
use crate::timer::token::TimerToken;
use parking_lot::RwLock;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A delivery filter: decides on the sender's thread whether a subscriber gets a message.
pub(crate) type FilterFn<T> = Box<dyn Fn(&T) -> bool + Send + Sync>;

/// Per-subscriber options (both type-erased; the concrete types are `FilterFn<T>` and
/// `InsendFn<Arc<T>>` for the subscribed `T`).
#[derive(Clone, Default)]
pub(crate) struct SubscriberOptions {
    pub(crate) filter: Option<Arc<dyn Any + Send + Sync>>,
    pub(crate) insend: Option<Arc<dyn Any + Send + Sync>>,
}

#[derive(Clone)]
struct Subscriber {
    agent: Arc<AgentShared>,
    options: SubscriberOptions,
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

    /// Number of agents subscribed to `T`.
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
            return;
        };
        let message = Arc::new(message);
        for s in subscribers.iter() {
            if let Some(filter) = &s.options.filter {
                let filter = filter
                    .downcast_ref::<FilterFn<T>>()
                    .expect("invariant: filters are stored under their message type");
                if !catch_filter(filter, &message, &s.agent) {
                    continue;
                }
            }
            if let Some(insend) = &s.options.insend {
                let insend = insend
                    .downcast_ref::<InsendFn<Arc<T>>>()
                    .expect("invariant: insend handlers are stored under their message type");
                match s.agent.live() {
                    Some(_) if timer.is_some_and(|t| !t.may_deliver()) => {
                        self.0
                            .counters
                            .timers_revoked
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    Some(b) => s.agent.run_insend(b, insend, Arc::clone(&message)),
                    None => s
                        .agent
                        .count_refused(Refused::Gone(Arc::clone(&message)), Payload::new),
                }
                continue;
            }
            if let Err(refused) =
                s.agent
                    .deliver(self.0.id, Arc::clone(&message), Payload::new, timer)
            {
                s.agent.count_refused(refused, Payload::new);
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
        updated.push(Subscriber { agent, options });
        *list = Arc::from(updated);
    }

    pub(crate) fn remove_subscriber(&self, type_id: TypeId, agent: MboxId) {
        let mut map = self.0.subscribers.write();
        let Some(list) = map.get_mut(&type_id) else {
            return;
        };
        let updated: Vec<Subscriber> = list
            .iter()
            .filter(|s| s.agent.mbox_id != agent)
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
fn catch_filter<T>(filter: &FilterFn<T>, message: &T, agent: &AgentShared) -> bool {
    match catch_unwind(AssertUnwindSafe(|| filter(message))) {
        Ok(pass) => {
            if !pass {
                agent.counters.filtered_out.fetch_add(1, Ordering::Relaxed);
            }
            pass
        }
        Err(_) => {
            agent.stats.panics.fetch_add(1, Ordering::Relaxed);
            agent.counters.panics.fetch_add(1, Ordering::Relaxed);
            tracing::error!(agent_type = agent.agent_type, "delivery filter panicked");
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
