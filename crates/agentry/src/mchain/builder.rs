//! `MchainBuilder`: chain settings.

use super::chain::Chain;
use super::{Mchain, Overflow};
use crate::error::MchainError;
use std::sync::Arc;

/// Settings of a new [`Mchain`].
///
/// ```
/// use agentry::mchain::{Mchain, Overflow};
///
/// let chain = Mchain::builder()
///     .name("replies")
///     .bounded(2, Overflow::RemoveOldest)
///     .build()
///     .expect("a capacity of 2 is valid");
/// for n in 0..3 {
///     chain.send(n);
/// }
/// assert_eq!(chain.len(), 2);
/// assert_eq!(chain.stats().dropped, 1, "0 made room for 2");
/// ```
#[derive(Debug, Default)]
pub struct MchainBuilder {
    name: Option<Box<str>>,
    bounded: Option<(usize, Overflow)>,
}

impl MchainBuilder {
    /// A name for diagnostics (`Debug`, tracing).
    pub fn name(&mut self, name: impl Into<Box<str>>) -> &mut Self {
        self.name = Some(name.into());
        self
    }

    /// At most `capacity` messages may be queued; a send that finds the chain full meets
    /// `overflow` (default: unbounded).
    pub fn bounded(&mut self, capacity: usize, overflow: Overflow) -> &mut Self {
        self.bounded = Some((capacity, overflow));
        self
    }

    /// Builds the chain; a capacity of 0 is [`MchainError::ZeroCapacity`].
    pub fn build(&mut self) -> Result<Mchain, MchainError> {
        let chain = match self.bounded {
            Some((0, _)) => return Err(MchainError::ZeroCapacity),
            Some((capacity, overflow)) => Chain::new(self.name.clone(), Some(capacity), overflow),
            None => Chain::new(self.name.clone(), None, Overflow::Fail),
        };
        Ok(Mchain(Arc::new(chain)))
    }
}
