//! dtnc-core: the channel emulator without I/O.
//!
//! Each direction of a point-to-point channel has its own link model (delay,
//! rate and queue, loss, bit errors, duplication, bounded reordering), a
//! timeline of setting changes and outage windows, and impairment rules keyed
//! on protocol fields. Every decision can be written as one line of the
//! decision log and replayed.
//!
//! Like quinn-proto, the core never touches a socket or a clock: the caller
//! passes each received frame and the current time in, and takes out what is
//! to be sent and when it next needs to be called:
//!
//! ```text
//! loop {
//!     for each frame read:   channel.handle_frame(now, arrival)
//!     while let Some(t) = channel.poll_transmit(now) { send t.data on t.dir's way out }
//!     sleep until channel.poll_timeout() or a frame arrives
//! }
//! ```
//!
//! Time only moves forward: every call takes an [`Instant`] at least as late
//! as the one before. The `dtnc-emu` binary (the `bridge` crate) is such a
//! loop over AF_PACKET sockets; the tests here drive it with made-up time.

// Test vectors and helpers shared between test modules are `pub` but not API.
#![cfg_attr(test, allow(missing_docs))]

pub mod channel;
pub mod classify;
pub mod config;
pub mod frame;
pub mod jsonw;
pub mod link;
pub mod log;
pub mod rng;
pub mod rules;
pub mod time;
pub mod timeline;

pub use channel::{Arrival, Channel, Options, Stats, Transmit};
pub use config::{Config, Dir};
pub use link::{Cause, Decision, Fate};
pub use time::Instant;
