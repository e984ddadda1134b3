//! dtnc-emu: dtnconform's channel emulator.
//!
//! A transparent userspace bridge between two veth interfaces of a middle
//! network namespace. Each direction has its own link model (delay, rate and
//! queue, loss, bit errors, duplication, bounded reordering), a timeline of
//! setting changes and outage windows, and impairment rules keyed on protocol
//! fields. Every decision is logged as a JSON line and can be replayed.

pub mod bridge;
pub mod classify;
pub mod config;
pub mod frame;
pub mod jsonw;
pub mod link;
pub mod log;
pub mod rng;
pub mod rules;
pub mod sys;
pub mod timeline;
