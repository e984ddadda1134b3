//! The channel: both directions' link models, the rules, and the scheduler
//! that holds frames until they are due, without any I/O.
//!
//! Call order (the same as quinn-proto's `Connection`):
//!
//! 1. [`Channel::handle_frame`] for each frame read, with the time it was
//!    handled (`now`) and the time it arrived (the kernel's stamp);
//! 2. [`Channel::poll_transmit`] until it returns `None`, sending each
//!    [`Transmit`] out of its direction's far interface (and handing the
//!    buffer back with [`Channel::recycle`], to spare an allocation);
//! 3. [`Channel::poll_timeout`]: wake up by then (or at the next frame) and
//!    start again.
//!
//! Time never moves backwards from one call to the next. Frames leave in
//! release order; a frame the link model decided to hold back for reordering
//! leaves after `hold` later frames of its direction have left (held frames
//! included), or `reorder.timeout_ms` after it was due, whichever is first.
//! The *direct path*: a frame due already, with nothing due before it and
//! nothing held, goes straight to the send queue (the common case of an
//! unimpaired link), without touching the timer heap.

use std::collections::{BinaryHeap, VecDeque};

use crate::classify::{Fields, Protocol};
use crate::config::{ActionKind, Config, Dir};
use crate::frame;
use crate::link::{Cause, Decision, Fate, Link};
use crate::log::{Record, ReplayLog};
use crate::rules::RuleSet;
use crate::time::Instant;
use crate::timeline::Timeline;

/// How the channel runs, beyond its configuration.
#[derive(Debug, Default)]
pub struct Options {
    /// Write the decision log (one line per frame, taken with
    /// [`Channel::take_log`]).
    pub log: bool,
    /// Apply these logged decisions frame by frame instead of drawing them.
    pub replay: Option<ReplayLog>,
    /// ns since the Unix epoch at [`Instant::ZERO`]: the log's times are on
    /// the epoch scale, comparable with packet captures.
    pub epoch_offset_ns: u64,
}

/// One frame read from a direction's near interface.
#[derive(Debug, Clone, Copy)]
pub struct Arrival<'a> {
    /// `Forward` when read on interface a (it leaves on b), `Return` when
    /// read on b.
    pub dir: Dir,
    /// When it arrived (the kernel's receive stamp), no later than the
    /// `now` it is handled at.
    pub at: Instant,
    /// The Ethernet frame, without FCS.
    pub data: &'a [u8],
    /// The frame was cut short on reception (larger than the receive slot).
    pub truncated: bool,
}

/// A frame to send out of `dir`'s far interface.
#[derive(Debug)]
pub struct Transmit {
    /// The frame's direction.
    pub dir: Dir,
    /// The Ethernet frame, impairments applied.
    pub data: Vec<u8>,
}

/// Per-direction counters, written to the stats file at the end.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Frames read.
    pub frames: u64,
    /// Bytes read (whole frames).
    pub bytes: u64,
    /// Frames that classified as a segment of a configured protocol.
    pub segments: u64,
    /// Frames forwarded (corrupted ones included).
    pub passed: u64,
    /// Frames forwarded with bits flipped.
    pub corrupted: u64,
    /// Frames sent twice.
    pub duplicated: u64,
    /// Frames held back for reordering.
    pub reordered: u64,
    /// Frames dropped, by [`Cause::idx`].
    pub dropped: [u64; Cause::ALL.len()],
    /// Frames the bridge failed to send (counted by the caller).
    pub send_failed: u64,
    /// Under replay: frames whose logged length or kind differed.
    pub replay_mismatch: u64,
}

impl Stats {
    /// Frames dropped for `cause`.
    pub fn dropped_by(&self, cause: Cause) -> u64 {
        self.dropped[cause.idx()]
    }

