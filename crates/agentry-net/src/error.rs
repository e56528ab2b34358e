//! Typed errors of the crate.

use std::io;
use thiserror::Error;

/// Why a listener, a connection attempt or a registration could not be set up (an io
/// dispatcher's own build fails with [`agentry::BuildError`], like every dispatcher's).
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum NetError {
    /// An operating-system call failed (bind, registration).
    #[error("io error: {0}")]
    Io(#[from] io::Error),
    /// A configuration value is out of range (the text says which).
    #[error("invalid configuration: {0}")]
    InvalidConfig(&'static str),
    /// The call must be made by an agent running on an io thread (bound to an
    /// [`IoDispatcher`](crate::IoDispatcher)).
    #[error("not called on an io thread")]
    NotOnIoThread,
    /// The key does not name a live registration of this io thread.
    #[error("unknown io key")]
    UnknownKey,
    /// A dispatcher could not be built (`?` on an [`IoDispatcher`](crate::IoDispatcher)'s
    /// build in a function that returns this error).
    #[error("could not build the dispatcher: {0}")]
    Build(#[from] agentry::BuildError),
    /// The listener's or connection's coop could not be registered.
    #[error("could not register the coop: {0}")]
    Register(#[from] agentry::RegisterError),
}

/// Why an outgoing connection could not be established ([`ConnectFailed`](crate::ConnectFailed)).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectError {
    /// The connection was not established within the configured timeout.
    #[error("connect timed out")]
    TimedOut,
    /// The peer refused the connection (nothing listens there).
    #[error("connection refused")]
    Refused,
    /// Another error of the connect call (its kind).
    #[error("connect failed: {0:?}")]
    Io(io::ErrorKind),
    /// The environment or the io dispatcher shut down before the connection was established.
    #[error("shut down while connecting")]
    Shutdown,
}

impl ConnectError {
    pub(crate) fn from_io(e: &io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::ConnectionRefused => ConnectError::Refused,
            io::ErrorKind::TimedOut => ConnectError::TimedOut,
            kind => ConnectError::Io(kind),
        }
    }
}
