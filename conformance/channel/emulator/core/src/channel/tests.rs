//! The scheduler driven with made-up time: no sockets, no root.

use super::*;
use crate::config;
use crate::frame::tests::udp_frame;
use crate::log::read_replay;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn cfg(extra: serde_json::Value) -> Config {
    let mut v = serde_json::json!({
        "schema": config::SCHEMA,
        "interfaces": {"a": "am", "b": "bm"},
        "protocols": [{"protocol": "ltp", "udp_port": 1113}],
    });
    for (k, x) in extra.as_object().expect("an object") {
        v[k] = x.clone();
    }
    config::parse(&v.to_string()).expect("a valid config")
}

fn channel(extra: serde_json::Value) -> Channel {
    Channel::new(
        &cfg(extra),
        Options {
            log: true,
            ..Default::default()
        },
    )
}

/// A UDP frame (port 9000, never classified) whose payload starts with `seq`.
fn numbered(seq: u64, len: usize) -> Vec<u8> {
    let mut payload = vec![0u8; len - 42];
    payload[..8].copy_from_slice(&seq.to_be_bytes());
    udp_frame(&payload, 9000, 9000)
}

fn seq_of(f: &[u8]) -> u64 {
    u64::from_be_bytes(f[42..50].try_into().unwrap())
}

fn arrive(ch: &mut Channel, now: u64, dir: Dir, data: &[u8]) -> Fate {
    ch.handle_frame(
        Instant::from_nanos(now),
        Arrival {
            dir,
            at: Instant::from_nanos(now),
            data,
            truncated: false,
        },
    )
}

/// Everything `poll_transmit` hands out at `now`, recycling the buffers.
fn drain(ch: &mut Channel, now: u64) -> Vec<(Dir, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(t) = ch.poll_transmit(Instant::from_nanos(now)) {
        out.push((t.dir, t.data.clone()));
        ch.recycle(t.data);
    }
    out
}

/// Drive the channel like the bridge does: frames arrive at the given
/// times; in between, it wakes exactly at `poll_timeout`. Returns each
/// frame sent with the time it was handed out.
fn run(ch: &mut Channel, arrivals: &[(u64, Vec<u8>)]) -> Vec<(u64, Vec<u8>)> {
    let mut sent = Vec::new();
    let mut next = 0;
    let mut now = 0;
    loop {
        let timer = ch.poll_timeout().map(Instant::as_nanos);
        let arrival = arrivals.get(next).map(|(t, _)| *t);
        now = match (timer, arrival) {
            (None, None) => break,
            (Some(t), None) => t.max(now),
            (None, Some(a)) => a,
            (Some(t), Some(a)) => t.max(now).min(a),
        };
        while arrivals.get(next).is_some_and(|(t, _)| *t <= now) {
            arrive(ch, now, Dir::Forward, &arrivals[next].1);
            next += 1;
        }
        sent.extend(drain(ch, now).into_iter().map(|(_, f)| (now, f)));
    }
    sent
}

fn log_lines(ch: &mut Channel) -> Vec<serde_json::Value> {
    ch.take_log(String::new())
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect()
}

#[test]
fn reordering_never_displaces_a_frame_by_more_than_max_displacement() {
    let mut ch = channel(serde_json::json!({"seed": 11, "forward": {"link": {
        "reorder": {"probability": 0.3, "max_displacement": 3, "timeout_ms": 10_000}}}}));
    let n = 5000u64;
    let mut order = Vec::new();
    for i in 0..n {
        arrive(&mut ch, i * 1000, Dir::Forward, &numbered(i, 100));
        order.extend(
            drain(&mut ch, i * 1000)
                .into_iter()
                .map(|(_, f)| seq_of(&f)),
        );
    }
    // the last held frames leave at their timeout
    order.extend(drain(&mut ch, 20 * S).into_iter().map(|(_, f)| seq_of(&f)));
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "every frame once");
    let reordered = ch.stats(Dir::Forward).reordered;
    assert!((1300..1700).contains(&reordered), "{reordered} held of {n}");
    // how many later frames left before each one
    let displacement: Vec<usize> = order
        .iter()
        .enumerate()
        .map(|(pos, &s)| order[..pos].iter().filter(|&&o| o > s).count())
        .collect();
    let worst = *displacement.iter().max().unwrap();
    assert_eq!(
        worst, 3,
        "bounded by max_displacement, and the bound is reached"
    );
    assert!(displacement.iter().filter(|&&d| d > 0).count() as u64 >= reordered / 2);
}