    /// The counters as a JSON object (`dropped` maps cause names to counts,
    /// causes that dropped nothing left out).
    pub fn json(&self) -> serde_json::Value {
        let dropped: serde_json::Map<String, serde_json::Value> = Cause::ALL
            .iter()
            .filter(|c| self.dropped_by(**c) > 0)
            .map(|c| (c.name().to_string(), self.dropped_by(*c).into()))
            .collect();
        serde_json::json!({
            "frames": self.frames, "bytes": self.bytes, "segments": self.segments,
            "passed": self.passed, "corrupted": self.corrupted,
            "duplicated": self.duplicated, "reordered": self.reordered,
            "dropped": dropped, "send_failed": self.send_failed,
            "replay_mismatch": self.replay_mismatch,
        })
    }
}

/// A frame in the timer heap.
struct Pending {
    release: u64,
    seq: u64,
    dir: Dir,
    hold: u32,
    hold_timeout: u64,
    data: Vec<u8>,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.release, self.seq) == (o.release, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    // BinaryHeap is a max-heap: the earliest release compares greatest.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.release, o.seq).cmp(&(self.release, self.seq))
    }
}

/// A frame due, held back until `remaining` more frames have left.
struct Held {
    seq: u64,
    remaining: u32,
    deadline: u64,
    data: Vec<u8>,
}

/// Buffers kept for reuse at most (frames in flight beyond this allocate).
const POOL_MAX: usize = 8192;

/// The emulated channel, both directions.
pub struct Channel {
    max_in_flight: u64,
    links: [Link; 2],
    rules: RuleSet,
    /// (UDP port, protocol): a handful at most, searched in order.
    ports: Vec<(u16, Protocol)>,
    heap: BinaryHeap<Pending>,
    held: [Vec<Held>; 2],
    ready: VecDeque<Transmit>,
    pool: Vec<Vec<u8>>,
    seq: u64,
    index: [u64; 2],
    segs: [u64; 2],
    stats: [Stats; 2],
    in_flight: u64,
    log: Option<String>,
    replay: Option<ReplayLog>,
    epoch_offset: u64,
}

impl Channel {
    /// A channel for a validated configuration.
    pub fn new(cfg: &Config, opts: Options) -> Channel {
        let links = [
            Link::new(
                Dir::Forward,
                cfg.seed,
                Timeline::new(&cfg.forward, cfg.time_scale),
            ),
            Link::new(
                Dir::Return,
                cfg.seed,
                Timeline::new(&cfg.return_, cfg.time_scale),
            ),
        ];
        let ports = cfg
            .protocols
            .iter()
            .filter_map(|p| Some((p.udp_port, Protocol::from_name(&p.protocol)?)))
            .collect();
        Channel {
            max_in_flight: cfg.max_in_flight_bytes,
            links,
            rules: RuleSet::new(&cfg.rules),
            ports,
            heap: BinaryHeap::new(),
            held: [Vec::new(), Vec::new()],
            ready: VecDeque::new(),
            pool: Vec::new(),
            seq: 0,
            index: [0; 2],
            segs: [0; 2],
            stats: [Stats::default(), Stats::default()],
            in_flight: 0,
            log: opts.log.then(|| String::with_capacity(1 << 20)),
            replay: opts.replay,
            epoch_offset: opts.epoch_offset_ns,
        }
    }

    fn protocol_of(&self, port: u16) -> Option<Protocol> {
        self.ports.iter().find(|(p, _)| *p == port).map(|(_, v)| *v)
    }

    fn buffer(&mut self, data: &[u8]) -> Vec<u8> {
        let mut b = self.pool.pop().unwrap_or_default();
        b.clear();
        b.extend_from_slice(data);
        b
    }

    /// Give a sent frame's buffer back for reuse.
    pub fn recycle(&mut self, buf: Vec<u8>) {
        if self.pool.len() < POOL_MAX {
            self.pool.push(buf);
        }
    }

