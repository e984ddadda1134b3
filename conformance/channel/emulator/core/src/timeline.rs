//! A direction's timeline: setting changes at scenario times and outage
//! windows, with the scenario clock compressed by the factor k
//! (`time_scale`): scenario time t happens t / k seconds after the channel
//! comes up. Delay and rate are not scaled: they stay real time.

use crate::config::{DirectionConfig, LinkPatch, LinkSettings};

/// Setting changes and outage windows of one direction, on the real clock.
#[derive(Debug, Clone)]
pub struct Timeline {
    /// (real ns since start, patch), in time order.
    events: Vec<(u64, LinkPatch)>,
    next: usize,
    /// (start, end) real ns since start, sorted by start.
    outages: Vec<(u64, u64)>,
    settings: LinkSettings,
}

fn to_ns(seconds: f64, k: f64) -> u64 {
    (seconds / k * 1e9).round() as u64
}

impl Timeline {
    /// The timeline of a direction, scenario times divided by `time_scale`.
    pub fn new(dc: &DirectionConfig, time_scale: f64) -> Timeline {
        let events = dc
            .timeline
            .iter()
            .map(|e| (to_ns(e.t, time_scale), e.set.clone()))
            .collect();
        let mut outages: Vec<(u64, u64)> = dc
            .outages
            .iter()
            .map(|o| {
                let s = to_ns(o.start, time_scale);
                (s, s + to_ns(o.duration, time_scale).max(1))
            })
            .collect();
        outages.sort();
        Timeline {
            events,
            next: 0,
            outages,
            settings: dc.link.clone(),
        }
    }

    /// Apply every event due at or before `now` (ns since start; calls must
    /// not go back in time). Returns true when the settings changed.
    pub fn advance(&mut self, now: u64) -> bool {
        let mut changed = false;
        while let Some((t, patch)) = self.events.get(self.next) {
            if *t > now {
                break;
            }
            patch.apply(&mut self.settings);
            self.next += 1;
            changed = true;
        }
        changed
    }

    /// The settings in force.
    pub fn settings(&self) -> &LinkSettings {
        &self.settings
    }

    /// Add an outage window [start, end), e.g. one a rule opened when its
    /// segment arrived (ns since start; real time, not scaled).
    pub fn add_outage(&mut self, start: u64, end: u64) {
        self.outages.push((start, end.max(start + 1)));
        self.outages.sort();
    }

    /// Is the link down at `now`? Windows are half-open: [start, end).
    pub fn in_outage(&self, now: u64) -> bool {
        self.outages.iter().any(|&(s, e)| s <= now && now < e)
    }

    /// The next instant after `now` at which something scheduled happens
    /// (an event or an outage edge), for the event loop's timeout.
    pub fn next_change(&self, now: u64) -> Option<u64> {
        let ev = self.events.get(self.next).map(|(t, _)| *t);
        let edge = self
            .outages
            .iter()
            .flat_map(|&(s, e)| [s, e])
            .filter(|&t| t > now)
            .min();
        match (ev, edge) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Event, Outage};

    fn dc() -> DirectionConfig {
        DirectionConfig {
            link: LinkSettings {
                delay_ms: 10.0,
                ..Default::default()
            },
            timeline: vec![
                Event {
                    t: 2.0,
                    set: LinkPatch {
                        loss: Some(0.5),
                        ..Default::default()
                    },
                },
                Event {
                    t: 4.0,
                    set: LinkPatch {
                        delay_ms: Some(20.0),
                        ..Default::default()
                    },
                },
            ],
            outages: vec![Outage {
                start: 10.0,
                duration: 30.0,
            }],
        }
    }

    const S: u64 = 1_000_000_000;

    #[test]
    fn events_apply_in_order_at_their_time() {
        let mut t = Timeline::new(&dc(), 1.0);
        assert!(!t.advance(S));
        assert_eq!(t.settings().loss, 0.0);
        assert!(t.advance(2 * S));
        assert_eq!(t.settings().loss, 0.5);
        assert_eq!(t.settings().delay_ms, 10.0);
        assert!(t.advance(5 * S));
        assert_eq!(t.settings().delay_ms, 20.0);
        assert_eq!(t.settings().loss, 0.5, "earlier changes persist");
    }

    #[test]
    fn outage_window_is_half_open() {
        let t = Timeline::new(&dc(), 1.0);
        assert!(!t.in_outage(10 * S - 1));
        assert!(t.in_outage(10 * S));
        assert!(t.in_outage(40 * S - 1));
        assert!(!t.in_outage(40 * S));
    }

    #[test]
    fn time_scale_compresses_events_and_outages() {
        // k = 100: the 30 s outage starting at 10 s becomes 0.3 s at 0.1 s.
        let mut t = Timeline::new(&dc(), 100.0);
        assert!(t.in_outage(S / 10));
        assert!(t.in_outage(S / 10 + 299_999_999));
        assert!(!t.in_outage(S / 10 + 300_000_000));
        assert!(t.advance(20_000_000)); // 2 s / 100
        assert_eq!(t.settings().loss, 0.5);
        // the delay itself is not scaled
        t.advance(S);
        assert_eq!(t.settings().delay_ms, 20.0);
    }

    #[test]
    fn next_change_sees_events_and_edges() {
        let mut t = Timeline::new(&dc(), 1.0);
        assert_eq!(t.next_change(0), Some(2 * S));
        t.advance(4 * S);
        assert_eq!(t.next_change(4 * S), Some(10 * S));
        assert_eq!(t.next_change(10 * S), Some(40 * S));
        assert_eq!(t.next_change(40 * S), None);
    }
}
