//! Typed errors of the crate.

use std::io;
use thiserror::Error;

/// Why an io dispatcher, a listener, a connection attempt or a registration could not be set up.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum NetError {
    /// An operating-system call failed (bind, poll creation, registration).
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
    /// An io thread could not start its dispatcher.
    #[error("could not start the io dispatcher: {0}")]
    Build(#[from] agentry::BuildError),
    /// The listener's or connection's coop could not be registered.
    #[error("could not register the coop: {0}")]
    Register(#[from] agentry::RegisterError),
    /// An io thread exited before it reported that it was ready.
    #[error("an io thread exited during start-up")]
    ThreadLost,
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
