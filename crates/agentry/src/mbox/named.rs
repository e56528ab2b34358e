//! Named mboxes: one environment's names, each of a named multi mbox (made on first use by
//! [`EnvHandle::named_mbox`](crate::EnvHandle::named_mbox)) or of a published direct mbox
//! ([`EnvHandle::publish`](crate::EnvHandle::publish) / `lookup` / `unpublish`). The env
//! owns one `NamedMboxes` and its handle's methods are these; one mutex, never taken on a
//! send.

use super::{Mbox, MultiMbox};
use crate::error::NameError;
use crate::stats::EnvCounters;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// What a name stands for.
enum Named {
    Multi(MultiMbox),
    Direct(Mbox),
}

/// An environment's names (see the module docs).
#[derive(Default)]
pub(crate) struct NamedMboxes {
    names: Mutex<HashMap<String, Named>>,
}

impl NamedMboxes {
    /// The multi mbox named `name`, created on first use (counted in `counters`).
    pub(crate) fn multi(
        &self,
        name: &str,
        counters: &Arc<EnvCounters>,
    ) -> Result<MultiMbox, NameError> {
        if name.is_empty() {
            return Err(NameError::Empty);
        }
        let mut names = self.names.lock();
        match names.get(name) {
            Some(Named::Multi(m)) => Ok(m.clone()),
            Some(Named::Direct(_)) => Err(NameError::KindMismatch(name.to_owned())),
            None => {
                let m = MultiMbox::new(Some(name.into()), Arc::clone(counters));
                names.insert(name.to_owned(), Named::Multi(m.clone()));
                Ok(m)
            }
        }
    }

    /// Publishes `mbox` under `name`: the same mbox again is fine; another mbox under a taken
    /// name is [`NameError::Taken`], a name of a named multi mbox [`NameError::KindMismatch`].
    pub(crate) fn publish(&self, name: &str, mbox: &Mbox) -> Result<(), NameError> {
        if name.is_empty() {
            return Err(NameError::Empty);
        }
        let mut names = self.names.lock();
        match names.get(name) {
            Some(Named::Direct(m)) if m == mbox => Ok(()),
            Some(Named::Direct(_)) => Err(NameError::Taken(name.to_owned())),
            Some(Named::Multi(_)) => Err(NameError::KindMismatch(name.to_owned())),
            None => {
                names.insert(name.to_owned(), Named::Direct(mbox.clone()));
                Ok(())
            }
        }
    }

    /// The direct mbox published under `name`.
    pub(crate) fn lookup(&self, name: &str) -> Option<Mbox> {
        match self.names.lock().get(name) {
            Some(Named::Direct(m)) => Some(m.clone()),
            _ => None,
        }
    }

    /// Removes a name (of a published or a named multi mbox); true if it existed.
    pub(crate) fn unpublish(&self, name: &str) -> bool {
        self.names.lock().remove(name).is_some()
    }
}
