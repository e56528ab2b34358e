//! Remote agents (being built).
