//! Reports a gateway publishes to an optional multi mbox
//! ([`GatewayBuilder::events`](crate::GatewayBuilder::events)): connection changes,
//! rejected input and lost messages — the dead-letter channel of the remote layer.

use crate::error::DecodeError;

/// Why an accepted outbound envelope was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LossReason {
    /// Evicted from the full outbound buffer by a newer one (policy `DropOldest`).
    Overflow,
    /// Taken from the buffer, but handing it to the transport failed.
    InFlight,
    /// Still buffered when the gateway closed.
    Closed,
    /// Sent (with receipts on), but no receiving gateway confirmed it within the receipt
    /// timeout of connected time, or before the gateway closed: nobody subscribed, the
    /// receivers were unreachable, or — the one pessimistic case — a receiving process died
    /// after delivering it and before confirming.
    Unconfirmed,
    /// Sent to a durable mbox, but JetStream did not confirm storing it (no PubAck) within
    /// the store timeout, or before the gateway closed. Pessimistic: the stream may hold it.
    NotStored,
}

/// Something that happened to a gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteEvent {
    /// The transport (re)connected.
    Connected,
    /// The transport lost its connection; sends are buffered until it is back.
    Disconnected,
    /// An inbound envelope was rejected.
    Rejected {
        /// Where it came in.
        subject: String,
        /// Why.
        error: DecodeError,
    },
    /// An outbound envelope was lost after its send had been accepted.
    Lost {
        /// Where it was going.
        subject: String,
        /// Its type name, if it had one.
        type_name: Option<String>,
        /// Why.
        reason: LossReason,
    },
}
