//! The per-direction link model. For each frame, at its arrival time, in
//! this order:
//!
//! 1. timeline events due by now are applied;
//! 2. a replayed decision, if any, stands in for steps 3-6;
//! 3. a field-keyed rule that acts on the segment (drop / corrupt / delay);
//! 4. an outage window drops everything;
//! 5. random impairments of IPv4 frames, drawn in a fixed order from the
//!    direction's own generator: loss, bit errors (BER over the UDP payload
//!    bits), a single "packet error" bit, duplication, reordering;
//! 6. the queue: a frame that would find more than `queue_bytes` waiting
//!    for serialization is dropped (tail drop);
//! 7. timing: serialization at `rate_bps` after the frames before it, then
//!    the propagation delay (plus a rule's extra delay).
//!
//! Non-IPv4 frames (ARP, IPv6) see only outages, rate and delay: losing the
//! neighbour protocol would measure ARP timers, not the transport.

use crate::config::{Checksum, Dir, LinkSettings};
use crate::frame::{self, Kind, Layout};
use crate::rng::Rng;
use crate::rules::Action;
use crate::timeline::Timeline;

/// What became of a frame (the decision log's `decision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Forwarded unchanged.
    Pass,
    /// Forwarded with bits flipped.
    Corrupt,
    /// Not forwarded.
    Drop,
}

impl Fate {
    /// The name written in the decision log.
    pub fn name(self) -> &'static str {
        match self {
            Fate::Pass => "pass",
            Fate::Corrupt => "corrupt",
            Fate::Drop => "drop",
        }
    }

    /// The fate of a log name.
    pub fn from_name(s: &str) -> Option<Fate> {
        Some(match s {
            "pass" => Fate::Pass,
            "corrupt" => Fate::Corrupt,
            "drop" => Fate::Drop,
            _ => return None,
        })
    }
}

/// Why a frame was dropped, corrupted or delayed (the decision log's
/// `cause`). A frame gets the first cause that applies, in the order of
/// the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cause {
    /// A field-keyed rule acted on it (drop, corrupt or extra delay).
    Rule,
    /// It arrived while its direction was in an outage window.
    Outage,
    /// Random loss.
    Loss,
    /// Bit errors at the link's bit error rate.
    Ber,
    /// The single bit error of `packet_error`.
    PacketError,
    /// The queue before the transmitter was full (tail drop).
    QueueFull,
    /// The frames in flight would have exceeded `max_in_flight_bytes`.
    Memory,
    /// The frame was larger than the bridge could receive whole.
    Oversize,
}

impl Cause {
    /// Every cause, in a fixed order (for per-cause counters).
    pub const ALL: [Cause; 8] = [
        Cause::Rule,
        Cause::Outage,
        Cause::Loss,
        Cause::Ber,
        Cause::PacketError,
        Cause::QueueFull,
        Cause::Memory,
        Cause::Oversize,
    ];

    /// The name written in the decision log and the stats file.
    pub fn name(self) -> &'static str {
        match self {
            Cause::Rule => "rule",
            Cause::Outage => "outage",
            Cause::Loss => "loss",
            Cause::Ber => "ber",
            Cause::PacketError => "packet_error",
            Cause::QueueFull => "queue",
            Cause::Memory => "memory",
            Cause::Oversize => "oversize",
        }
    }

    /// The cause of a log name.
    pub fn from_name(s: &str) -> Option<Cause> {
        Cause::ALL.into_iter().find(|c| c.name() == s)
    }

    /// Position in [`Cause::ALL`].
    pub fn idx(self) -> usize {
        self as usize
    }
}