    /// Decide the fate of one frame and schedule it. Returns the decision
    /// (also written to the log, if on).
    pub fn handle_frame(&mut self, now: Instant, a: Arrival<'_>) -> Fate {
        let now = now.as_nanos();
        let arrival = a.at.as_nanos().min(now);
        let d = a.dir;
        let di = d.idx();
        self.index[di] += 1;
        let index = self.index[di];
        let st = &mut self.stats[di];
        st.frames += 1;
        st.bytes += a.data.len() as u64;
        let lay = frame::layout(a.data);
        let mut seg: Option<(Protocol, Fields)> = None;
        if lay.kind == frame::Kind::Udp {
            let p = self
                .protocol_of(lay.dst_port)
                .or_else(|| self.protocol_of(lay.src_port));
            if let Some(p) = p {
                if let Some(fields) = p.classify(&a.data[lay.payload()..lay.end]) {
                    self.segs[di] += 1;
                    self.stats[di].segments += 1;
                    seg = Some((p, fields));
                }
            }
        }
        let logged = self.replay.as_ref().and_then(|r| r.get(d, index)).cloned();
        let mismatch = logged.as_ref().is_some_and(|l| {
            l.len != a.data.len() || (!l.kind.is_empty() && l.kind != lay.kind.name())
        });
        if mismatch {
            self.stats[di].replay_mismatch += 1;
        }
        let action = match (&seg, &logged) {
            (Some((p, fl)), None) => self.rules.decide(d, *p, fl),
            _ => None,
        };
        // An outage rule takes the whole link down, both directions, from
        // this segment's arrival on.
        if let Some(act) = action.as_ref().filter(|x| x.kind == ActionKind::Outage) {
            for l in self.links.iter_mut() {
                l.timeline.add_outage(arrival, arrival + act.delay_ns);
            }
        }
        // A frame that was cut short, or that would take the frames in
        // flight past the memory guard, never reaches the link model: it
        // draws no random numbers and occupies no transmitter time.
        let mut f = Vec::new();
        let dec: Decision = if a.truncated {
            Decision::dropped(Cause::Oversize, None)
        } else if self.in_flight + a.data.len() as u64 > self.max_in_flight {
            Decision::dropped(Cause::Memory, None)
        } else {
            f = self.buffer(a.data);
            self.links[di].decide(arrival, &mut f, &lay, action, logged.as_ref())
        };
        if let Some(out) = self.log.as_mut() {
            Record {
                t_ns: arrival + self.epoch_offset,
                dir: d,
                index,
                len: a.data.len(),
                kind: lay.kind.name(),
                segment: seg
                    .as_ref()
                    .map(|(p, fields)| (p.name(), self.segs[di], fields)),
                decision: &dec,
                epoch_offset: self.epoch_offset,
                mismatch,
            }
            .write(out);
        }
        let st = &mut self.stats[di];
        match dec.fate {
            Fate::Drop => {
                if let Some(c) = dec.cause {
                    st.dropped[c.idx()] += 1;
                }
                if f.capacity() > 0 {
                    self.recycle(f);
                }
                return Fate::Drop;
            }
            Fate::Corrupt => st.corrupted += 1,
            Fate::Pass => {}
        }
        st.passed += 1;
        if dec.hold > 0 {
            st.reordered += 1;
        }
        let timeout = (self.links[di].settings().reorder.timeout_ms * 1e6) as u64;
        if dec.copies > 1 {
            st.duplicated += 1;
            let copy = self.buffer(&f);
            self.push(d, dec.release_dup, 0, 0, copy);
        }
        if dec.hold == 0
            && dec.release <= now
            && self.held[di].is_empty()
            && self.heap.peek().is_none_or(|p| p.release > dec.release)
        {
            self.in_flight += f.len() as u64;
            self.emit(d, f);
        } else {
            self.push(d, dec.release, dec.hold, timeout, f);
        }
        dec.fate
    }

    fn push(&mut self, dir: Dir, release: u64, hold: u32, hold_timeout: u64, data: Vec<u8>) {
        self.seq += 1;
        self.in_flight += data.len() as u64;
        self.heap.push(Pending {
            release,
            seq: self.seq,
            dir,
            hold,
            hold_timeout,
            data,
        });
    }