#[test]
fn a_held_frame_leaves_at_its_timeout_when_no_later_frame_comes() {
    let mut ch = channel(serde_json::json!({"seed": 1, "forward": {"link": {
        "reorder": {"probability": 1.0, "max_displacement": 5, "timeout_ms": 40}}}}));
    arrive(&mut ch, 0, Dir::Forward, &numbered(0, 100));
    assert!(drain(&mut ch, 0).is_empty(), "held");
    assert_eq!(ch.poll_timeout(), Some(Instant::from_nanos(40 * MS)));
    assert!(
        drain(&mut ch, 40 * MS - 1).is_empty(),
        "not before its timeout"
    );
    assert_eq!(drain(&mut ch, 40 * MS).len(), 1);
    assert_eq!(ch.poll_timeout(), None);
}

#[test]
fn duplicates_are_sent_twice_back_to_back_at_the_set_rate() {
    let mut ch = channel(serde_json::json!({"seed": 5, "forward": {"link": {"duplicate": 0.1}}}));
    let n = 20_000u64;
    let mut sent = Vec::new();
    for i in 0..n {
        arrive(&mut ch, i * 1000, Dir::Forward, &numbered(i, 200));
        sent.extend(drain(&mut ch, i * 1000).into_iter().map(|(_, f)| f));
    }
    let dup = ch.stats(Dir::Forward).duplicated;
    assert_eq!(sent.len() as u64, n + dup);
    // binomial sd = sqrt(n p q) ~ 42; 5 sd
    assert!((dup as f64 - 2000.0).abs() < 212.0, "{dup}");
    let twice: Vec<u64> = sent
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| seq_of(&w[0]))
        .collect();
    assert_eq!(twice.len() as u64, dup, "each copy right after its twin");
    let seqs: Vec<u64> = sent.iter().map(|f| seq_of(f)).collect();
    assert!(seqs.windows(2).all(|w| w[0] <= w[1]), "in order otherwise");
    let logged = log_lines(&mut ch);
    assert_eq!(
        logged.iter().filter(|r| r["copies"] == 2).count() as u64,
        dup
    );
}

#[test]
fn an_unimpaired_frame_takes_the_direct_path() {
    let mut ch = channel(serde_json::json!({}));
    let f = numbered(7, 1066);
    assert_eq!(arrive(&mut ch, 123, Dir::Return, &f), Fate::Pass);
    assert!(ch.heap.is_empty(), "never in the timer heap");
    assert_eq!(ch.poll_timeout(), Some(Instant::ZERO), "due at once");
    let t = ch
        .poll_transmit(Instant::from_nanos(123))
        .expect("sent at once");
    assert_eq!(
        (t.dir, &t.data),
        (Dir::Return, &f),
        "unchanged, the way it came"
    );
    assert!(ch.poll_transmit(Instant::from_nanos(123)).is_none());
    assert_eq!(ch.poll_timeout(), None);
    assert_eq!(ch.in_flight, 0);
    let rec = &log_lines(&mut ch)[0];
    assert_eq!(rec["decision"], "pass");
    assert_eq!(rec["release_ns"], 123);
}

