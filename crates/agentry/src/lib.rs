//! Agentry core.
