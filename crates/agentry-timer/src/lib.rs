//! Timer engines (placeholder until the timer helper lands its work).