#[test]
fn a_frame_due_now_does_not_overtake_one_due_earlier_but_not_yet_sent() {
    // 1 ms of delay until t = 1.1 ms, then none: the second frame, read at
    // 1.2 ms before the first (due at 1 ms) was handed out, is due at once
    // but must not take the direct path past it.
    let mut ch = channel(serde_json::json!({"forward": {"link": {"delay_ms": 1.0},
        "timeline": [{"t": 0.0011, "set": {"delay_ms": 0}}]}}));
    arrive(&mut ch, 0, Dir::Forward, &numbered(0, 100));
    arrive(&mut ch, 1_200_000, Dir::Forward, &numbered(1, 100));
    assert_eq!(ch.heap.len(), 2, "the second went through the heap");
    let out: Vec<u64> = drain(&mut ch, 1_200_000)
        .iter()
        .map(|(_, f)| seq_of(f))
        .collect();
    assert_eq!(out, [0, 1]);
}

#[test]
fn the_queue_drops_the_tail_at_its_limit_and_drains_at_the_rate() {
    // 1 Mb/s: a 1250-byte frame takes 10 ms; 3000 bytes of queue
    let mut ch = channel(serde_json::json!({"forward": {"link": {
        "rate_bps": 1e6, "queue_bytes": 3000}}}));
    let fates: Vec<Fate> = (0..5)
        .map(|i| arrive(&mut ch, 0, Dir::Forward, &numbered(i, 1250)))
        .collect();
    // backlog before each: 0, 1250, 2500 (+ 1250 > 3000: dropped), ...
    use Fate::{Drop, Pass};
    assert_eq!(fates, [Pass, Pass, Drop, Drop, Drop]);
    assert_eq!(ch.stats(Dir::Forward).dropped_by(Cause::QueueFull), 3);
    assert_eq!(ch.poll_timeout(), Some(Instant::from_nanos(10 * MS)));
    assert!(drain(&mut ch, 10 * MS - 1).is_empty());
    assert_eq!(drain(&mut ch, 10 * MS).len(), 1);
    assert_eq!(ch.poll_timeout(), Some(Instant::from_nanos(20 * MS)));
    assert_eq!(drain(&mut ch, 20 * MS).len(), 1);
    // drained: room again
    assert_eq!(
        arrive(&mut ch, 20 * MS, Dir::Forward, &numbered(5, 1250)),
        Pass
    );
    let causes: Vec<serde_json::Value> = log_lines(&mut ch)
        .into_iter()
        .map(|r| r["cause"].clone())
        .collect();
    assert_eq!(causes[2], "queue");
    assert_eq!(causes[0], serde_json::Value::Null);
}

#[test]
fn an_outage_from_t0_drops_everything_until_it_ends() {
    let mut ch = channel(serde_json::json!({
        "forward": {"outages": [{"start": 0, "duration": 2}]}}));
    let mut arp = vec![0u8; 42];
    arp[12] = 0x08;
    arp[13] = 0x06;
    for t in [0, S, 2 * S - 1] {
        assert_eq!(
            arrive(&mut ch, t, Dir::Forward, &numbered(t, 100)),
            Fate::Drop
        );
        assert_eq!(
            arrive(&mut ch, t, Dir::Forward, &arp),
            Fate::Drop,
            "ARP too"
        );
    }
    assert_eq!(
        arrive(&mut ch, 2 * S - 1, Dir::Return, &numbered(9, 100)),
        Fate::Pass,
        "one way only"
    );
    assert_eq!(
        arrive(&mut ch, 2 * S, Dir::Forward, &numbered(2, 100)),
        Fate::Pass
    );
    assert_eq!(ch.stats(Dir::Forward).dropped_by(Cause::Outage), 6);
    assert!(log_lines(&mut ch)
        .iter()
        .filter(|r| r["decision"] == "drop")
        .all(|r| r["cause"] == "outage" && r.get("release_ns").is_none()));
}

