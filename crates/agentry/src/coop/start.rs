//! The coop's side of its start (`agent/start.rs`, in the agents' layer, holds the start
//! itself and its ground rules): the deregistration listener that tells a waiting
//! registration that its failed coop is gone.

use super::DeregListener;
use crate::agent::start::CoopStart;
use std::sync::Arc;

impl CoopStart {
    /// The deregistration listener that tells a waiting registration that its failed coop is
    /// gone ([`coop_gone`](Self::coop_gone)); added only once the start failed (ground rules).
    pub(crate) fn gone_listener(start: &Arc<Self>) -> DeregListener {
        let start = Arc::clone(start);
        DeregListener::Callback(Box::new(move |_| start.coop_gone()))
    }
}