/// A decision taken earlier, read back from a decision log (`--replay`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Logged {
    /// Frame length the log recorded.
    pub len: usize,
    /// Frame kind the log recorded (`udp`, `ipv4`, ...).
    pub kind: String,
    /// The frame was dropped.
    pub drop: bool,
    /// Why it was dropped or corrupted.
    pub cause: Option<Cause>,
    /// The rule that acted.
    pub rule: Option<usize>,
    /// Flipped bit positions.
    pub flipped: Vec<u32>,
    /// 2 when duplicated.
    pub copies: u8,
    /// Reordering hold.
    pub hold: u32,
    /// A rule's extra delay.
    pub extra_delay_ns: u64,
    /// The UDP checksum was recomputed after the bit errors.
    pub fixed: bool,
}

/// The link model's decision about one frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Pass, corrupt or drop.
    pub fate: Fate,
    /// Why a frame was dropped, corrupted or delayed by a rule.
    pub cause: Option<Cause>,
    /// The rule that acted, if any.
    pub rule: Option<usize>,
    /// Flipped bit positions, counted from the first bit of the frame.
    pub flipped: Vec<u32>,
    /// 2 when the frame is sent twice.
    pub copies: u8,
    /// Reordering: leave after this many later frames (0 = in order).
    pub hold: u32,
    /// A rule's extra delay, ns.
    pub extra_delay_ns: u64,
    /// ns since start: end of serialization.
    pub depart: u64,
    /// ns since start: arrival at the far side (when the frame leaves).
    pub release: u64,
    /// The release of the duplicate copy, if any.
    pub release_dup: u64,
    /// The UDP checksum was recomputed after the bit errors.
    pub fixed: bool,
    /// The decision came from a replayed log.
    pub replayed: bool,
}

impl Decision {
    /// A drop for `cause`.
    pub fn dropped(cause: Cause, rule: Option<usize>) -> Decision {
        Decision {
            fate: Fate::Drop,
            cause: Some(cause),
            rule,
            flipped: Vec::new(),
            copies: 0,
            hold: 0,
            extra_delay_ns: 0,
            depart: 0,
            release: 0,
            release_dup: 0,
            fixed: false,
            replayed: false,
        }
    }
}

/// One direction of the link: its generator, timeline and transmitter.
pub struct Link {
    /// The direction this link serves.
    pub dir: Dir,
    /// The direction's own generator.
    pub rng: Rng,
    /// Settings changes and outage windows.
    pub timeline: Timeline,
    /// ns since start at which the transmitter is free again.
    free_at: u64,
}

/// Serialization time of `bytes` at `rate` b/s, in ns (0 when unlimited).
pub fn serialization_ns(bytes: usize, rate: f64) -> u64 {
    if rate <= 0.0 {
        0
    } else {
        (bytes as f64 * 8.0 * 1e9 / rate).round() as u64
    }
}

/// Positions of bit errors among `nbits` bits at rate `ber`: independent
/// errors, drawn as geometric gaps between them (one draw per error, plus
/// one for the gap that runs past the end).
pub fn ber_positions(rng: &mut Rng, nbits: u64, ber: f64, out: &mut Vec<u32>) {
    if ber <= 0.0 || nbits == 0 {
        return;
    }
    let ln_q = (1.0 - ber).ln();
    let mut pos: u64 = 0;
    loop {
        // P(gap = g) = (1-p)^g p: the number of clean bits before an error.
        let gap = if ber >= 1.0 {
            0.0
        } else {
            (rng.unit_open0().ln() / ln_q).floor()
        };
        if !gap.is_finite() || gap >= (nbits - pos) as f64 {
            return;
        }
        pos += gap as u64;
        out.push(pos as u32);
        pos += 1;
        if pos >= nbits {
            return;
        }
    }
}

/// `n` distinct random bit positions among `nbits`.
fn distinct_positions(rng: &mut Rng, nbits: u64, n: u32, out: &mut Vec<u32>) {
    let n = u64::from(n).min(nbits);
    while (out.len() as u64) < n {
        let b = rng.below(nbits) as u32;
        if !out.contains(&b) {
            out.push(b);
        }
    }
    out.sort_unstable();
}