#[test]
fn time_scale_compresses_outages_and_events_but_not_delay() {
    // scenario time: an outage from 4 s for 8 s, the delay set to 100 ms at
    // 10 s; k = 10: real 0.4 s .. 1.2 s, and 1 s; the delay stays 100 ms
    let mut ch = channel(serde_json::json!({"time_scale": 10, "forward": {
        "link": {"delay_ms": 20},
        "outages": [{"start": 4, "duration": 8}],
        "timeline": [{"t": 10, "set": {"delay_ms": 100}}]}}));
    let mut dropped = Vec::new();
    for i in 0..150u64 {
        let t = i * 10 * MS;
        if arrive(&mut ch, t, Dir::Forward, &numbered(i, 100)) == Fate::Drop {
            dropped.push(t);
        }
    }
    assert_eq!(dropped.first(), Some(&(400 * MS)));
    assert_eq!(dropped.last(), Some(&(1190 * MS)));
    assert_eq!(dropped.len(), 80);
    let release: Vec<(u64, u64)> = log_lines(&mut ch)
        .iter()
        .filter_map(|r| Some((r["t_ns"].as_u64()?, r["release_ns"].as_u64()?)))
        .collect();
    assert!(release
        .iter()
        .all(|&(t, r)| r - t == if t < S { 20 * MS } else { 100 * MS }));
}

#[test]
fn delay_and_serialization_are_never_early_and_the_timer_is_exact() {
    // 250 ms, 10 Mb/s, frames at irregular times (some back to back)
    let mut ch = channel(serde_json::json!({"forward": {"link": {
        "delay_ms": 250, "rate_bps": 1e7}}}));
    let mut rng = crate::rng::Rng::new(3, 0);
    let mut t = 0;
    let arrivals: Vec<(u64, Vec<u8>)> = (0..3000)
        .map(|i| {
            t += rng.below(2 * MS);
            (t, numbered(i, 64 + rng.below(1400) as usize))
        })
        .collect();
    let sent = run(&mut ch, &arrivals);
    assert_eq!(sent.len(), arrivals.len());
    let mut free_at = 0;
    for ((at, f), (out_at, g)) in arrivals.iter().zip(&sent) {
        assert_eq!(f, g, "in order, unchanged");
        // the FIFO transmitter: starts when free, takes len * 8 / rate
        let depart = (*at).max(free_at) + (f.len() as u64 * 8 * 100);
        free_at = depart;
        assert_eq!(
            *out_at,
            depart + 250 * MS,
            "frame {} left at its due time",
            seq_of(f)
        );
    }
}

#[test]
fn same_seed_same_decisions_and_a_replayed_log_overrides_the_seed() {
    let link = serde_json::json!({"link": {"loss": 0.05, "ber": 1e-4, "duplicate": 0.02,
        "checksum": "recompute", "reorder": {"probability": 0.02}}});
    let arrivals: Vec<(u64, Vec<u8>)> = (0..4000).map(|i| (i * 50_000, numbered(i, 600))).collect();
    let once = |seed: u64, replay: Option<ReplayLog>| {
        let mut ch = Channel::new(
            &cfg(serde_json::json!({"seed": seed, "forward": link})),
            Options {
                log: true,
                replay,
                epoch_offset_ns: 0,
            },
        );
        let sent = run(&mut ch, &arrivals);
        (sent, ch.take_log(String::new()))
    };
    let (a, log_a) = once(77, None);
    let (b, log_b) = once(77, None);
    assert_eq!(a, b, "same frames at the same times");
    assert_eq!(log_a, log_b, "same decisions");
    assert!(log_a.contains("\"decision\":\"drop\"") && log_a.contains("\"copies\":2"));
    let (c, _) = once(78, None);
    assert_ne!(a, c, "another seed decides otherwise");
    let (d, log_d) = once(78, Some(read_replay(&log_a).unwrap()));
    assert_eq!(d, a, "unless the first log is replayed");
    assert_eq!(log_d.replace(",\"replayed\":true", ""), log_a);
}

