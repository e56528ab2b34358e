//! Errors of building an exporter.

/// Why [`MetricsBuilder::build`](crate::MetricsBuilder::build) refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Two sources of one kind were given the same name: their series would collide.
    #[error("two {kind} sources are named {name:?}")]
    DuplicateName {
        /// `"io_dispatcher"`, `"listener"` or `"gateway"` (the label that names them).
        kind: &'static str,
        /// The name given twice.
        name: String,
    },
    /// A setting is out of its range (the message says which and why).
    #[error("invalid setting: {0}")]
    InvalidSetting(&'static str),
}
