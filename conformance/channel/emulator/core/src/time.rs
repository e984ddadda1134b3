//! The channel's clock, as the caller reads it.

/// A point in time: nanoseconds since the channel came up (the scenario
/// clock's zero). The core never reads a clock; the caller converts its own
/// monotonic readings and the kernel's receive timestamps to this scale.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

impl Instant {
    /// The moment the channel came up.
    pub const ZERO: Instant = Instant(0);

    /// `ns` nanoseconds after the channel came up.
    pub const fn from_nanos(ns: u64) -> Instant {
        Instant(ns)
    }

    /// Nanoseconds since the channel came up.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// This instant plus `ns` nanoseconds (saturating).
    pub const fn add_nanos(self, ns: u64) -> Instant {
        Instant(self.0.saturating_add(ns))
    }
}
