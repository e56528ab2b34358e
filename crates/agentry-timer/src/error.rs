//! Errors of this crate.

use std::error::Error;
use std::fmt;

/// A string named no [`EngineKind`](crate::EngineKind); returned by its `FromStr`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParseEngineKindError {
    /// The string that was given.
    pub input: String,
}

impl fmt::Display for ParseEngineKindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown timer engine `{}` (expected heap, wheel or list)",
            self.input
        )
    }
}

impl Error for ParseEngineKindError {}