    /// Queue a frame for sending. Every frame that leaves, held ones
    /// included, counts down the frames held behind it. Those that reach
    /// zero leave at once, the earliest-arrived first, each counting down
    /// the rest in turn: a held frame is never overtaken by more later
    /// frames than its hold.
    fn emit(&mut self, dir: Dir, data: Vec<u8>) {
        let di = dir.idx();
        self.leave(dir, data);
        while let Some(j) = self.held[di]
            .iter()
            .enumerate()
            .filter(|(_, h)| h.remaining == 0)
            .min_by_key(|(_, h)| h.seq)
            .map(|(j, _)| j)
        {
            let h = self.held[di].remove(j);
            self.leave(dir, h.data);
        }
    }

    /// Put a frame on the send queue and count down the held frames.
    fn leave(&mut self, dir: Dir, data: Vec<u8>) {
        self.in_flight -= data.len() as u64;
        self.ready.push_back(Transmit { dir, data });
        for h in &mut self.held[dir.idx()] {
            h.remaining = h.remaining.saturating_sub(1);
        }
    }

    /// Move every frame due by `now` to the send queue.
    fn release_due(&mut self, now: u64) {
        while self.heap.peek().is_some_and(|p| p.release <= now) {
            let p = self.heap.pop().expect("peeked");
            if p.hold > 0 {
                self.held[p.dir.idx()].push(Held {
                    seq: p.seq,
                    remaining: p.hold,
                    deadline: p.release.saturating_add(p.hold_timeout),
                    data: p.data,
                });
                continue;
            }
            self.emit(p.dir, p.data);
        }
        for d in [Dir::Forward, Dir::Return] {
            // held frames whose timeout passed leave without waiting longer
            while let Some(j) = self.held[d.idx()].iter().position(|h| h.deadline <= now) {
                let h = self.held[d.idx()].remove(j);
                self.emit(d, h.data);
            }
        }
    }

    /// The next frame to send by `now`, if any. Call until `None` after
    /// every batch of [`Channel::handle_frame`] calls and whenever
    /// [`Channel::poll_timeout`] has passed.
    #[must_use]
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if self.ready.is_empty() {
            self.release_due(now.as_nanos());
        }
        self.ready.pop_front()
    }

    /// When [`Channel::poll_transmit`] next has something to send without
    /// a new frame arriving: the earliest release or reordering deadline
    /// (`None`: nothing in flight). A frame must never leave before it.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.ready.is_empty() {
            return Some(Instant::ZERO);
        }
        let h = self.heap.peek().map(|p| p.release);
        let d = self.held.iter().flatten().map(|h| h.deadline).min();
        match (h, d) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .map(Instant::from_nanos)
    }

    /// Bytes of decision log waiting to be taken.
    pub fn log_len(&self) -> usize {
        self.log.as_ref().map_or(0, String::len)
    }

    /// The decision log lines written since the last call (whole lines),
    /// leaving `spare` (cleared) to write the next ones into.
    pub fn take_log(&mut self, mut spare: String) -> String {
        spare.clear();
        match self.log.as_mut() {
            Some(l) => std::mem::replace(l, spare),
            None => spare,
        }
    }

    /// Count `n` frames of `dir` the caller could not send.
    pub fn count_send_failures(&mut self, dir: Dir, n: u64) {
        self.stats[dir.idx()].send_failed += n;
    }

    /// One direction's counters.
    pub fn stats(&self, dir: Dir) -> &Stats {
        &self.stats[dir.idx()]
    }

    /// Frames still in the channel (delayed, held or waiting to be sent).
    pub fn in_flight_frames(&self) -> usize {
        self.heap.len() + self.held.iter().map(Vec::len).sum::<usize>() + self.ready.len()
    }

    /// Every counter, with each rule's matches and actions.
    pub fn stats_json(&self) -> serde_json::Value {
        serde_json::json!({
            "forward": self.stats[0].json(),
            "return": self.stats[1].json(),
            "rules": self.rules.rules.iter().map(|r| serde_json::json!({
                "index": r.index, "matched": r.seen, "acted": r.fired
            })).collect::<Vec<_>>(),
            "in_flight_at_exit": self.in_flight_frames(),
        })
    }
}

#[cfg(test)]
mod tests;