#[test]
fn truncated_and_over_budget_frames_are_dropped_before_the_link_model() {
    let mut ch = Channel::new(
        &cfg(serde_json::json!({"max_in_flight_bytes": 1000,
            "forward": {"link": {"delay_ms": 10, "loss": 0.5}}})),
        Options::default(),
    );
    let f = numbered(0, 600);
    let cut = ch.handle_frame(
        Instant::ZERO,
        Arrival {
            dir: Dir::Forward,
            at: Instant::ZERO,
            data: &f,
            truncated: true,
        },
    );
    assert_eq!(cut, Fate::Drop);
    let mut fates = Vec::new();
    for i in 0..40 {
        fates.push(arrive(&mut ch, 0, Dir::Forward, &numbered(i, 600)));
    }
    let st = ch.stats(Dir::Forward);
    assert_eq!(st.dropped_by(Cause::Oversize), 1);
    // one frame in flight (600 bytes) leaves no room for a second
    assert_eq!(st.passed, 1);
    assert_eq!(
        st.dropped_by(Cause::Memory) + st.dropped_by(Cause::Loss),
        39
    );
    assert_eq!(ch.log_len(), 0, "no log unless asked for");
}

#[test]
fn classified_segments_are_counted_and_rules_act_on_them() {
    let mut ch = channel(serde_json::json!({"rules": [{"direction": "return",
        "protocol": "ltp", "match": {"type": "RA"}, "occurrence": 2, "action": "drop"}]}));
    // an LTP report-acknowledgment segment (RFC 5326 §3.2.3): control byte
    // 0x09, session 1/77, no extensions, report serial 3
    let ra = udp_frame(&[0x09, 0x01, 0x4d, 0x00, 0x03], 1113, 1113);
    let fates: Vec<Fate> = (0..3)
        .map(|i| arrive(&mut ch, i, Dir::Return, &ra))
        .collect();
    assert_eq!(fates, [Fate::Pass, Fate::Drop, Fate::Pass]);
    assert_eq!(ch.stats(Dir::Return).segments, 3);
    let recs = log_lines(&mut ch);
    assert_eq!(recs[1]["rule"], 0);
    assert_eq!(recs[1]["cause"], "rule");
    assert_eq!(recs[2]["seg"], 3);
    assert_eq!(recs[2]["fields"]["type"], "RA");
}

#[test]
fn an_outage_rule_takes_both_directions_down_from_its_segment_for_its_duration() {
    let mut ch = channel(serde_json::json!({"rules": [{"direction": "return",
        "protocol": "ltp", "match": {"type": "RA"}, "occurrence": 2, "action": "outage",
        "delay_ms": 10.0}]}));
    let ra = udp_frame(&[0x09, 0x01, 0x4d, 0x00, 0x03], 1113, 1113);
    let plain = numbered(1, 100);
    assert_eq!(arrive(&mut ch, 0, Dir::Return, &ra), Fate::Pass);
    assert_eq!(arrive(&mut ch, MS, Dir::Forward, &plain), Fate::Pass);
    // the 2nd RA opens [2 ms, 12 ms): it and everything else then is lost
    assert_eq!(arrive(&mut ch, 2 * MS, Dir::Return, &ra), Fate::Drop);
    assert_eq!(arrive(&mut ch, 5 * MS, Dir::Forward, &plain), Fate::Drop);
    assert_eq!(arrive(&mut ch, 12 * MS - 1, Dir::Return, &ra), Fate::Drop);
    assert_eq!(arrive(&mut ch, 12 * MS, Dir::Forward, &plain), Fate::Pass);
    let recs = log_lines(&mut ch);
    assert_eq!(
        (recs[2]["cause"].as_str(), recs[2]["rule"].as_u64()),
        (Some("outage"), Some(0))
    );
    assert_eq!(recs[3]["cause"], "outage");
}
