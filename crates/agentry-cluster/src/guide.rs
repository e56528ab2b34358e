//! The guide chapter of this crate: a cluster of processes on NATS.
#![doc = include_str!("guide.md")]
