//! Helpers with which a benchmark checks its own result and fails loudly when it is wrong.

use std::fmt::Debug;

use crate::harness::BenchError;

/// `Ok` when `actual == expected`, otherwise a [`BenchError::Verify`] naming `what`.
///
/// # Errors
/// [`BenchError::Verify`] with both values when they differ.
///
/// ```
/// use agentry_bench::harness::verify_eq;
/// assert!(verify_eq("sum", 10, 4 + 6).is_ok());
/// assert!(verify_eq("sum", 10, 11).is_err());
/// ```
pub fn verify_eq<T: PartialEq + Debug>(
    what: &str,
    expected: T,
    actual: T,
) -> Result<(), BenchError> {
    if actual == expected {
        Ok(())
    } else {
        Err(BenchError::Verify(format!(
            "{what}: expected {expected:?}, got {actual:?}"
        )))
    }
}

/// `Ok` when `condition` holds, otherwise a [`BenchError::Verify`] with `message`.
///
/// # Errors
/// [`BenchError::Verify`] with `message` when `condition` is false.
///
/// ```
/// use agentry_bench::harness::ensure;
/// assert!(ensure(1 + 1 == 2, "arithmetic").is_ok());
/// ```
pub fn ensure(condition: bool, message: impl Into<String>) -> Result<(), BenchError> {
    if condition {
        Ok(())
    } else {
        Err(BenchError::Verify(message.into()))
    }
}
