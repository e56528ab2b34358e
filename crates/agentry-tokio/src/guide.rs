//! The guide chapter of this crate: agents in an async world.
#![doc = include_str!("guide.md")]
