//! Local routes of one subscription: message type → the closures that decode and deliver.

use super::Core;
use super::receipts::Inbox;
use crate::envelope::TypeTag;
use crate::error::DecodeError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

/// What a route gets: the decompressed payload and, for requests, where to answer.
#[derive(Debug)]
pub(crate) struct Inbound<'a> {
    pub(crate) plain: &'a [u8],
    pub(crate) reply: Option<&'a str>,
    pub(crate) corr: Option<u64>,
}

/// Decodes an inbound payload and delivers it locally.
pub(crate) type RouteFn =
    Arc<dyn Fn(&Arc<Core>, &Inbound<'_>) -> Result<(), DecodeError> + Send + Sync>;

type Map = HashMap<TypeTag, Arc<[(u64, RouteFn)]>>;

/// The routes of one transport subscription (a subject, optionally in a queue group).
/// Copy-on-write: delivery clones an `Arc` and runs the routes without holding a lock, so
/// a route's user code may subscribe or unsubscribe.
pub(crate) struct RouteTable {
    pub(crate) subject: String,
    pub(crate) group: Option<String>,
    /// Serves requests (answers failures to the reply subject).
    pub(crate) serving: bool,
    routes: RwLock<Arc<Map>>,
    /// The receipts of what this subscription received.
    inbox: Mutex<Inbox>,
}

impl RouteTable {
    pub(crate) fn new(subject: String, group: Option<String>, serving: bool) -> RouteTable {
        RouteTable {
            subject,
            group,
            serving,
            routes: RwLock::new(Arc::new(HashMap::new())),
            inbox: Mutex::new(Inbox::default()),
        }
    }

    pub(crate) fn inbox(&self) -> MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn lookup(&self, tag: &TypeTag) -> Option<Arc<[(u64, RouteFn)]>> {
        let map = Arc::clone(&self.routes.read().unwrap_or_else(PoisonError::into_inner));
        map.get(tag).cloned()
    }

    pub(crate) fn add(&self, tag: TypeTag, id: u64, f: RouteFn) {
        let mut g = self.routes.write().unwrap_or_else(PoisonError::into_inner);
        let mut map = (**g).clone();
        let mut list: Vec<(u64, RouteFn)> = map.get(&tag).map(|l| l.to_vec()).unwrap_or_default();
        list.push((id, f));
        map.insert(tag, list.into());
        *g = Arc::new(map);
    }

    /// Removes route `id`; returns true if the table is now empty.
    pub(crate) fn remove(&self, id: u64) -> bool {
        let mut g = self.routes.write().unwrap_or_else(PoisonError::into_inner);
        let mut map = (**g).clone();
        map.retain(|_, list| {
            let kept: Vec<(u64, RouteFn)> =
                list.iter().filter(|(i, _)| *i != id).cloned().collect();
            *list = kept.into();
            !list.is_empty()
        });
        let empty = map.is_empty();
        *g = Arc::new(map);
        empty
    }
}