impl Link {
    /// A link for `dir`, its generator seeded from `seed`.
    pub fn new(dir: Dir, seed: u64, timeline: Timeline) -> Link {
        Link {
            dir,
            rng: Rng::new(seed, dir.idx() as u64),
            timeline,
            free_at: 0,
        }
    }

    /// The settings in force (after the timeline events applied so far).
    pub fn settings(&self) -> &LinkSettings {
        self.timeline.settings()
    }

    /// Decide the fate of one frame arriving at `now` (ns since start).
    /// Bit errors are applied to `f` in place.
    pub fn decide(
        &mut self,
        now: u64,
        f: &mut [u8],
        lay: &Layout,
        rule: Option<crate::rules::Action>,
        replay: Option<&Logged>,
    ) -> Decision {
        self.timeline.advance(now);
        // borrowed, not cloned: this runs for every frame
        let s = self.timeline.settings();
        let mut flips: Vec<u32> = Vec::new();
        let mut cause: Option<Cause> = None;
        let mut rule_no = None;
        let mut copies = 1u8;
        let mut hold = 0u32;
        let mut extra = 0u64;
        let mut checksum = s.checksum;
        let mut fixed = false;
        let (lo, hi) = lay.error_range();
        let nbits = ((hi - lo) * 8) as u64;
        let base_bit = (lo * 8) as u32;

        if let Some(l) = replay {
            if l.drop {
                let mut d = Decision::dropped(l.cause.unwrap_or(Cause::Rule), l.rule);
                d.replayed = true;
                return d;
            }
            flips = l.flipped.clone();
            cause = l.cause;
            rule_no = l.rule;
            copies = l.copies.max(1);
            hold = l.hold;
            extra = l.extra_delay_ns;
            // a corruption whose checksum was recomputed is reproduced by
            // recomputing again
            frame::flip(f, &flips);
            if l.fixed {
                frame::fix_udp_checksum(f, lay);
                fixed = true;
            }
        } else {
            if let Some(Action {
                rule,
                kind,
                bits,
                delay_ns,
                checksum: ck,
                tail_octets,
            }) = rule
            {
                rule_no = Some(rule);
                match kind {
                    crate::config::ActionKind::Drop => {
                        return Decision::dropped(Cause::Rule, Some(rule))
                    }
                    crate::config::ActionKind::Corrupt => {
                        // with tail_octets, only the payload's last octets
                        let tail = tail_octets.map_or(hi - lo, |n| (n as usize).min(hi - lo));
                        let start = ((hi - tail) * 8) as u32;
                        let mut rel = Vec::new();
                        distinct_positions(&mut self.rng, (tail * 8) as u64, bits, &mut rel);
                        flips.extend(rel.iter().map(|b| b + start));
                        cause = Some(Cause::Rule);
                        if let Some(c) = ck {
                            checksum = c;
                        }
                    }
                    crate::config::ActionKind::Delay => {
                        extra = delay_ns;
                        cause = Some(Cause::Rule);
                    }
                    crate::config::ActionKind::Duplicate => {
                        copies = 2;
                        cause = Some(Cause::Rule);
                    }
                    // the channel opened the outage window before this call
                    // (Channel::on_frame): the outage check below drops it
                    crate::config::ActionKind::Outage => {}
                }
            }
            if self.timeline.in_outage(now) {
                return Decision::dropped(Cause::Outage, rule_no);
            }
            if lay.kind != Kind::NonIp {
                if self.rng.chance(s.loss) {
                    return Decision::dropped(Cause::Loss, rule_no);
                }
                let before = flips.len();
                let mut rel = Vec::new();
                ber_positions(&mut self.rng, nbits, s.ber, &mut rel);
                if s.packet_error > 0.0 && self.rng.chance(s.packet_error) && nbits > 0 {
                    let b = self.rng.below(nbits) as u32;
                    if !rel.contains(&b) {
                        rel.push(b);
                    }
                    cause.get_or_insert(Cause::PacketError);
                }
                if !rel.is_empty() {
                    cause.get_or_insert(Cause::Ber);
                }
                flips.extend(rel.iter().map(|b| b + base_bit));
                flips[before..].sort_unstable();
                if self.rng.chance(s.duplicate) {
                    copies = 2;
                }
                if self.rng.chance(s.reorder.probability) {
                    hold = 1 + self.rng.below(u64::from(s.reorder.max_displacement)) as u32;
                }
            }
            if !flips.is_empty() {
                frame::flip(f, &flips);
                if checksum == Checksum::Recompute && lay.kind == Kind::Udp {
                    frame::fix_udp_checksum(f, lay);
                    fixed = true;
                }
            }
        }

        // Queue and timing (RFC-free: a FIFO transmitter at rate_bps).
        let ser = serialization_ns(f.len(), s.rate_bps);
        if s.rate_bps > 0.0 && replay.is_none() {
            let backlog_ns = self.free_at.saturating_sub(now);
            let backlog_bytes = (backlog_ns as f64 * s.rate_bps / 8e9) as u64;
            if backlog_bytes + f.len() as u64 > s.queue_bytes {
                return Decision::dropped(Cause::QueueFull, rule_no);
            }
        }
        let start = now.max(self.free_at);
        let depart = start + ser;
        self.free_at = depart + if copies > 1 { ser } else { 0 };
        let delay = (s.delay_ms * 1e6).round() as u64;
        let release = depart + delay + extra;
        let fate = if flips.is_empty() {
            Fate::Pass
        } else {
            Fate::Corrupt
        };
        Decision {
            fate,
            cause,
            rule: rule_no,
            flipped: flips,
            copies,
            hold,
            extra_delay_ns: extra,
            depart,
            release,
            release_dup: release + ser,
            fixed,
            replayed: replay.is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ActionKind, DirectionConfig, Event, LinkPatch, Outage};
    use crate::frame::tests::udp_frame;

    const MS: u64 = 1_000_000;

    fn link(s: LinkSettings) -> Link {
        link_with(DirectionConfig {
            link: s,
            ..Default::default()
        })
    }

    fn link_with(dc: DirectionConfig) -> Link {
        Link::new(Dir::Forward, 7, Timeline::new(&dc, 1.0))
    }

    fn send(l: &mut Link, now: u64, len: usize) -> Decision {
        let mut f = udp_frame(&vec![0u8; len - 42], 1, 2);
        let lay = frame::layout(&f);
        l.decide(now, &mut f, &lay, None, None)
    }

    #[test]
    fn delay_only() {
        let mut l = link(LinkSettings {
            delay_ms: 250.0,
            ..Default::default()
        });
        let d = send(&mut l, 5, 1066);
        assert_eq!(d.fate, Fate::Pass);
        assert_eq!(d.release, 5 + 250 * MS);
    }

    #[test]
    fn rate_serializes_back_to_back_frames() {
        // 1 Mb/s: a 1250-byte frame takes 10 ms on the wire.
        let mut l = link(LinkSettings {
            rate_bps: 1e6,
            delay_ms: 100.0,
            ..Default::default()
        });
        let a = send(&mut l, 0, 1250);
        let b = send(&mut l, 0, 1250);
        let c = send(&mut l, 50 * MS, 1250);
        assert_eq!(a.depart, 10 * MS);
        assert_eq!(b.depart, 20 * MS, "second frame waits for the first");
        assert_eq!(b.release, 120 * MS);
        assert_eq!(c.depart, 60 * MS, "an idle link sends at once");
    }

    #[test]
    fn queue_limit_drops_the_tail() {
        let mut l = link(LinkSettings {
            rate_bps: 1e6,
            queue_bytes: 3000,
            ..Default::default()
        });
        let got: Vec<Fate> = (0..5).map(|_| send(&mut l, 0, 1250).fate).collect();
        // backlog before each: 0, 1250, 2500 (+1250 > 3000 -> drop), ...
        assert_eq!(
            got,
            [Fate::Pass, Fate::Pass, Fate::Drop, Fate::Drop, Fate::Drop]
        );
        let later = send(&mut l, 20 * MS, 1250);
        assert_eq!(later.fate, Fate::Pass, "the queue drains");
    }

    #[test]
    fn loss_rate_is_statistically_right() {
        let mut l = link(LinkSettings {
            loss: 0.05,
            ..Default::default()
        });
        let n = 100_000;
        let lost = (0..n)
            .filter(|i| send(&mut l, *i, 100).fate == Fate::Drop)
            .count();
        // sd = sqrt(n p q) ~ 68.9; 5 sd
        assert!((lost as f64 - 5000.0).abs() < 345.0, "lost {lost}");
    }

    #[test]
    fn ber_flips_payload_bits_at_the_right_rate() {
        let ber = 1e-4;
        let mut l = link(LinkSettings {
            ber,
            ..Default::default()
        });
        let (mut flips, mut bits) = (0usize, 0u64);
        for i in 0..20_000 {
            let mut f = udp_frame(&[0u8; 1000], 1, 2);
            let lay = frame::layout(&f);
            let d = l.decide(i, &mut f, &lay, None, None);
            let lo = lay.payload() as u32 * 8;
            assert!(
                d.flipped.iter().all(|&b| b >= lo),
                "errors only in the payload"
            );
            let ones: u32 = f[lay.payload()..].iter().map(|b| b.count_ones()).sum();
            assert_eq!(
                ones as usize,
                d.flipped.len(),
                "every listed bit is flipped"
            );
            assert!(!frame::udp_checksum_ok(&f, &lay) || d.flipped.is_empty());
            flips += d.flipped.len();
            bits += 8000;
        }
        let expect = bits as f64 * ber; // 16000, sd ~126
        assert!(
            (flips as f64 - expect).abs() < 5.0 * 126.5,
            "flips {flips} expect {expect}"
        );
    }

    #[test]
    fn recompute_checksum_makes_corruption_visible() {
        let mut l = link(LinkSettings {
            packet_error: 1.0,
            checksum: Checksum::Recompute,
            ..Default::default()
        });
        let mut f = udp_frame(&[0u8; 200], 1, 2);
        let lay = frame::layout(&f);
        let d = l.decide(0, &mut f, &lay, None, None);
        assert_eq!(d.fate, Fate::Corrupt);
        assert_eq!(d.flipped.len(), 1);
        assert!(frame::udp_checksum_ok(&f, &lay));
    }

    #[test]
    fn outage_drops_everything_even_arp() {
        let dc = DirectionConfig {
            outages: vec![Outage {
                start: 1.0,
                duration: 2.0,
            }],
            ..Default::default()
        };
        let mut l = link_with(dc);
        let mut arp = vec![0u8; 42];
        arp[12] = 0x08;
        arp[13] = 0x06;
        let lay = frame::layout(&arp);
        assert_eq!(
            l.decide(1_500 * MS, &mut arp, &lay, None, None).cause,
            Some(Cause::Outage)
        );
        assert_eq!(
            l.decide(3_000 * MS, &mut arp, &lay, None, None).fate,
            Fate::Pass
        );
    }

    #[test]
    fn timeline_changes_the_delay_mid_run() {
        let dc = DirectionConfig {
            link: LinkSettings {
                delay_ms: 10.0,
                ..Default::default()
            },
            timeline: vec![Event {
                t: 1.0,
                set: LinkPatch {
                    delay_ms: Some(500.0),
                    ..Default::default()
                },
            }],
            outages: vec![],
        };
        let mut l = link_with(dc);
        assert_eq!(send(&mut l, 0, 100).release, 10 * MS);
        assert_eq!(send(&mut l, 1_000 * MS, 100).release, 1_500 * MS);
    }

    #[test]
    fn rule_actions() {
        let mut l = link(LinkSettings::default());
        let mut f = udp_frame(&[0u8; 100], 1, 2);
        let lay = frame::layout(&f);
        let act = |kind, bits, delay_ns| Action {
            rule: 3,
            kind,
            bits,
            delay_ns,
            checksum: None,
            tail_octets: None,
        };
        let d = l.decide(
            0,
            &mut f.clone(),
            &lay,
            Some(act(ActionKind::Drop, 1, 0)),
            None,
        );
        assert_eq!((d.fate, d.rule), (Fate::Drop, Some(3)));
        let d = l.decide(0, &mut f, &lay, Some(act(ActionKind::Corrupt, 5, 0)), None);
        assert_eq!(d.flipped.len(), 5);
        assert_eq!(d.fate, Fate::Corrupt);
        let mut g = udp_frame(&[0u8; 100], 1, 2);
        let d = l.decide(
            0,
            &mut g,
            &lay,
            Some(act(ActionKind::Delay, 1, 7 * MS)),
            None,
        );
        assert_eq!(d.release, 7 * MS);
        let mut h = udp_frame(&[0u8; 100], 1, 2);
        let d = l.decide(
            0,
            &mut h,
            &lay,
            Some(act(ActionKind::Duplicate, 1, 0)),
            None,
        );
        assert_eq!((d.fate, d.copies, d.rule), (Fate::Pass, 2, Some(3)));
    }

    #[test]
    fn corrupt_tail_flips_only_the_last_octets() {
        let mut l = link(LinkSettings::default());
        let lay = frame::layout(&udp_frame(&[0u8; 100], 1, 2));
        let (_, hi) = lay.error_range();
        for _ in 0..50 {
            let mut f = udp_frame(&[0u8; 100], 1, 2);
            let act = Action {
                rule: 0,
                kind: ActionKind::Corrupt,
                bits: 3,
                delay_ns: 0,
                checksum: None,
                tail_octets: Some(2),
            };
            let d = l.decide(0, &mut f, &lay, Some(act), None);
            assert_eq!(d.flipped.len(), 3);
            for b in &d.flipped {
                assert!(
                    (*b as usize) >= (hi - 2) * 8 && (*b as usize) < hi * 8,
                    "bit {b}"
                );
            }
        }
    }

    #[test]
    fn same_seed_same_decisions_and_replay_reproduces_them() {
        let s = LinkSettings {
            loss: 0.1,
            ber: 1e-4,
            duplicate: 0.05,
            ..Default::default()
        };
        let run = |replay: Option<&Vec<Logged>>| -> Vec<(Fate, Vec<u32>, u8)> {
            let mut l = link(s.clone());
            if replay.is_some() {
                // a different seed: the replayed log must win over the RNG
                l.rng = Rng::new(999, 0);
            }
            (0..2000usize)
                .map(|i| {
                    let mut f = udp_frame(&[0u8; 500], 1, 2);
                    let lay = frame::layout(&f);
                    let d = l.decide(i as u64, &mut f, &lay, None, replay.map(|r| &r[i]));
                    (d.fate, d.flipped, d.copies)
                })
                .collect()
        };
        let a = run(None);
        let b = run(None);
        assert_eq!(a, b);
        let logged: Vec<Logged> = a
            .iter()
            .map(|(v, fl, c)| Logged {
                drop: *v == Fate::Drop,
                flipped: fl.clone(),
                copies: *c,
                ..Default::default()
            })
            .collect();
        assert_eq!(run(Some(&logged)), a);
    }

    #[test]
    fn ber_positions_rate_for_high_ber() {
        let mut r = Rng::new(3, 0);
        let mut v = Vec::new();
        ber_positions(&mut r, 1_000_000, 0.01, &mut v);
        assert!((v.len() as f64 - 10_000.0).abs() < 500.0, "{}", v.len());
        assert!(v.windows(2).all(|w| w[0] < w[1]));
    }
}
