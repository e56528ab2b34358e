//! TCP channels for agents (being built).
