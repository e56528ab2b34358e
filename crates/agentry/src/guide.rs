//! The guide: the model of Agentry taught in order, one chapter per module. Every snippet is
//! a doctest, so every snippet compiles and runs as shown.
//!
//! 1. [`agents`] — agents, messages, handlers, the environment, counters
//! 2. [`states`] — states, nested states, hooks, time limits
//! 3. [`mboxes`] — direct, multi and named mboxes, delivery filters, insend handlers, typed
//!    addresses
//! 4. [`coops`] — transactional registration, the coop tree, deregistration, panics
//! 5. [`dispatchers`] — which threads run which agents
//! 6. [`timers`] — delayed and periodic messages, cancellation, the manual clock
//! 7. [`request_reply`] — synchronous requests, deferred replies, typed errors
//! 8. [`overload`] — message limits and overload reactions
//! 9. [`testing`] — deterministic tests on virtual time, scenarios
//! 10. [`supervision`] — supervised coops, restart strategies, escalation, death watch
//! 11. [`observability`] — counters, message delivery tracing, `tracing` spans
//! 12. [`mchains`] — message chains: plain threads and agents, select, typed receive
//! 13. [`tcp_and_remote`] — TCP channels (`agentry-net`) and remote mboxes (`agentry-remote`)
//!
//! Async code — futures started from handlers, async request/reply and chains on tokio — is
//! the chapter of the `agentry-tokio` crate's guide (`cargo doc -p agentry-tokio --open`).
//! Processes as a cluster — membership, named agents, remote death watch and supervision
//! across nodes — is the chapter of the `agentry-cluster` crate's guide
//! (`cargo doc -p agentry-cluster --open`).
//!
//! The guarantees behind each chapter, each with the test that proves it, are listed in
//! `docs/SEMANTICS.md`; the runnable programs are in `examples/`.

#[doc = include_str!("guide/01_agents.md")]
pub mod agents {}

#[doc = include_str!("guide/02_states.md")]
pub mod states {}

#[doc = include_str!("guide/03_mboxes.md")]
pub mod mboxes {}

#[doc = include_str!("guide/04_coops.md")]
pub mod coops {}

#[doc = include_str!("guide/05_dispatchers.md")]
pub mod dispatchers {}

#[doc = include_str!("guide/06_timers.md")]
pub mod timers {}

#[doc = include_str!("guide/07_request_reply.md")]
pub mod request_reply {}

#[doc = include_str!("guide/08_overload.md")]
pub mod overload {}

#[doc = include_str!("guide/09_testing.md")]
pub mod testing {}

#[doc = include_str!("guide/10_supervision.md")]
pub mod supervision {}

#[doc = include_str!("guide/11_observability.md")]
pub mod observability {}

#[doc = include_str!("guide/12_mchains.md")]
pub mod mchains {}

#[doc = include_str!("guide/13_tcp_and_remote.md")]
pub mod tcp_and_remote {}
