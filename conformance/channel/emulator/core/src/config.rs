//! The emulator's configuration file (JSON), written by the Python control
//! side (`conformance/channel/control.py`) from a scenario's `channel` section.
//!
//! Unknown keys are errors, and every error names the field it is about
//! (`forward.timeline[2].set.loss: ...`), so a bad scenario fails with exit
//! status 2 and a message a user can act on.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The `schema` value this version reads.
pub const SCHEMA: &str = "dtnconform/emulator/1";

/// One direction's link settings. Every field has a default, so a timeline
/// event can name only what it changes (see [`LinkPatch`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSettings {
    /// One-way propagation delay, milliseconds (0 to 24 h).
    #[serde(default)]
    pub delay_ms: f64,
    /// Link rate in bits/s over whole Ethernet frames; 0 = unlimited.
    #[serde(default)]
    pub rate_bps: f64,
    /// Bytes that may wait for serialization before the tail is dropped.
    #[serde(default = "default_queue")]
    pub queue_bytes: u64,
    /// Probability that an IPv4 frame is lost.
    #[serde(default)]
    pub loss: f64,
    /// Bit error rate over the UDP payload bits (the IP payload for
    /// non-UDP IPv4 frames).
    #[serde(default)]
    pub ber: f64,
    /// Probability that a frame gets exactly one bit error (the "bit error
    /// per packet" of NASA GRC's channel emulator).
    #[serde(default)]
    pub packet_error: f64,
    /// Probability that a frame is sent twice.
    #[serde(default)]
    pub duplicate: f64,
    /// Bounded reordering.
    #[serde(default)]
    pub reorder: Reorder,
    /// After bit errors: "keep" leaves the UDP checksum as it was (the
    /// receiving kernel drops the datagram), "recompute" fixes it (the
    /// application sees the corrupted bytes).
    #[serde(default)]
    pub checksum: Checksum,
}

fn default_queue() -> u64 {
    1 << 20
}

impl Default for LinkSettings {
    fn default() -> Self {
        LinkSettings {
            delay_ms: 0.0,
            rate_bps: 0.0,
            queue_bytes: default_queue(),
            loss: 0.0,
            ber: 0.0,
            packet_error: 0.0,
            duplicate: 0.0,
            reorder: Reorder::default(),
            checksum: Checksum::Keep,
        }
    }
}

/// What happens to the UDP checksum after bit errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Checksum {
    /// Leave it: the receiving kernel drops the corrupted datagram.
    #[default]
    Keep,
    /// Fix it: the application sees the corrupted bytes.
    Recompute,
}

/// Bounded reordering: a frame chosen with `probability` is held back until
/// a uniformly drawn 1..=`max_displacement` later frames of its direction
/// have left, or `timeout_ms` after its due time, whichever comes first.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reorder {
    /// Probability that a frame is held back.
    #[serde(default)]
    pub probability: f64,
    /// Most later frames that may leave before a held one.
    #[serde(default = "default_displacement")]
    pub max_displacement: u32,
    /// A held frame leaves this long after its due time at the latest.
    #[serde(default = "default_reorder_timeout")]
    pub timeout_ms: f64,
}

fn default_displacement() -> u32 {
    3
}

fn default_reorder_timeout() -> f64 {
    100.0
}

impl Default for Reorder {
    fn default() -> Self {
        Reorder {
            probability: 0.0,
            max_displacement: default_displacement(),
            timeout_ms: default_reorder_timeout(),
        }
    }
}

/// A partial [`LinkSettings`]: what a timeline event changes.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkPatch {
    /// New one-way delay, ms.
    pub delay_ms: Option<f64>,
    /// New link rate, b/s (0 = unlimited).
    pub rate_bps: Option<f64>,
    /// New queue limit, bytes.
    pub queue_bytes: Option<u64>,
    /// New loss probability.
    pub loss: Option<f64>,
    /// New bit error rate.
    pub ber: Option<f64>,
    /// New single-bit error probability.
    pub packet_error: Option<f64>,
    /// New duplication probability.
    pub duplicate: Option<f64>,
    /// New reordering settings.
    pub reorder: Option<Reorder>,
    /// New checksum handling.
    pub checksum: Option<Checksum>,
}

impl LinkPatch {
    /// Overwrite the fields this patch names.
    pub fn apply(&self, s: &mut LinkSettings) {
        macro_rules! set {
            ($($f:ident),*) => { $( if let Some(v) = &self.$f { s.$f = v.clone(); } )* };
        }
        set!(
            delay_ms,
            rate_bps,
            queue_bytes,
            loss,
            ber,
            packet_error,
            duplicate,
            reorder,
            checksum
        );
    }
}

/// At scenario time `t` (seconds), apply `set`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// Scenario time, seconds.
    pub t: f64,
    /// The settings it changes.
    pub set: LinkPatch,
}

/// The link is down from `start` for `duration` seconds (scenario time).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    /// Scenario time the link goes down, seconds.
    pub start: f64,
    /// How long it stays down, seconds of scenario time.
    pub duration: f64,
}

/// One direction: its link, timeline and outages.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionConfig {
    /// Settings at the start.
    #[serde(default)]
    pub link: LinkSettings,
    /// Setting changes, in time order.
    #[serde(default)]
    pub timeline: Vec<Event>,
    /// Windows in which every frame is lost.
    #[serde(default)]
    pub outages: Vec<Outage>,
}

/// A direction of the channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    /// A to B (read on interface a, sent on b).
    Forward,
    /// B to A (read on interface b, sent on a).
    Return,
}

impl Dir {
    /// The name used in configs and logs.
    pub fn name(self) -> &'static str {
        match self {
            Dir::Forward => "forward",
            Dir::Return => "return",
        }
    }
    /// 0 for forward, 1 for return (array index).
    pub fn idx(self) -> usize {
        match self {
            Dir::Forward => 0,
            Dir::Return => 1,
        }
    }
}

/// What a rule does to the segments it acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionKind {
    /// Drop the segment.
    Drop,
    /// Flip `bits` random payload bits.
    Corrupt,
    /// Add `delay_ms` of delay.
    Delay,
    /// Deliver the segment twice (the copy right behind it).
    Duplicate,
    /// Take the link down, both directions, for `delay_ms` from this
    /// segment's arrival on (the segment is lost with the rest).
    Outage,
}

/// A match value: number, code name or flag.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum MatchValue {
    /// A flag.
    Bool(bool),
    /// A number (or a code, matched against `<name>_code`).
    Int(u64),
    /// A code name.
    Str(String),
}

/// A targeted impairment: act on matching segments number
/// `occurrence` .. `occurrence + count - 1` (1-based) of `direction`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// The direction whose segments it counts.
    pub direction: Dir,
    /// The protocol's name: ltp, cfdp, norm or saratoga.
    pub protocol: String,
    /// Fields a segment must carry, each with this value.
    #[serde(rename = "match")]
    pub match_: BTreeMap<String, MatchValue>,
    /// The first matching segment acted on (1-based).
    #[serde(default = "one")]
    pub occurrence: u64,
    /// How many matching segments, from `occurrence` on, it acts on.
    #[serde(default = "one")]
    pub count: u64,
    /// What it does.
    pub action: ActionKind,
    /// corrupt: number of payload bits to flip.
    #[serde(default = "one_u32")]
    pub bits: u32,
    /// delay: extra delay, milliseconds.
    #[serde(default)]
    pub delay_ms: f64,
    /// corrupt: checksum handling (default: the link's).
    #[serde(default)]
    pub checksum: Option<Checksum>,
    /// corrupt: flip bits only among the last `tail_octets` octets of the
    /// UDP payload (say, a PDU's file data), not in its headers.
    #[serde(default)]
    pub tail_octets: Option<u32>,
}

fn one() -> u64 {
    1
}
fn one_u32() -> u32 {
    1
}

/// A protocol to classify, by UDP port (source or destination).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolPort {
    /// The protocol's name: ltp, cfdp, norm or saratoga.
    pub protocol: String,
    /// The UDP port.
    pub udp_port: u16,
}

/// The interfaces of the middle namespace.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interfaces {
    /// Frames read here travel "forward" and leave on `b`.
    pub a: String,
    /// Frames read here travel "return" and leave on `a`.
    pub b: String,
}

/// The whole configuration file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Must be [`SCHEMA`].
    pub schema: String,
    /// The two interfaces bridged.
    pub interfaces: Interfaces,
    /// Seed of both directions' generators.
    #[serde(default)]
    pub seed: u64,
    /// Scenario clock compression k: scenario time t happens at real time
    /// t / k (event times, outage starts and lengths); delay and rate stay
    /// real time.
    #[serde(default = "one_f")]
    pub time_scale: f64,
    /// Protocols to classify.
    #[serde(default)]
    pub protocols: Vec<ProtocolPort>,
    /// A to B.
    #[serde(default)]
    pub forward: DirectionConfig,
    /// B to A.
    #[serde(rename = "return", default)]
    pub return_: DirectionConfig,
    /// Field-keyed impairments, in priority order.
    #[serde(default)]
    pub rules: Vec<RuleConfig>,
    /// Bytes of memory frames in flight may hold before new ones are
    /// dropped (cause "memory"): a guard against hours of delay at high rate.
    #[serde(default = "default_memory")]
    pub max_in_flight_bytes: u64,
}

fn one_f() -> f64 {
    1.0
}
fn default_memory() -> u64 {
    4 << 30
}

impl Config {
    /// One direction's settings.
    pub fn direction(&self, d: Dir) -> &DirectionConfig {
        match d {
            Dir::Forward => &self.forward,
            Dir::Return => &self.return_,
        }
    }
}

/// Parse and validate; the error names the offending field.
pub fn parse(text: &str) -> Result<Config, String> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let cfg: Config = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." || path.is_empty() {
            format!("{inner}")
        } else {
            format!("{path}: {inner}")
        }
    })?;
    validate(&cfg)?;
    Ok(cfg)
}

fn check_prob(field: &str, p: f64) -> Result<(), String> {
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("{field}: must be a probability in [0, 1], got {p}"));
    }
    Ok(())
}

fn check_range(field: &str, v: f64, lo: f64, hi: f64, what: &str) -> Result<(), String> {
    if !v.is_finite() || v < lo || v > hi {
        return Err(format!("{field}: must be {what}, got {v}"));
    }
    Ok(())
}

const MAX_DELAY_MS: f64 = 24.0 * 3600.0 * 1000.0;

fn validate_settings(at: &str, s: &LinkSettings) -> Result<(), String> {
    validate_patch(
        at,
        &LinkPatch {
            delay_ms: Some(s.delay_ms),
            rate_bps: Some(s.rate_bps),
            queue_bytes: Some(s.queue_bytes),
            loss: Some(s.loss),
            ber: Some(s.ber),
            packet_error: Some(s.packet_error),
            duplicate: Some(s.duplicate),
            reorder: Some(s.reorder.clone()),
            checksum: Some(s.checksum),
        },
    )
}

fn validate_patch(at: &str, p: &LinkPatch) -> Result<(), String> {
    if let Some(v) = p.delay_ms {
        check_range(
            &format!("{at}.delay_ms"),
            v,
            0.0,
            MAX_DELAY_MS,
            "0 .. 86400000 ms (24 h)",
        )?;
    }
    if let Some(v) = p.rate_bps {
        check_range(
            &format!("{at}.rate_bps"),
            v,
            0.0,
            100e9,
            "0 (unlimited) .. 100e9 b/s",
        )?;
        if v > 0.0 && v < 8.0 {
            return Err(format!("{at}.rate_bps: below 8 b/s, got {v}"));
        }
    }
    if let Some(v) = p.queue_bytes {
        if v < 64 {
            return Err(format!("{at}.queue_bytes: must be at least 64, got {v}"));
        }
    }
    for (name, v) in [
        ("loss", p.loss),
        ("packet_error", p.packet_error),
        ("duplicate", p.duplicate),
    ] {
        if let Some(v) = v {
            check_prob(&format!("{at}.{name}"), v)?;
        }
    }
    if let Some(v) = p.ber {
        check_range(
            &format!("{at}.ber"),
            v,
            0.0,
            0.5,
            "a bit error rate in [0, 0.5]",
        )?;
    }
    if let Some(r) = &p.reorder {
        check_prob(&format!("{at}.reorder.probability"), r.probability)?;
        if r.max_displacement == 0 || r.max_displacement > 1000 {
            return Err(format!(
                "{at}.reorder.max_displacement: must be 1 .. 1000, got {}",
                r.max_displacement
            ));
        }
        check_range(
            &format!("{at}.reorder.timeout_ms"),
            r.timeout_ms,
            0.0,
            3.6e6,
            "0 .. 3600000 ms",
        )?;
    }
    Ok(())
}

/// Validate ranges and cross-field rules.
pub fn validate(cfg: &Config) -> Result<(), String> {
    if cfg.schema != SCHEMA {
        return Err(format!("schema: expected {SCHEMA:?}, got {:?}", cfg.schema));
    }
    for (f, v) in [
        ("interfaces.a", &cfg.interfaces.a),
        ("interfaces.b", &cfg.interfaces.b),
    ] {
        if v.is_empty() || v.len() > 15 {
            return Err(format!("{f}: an interface name of 1-15 bytes, got {v:?}"));
        }
    }
    if cfg.interfaces.a == cfg.interfaces.b {
        return Err("interfaces.b: must differ from interfaces.a".into());
    }
    check_range(
        "time_scale",
        cfg.time_scale,
        1e-3,
        1e6,
        "in [0.001, 1000000]",
    )?;
    let mut protos = Vec::new();
    for (i, p) in cfg.protocols.iter().enumerate() {
        if crate::classify::Protocol::from_name(&p.protocol).is_none() {
            return Err(format!(
                "protocols[{i}].protocol: unknown protocol {:?} (known: ltp, cfdp, norm, saratoga)",
                p.protocol
            ));
        }
        if p.udp_port == 0 {
            return Err(format!("protocols[{i}].udp_port: must be 1-65535"));
        }
        if cfg.protocols[..i].iter().any(|q| q.udp_port == p.udp_port) {
            return Err(format!(
                "protocols[{i}].udp_port: port {} is listed twice",
                p.udp_port
            ));
        }
        protos.push(p.protocol.as_str());
    }
    for d in [Dir::Forward, Dir::Return] {
        let dc = cfg.direction(d);
        let at = d.name();
        validate_settings(&format!("{at}.link"), &dc.link)?;
        let mut last = 0.0;
        for (i, ev) in dc.timeline.iter().enumerate() {
            let f = format!("{at}.timeline[{i}]");
            check_range(&format!("{f}.t"), ev.t, 0.0, 1e9, "a time >= 0 s")?;
            if ev.t < last {
                return Err(format!(
                    "{f}.t: events must be in time order ({} < {last})",
                    ev.t
                ));
            }
            last = ev.t;
            validate_patch(&format!("{f}.set"), &ev.set)?;
        }
        for (i, o) in dc.outages.iter().enumerate() {
            let f = format!("{at}.outages[{i}]");
            check_range(&format!("{f}.start"), o.start, 0.0, 1e9, "a time >= 0 s")?;
            check_range(
                &format!("{f}.duration"),
                o.duration,
                0.0,
                1e9,
                "a length > 0 s",
            )?;
            if o.duration <= 0.0 {
                return Err(format!("{f}.duration: must be > 0 s"));
            }
        }
    }
    for (i, r) in cfg.rules.iter().enumerate() {
        let f = format!("rules[{i}]");
        let Some(proto) = crate::classify::Protocol::from_name(&r.protocol) else {
            return Err(format!("{f}.protocol: unknown protocol {:?}", r.protocol));
        };
        if !protos.contains(&r.protocol.as_str()) {
            return Err(format!(
                "{f}.protocol: {:?} is not among the classified protocols (protocols[])",
                r.protocol
            ));
        }
        if r.match_.is_empty() {
            return Err(format!("{f}.match: needs at least one field"));
        }
        let vocab = crate::classify::vocabulary(proto);
        for key in r.match_.keys() {
            if !vocab.iter().any(|v| v == key) {
                return Err(format!(
                    "{f}.match.{key}: unknown {} field (known: {})",
                    r.protocol,
                    vocab.join(", ")
                ));
            }
        }
        if r.occurrence == 0 {
            return Err(format!("{f}.occurrence: must be >= 1"));
        }
        if r.count == 0 {
            return Err(format!("{f}.count: must be >= 1"));
        }
        if r.action == ActionKind::Corrupt && (r.bits == 0 || r.bits > 1000) {
            return Err(format!("{f}.bits: must be 1 .. 1000, got {}", r.bits));
        }
        if r.action == ActionKind::Outage && (r.delay_ms.is_nan() || r.delay_ms <= 0.0) {
            return Err(format!("{f}.delay_ms: an outage needs a duration > 0 ms"));
        }
        if r.action == ActionKind::Delay || r.action == ActionKind::Outage {
            check_range(
                &format!("{f}.delay_ms"),
                r.delay_ms,
                0.0,
                MAX_DELAY_MS,
                "0 .. 24 h",
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> serde_json::Value {
        serde_json::json!({
            "schema": SCHEMA,
            "interfaces": {"a": "am", "b": "bm"},
            "seed": 1,
            "protocols": [{"protocol": "ltp", "udp_port": 1113}],
            "forward": {"link": {"delay_ms": 250, "rate_bps": 1e6, "loss": 0.01},
                        "timeline": [{"t": 5, "set": {"loss": 0.5}}],
                        "outages": [{"start": 10, "duration": 30}]},
            "rules": [{"direction": "return", "protocol": "ltp",
                       "match": {"type": "RS"}, "occurrence": 2, "action": "drop"}]
        })
    }

    fn err_of(v: serde_json::Value) -> String {
        parse(&v.to_string()).unwrap_err()
    }

    #[test]
    fn valid_config_parses() {
        let c = parse(&base().to_string()).unwrap();
        assert_eq!(c.forward.link.delay_ms, 250.0);
        assert_eq!(c.forward.link.queue_bytes, 1 << 20);
        assert_eq!(c.return_.link, LinkSettings::default());
        assert_eq!(c.rules[0].occurrence, 2);
        assert_eq!(c.rules[0].match_["type"], MatchValue::Str("RS".into()));
    }

    #[test]
    fn errors_name_the_field() {
        let mut v = base();
        v["forward"]["link"]["loss"] = serde_json::json!(1.5);
        assert!(err_of(v).starts_with("forward.link.loss:"));

        let mut v = base();
        v["forward"]["timeline"][0]["set"]["lose"] = serde_json::json!(0.1);
        let e = err_of(v);
        assert!(e.starts_with("forward.timeline[0].set"), "{e}");
        assert!(e.contains("lose"), "{e}");

        let mut v = base();
        v["rules"][0]["match"] = serde_json::json!({"segment": "RS"});
        assert!(err_of(v).starts_with("rules[0].match.segment: unknown ltp field"));

        let mut v = base();
        v["return"] = serde_json::json!({"outages": [{"start": 1, "duration": 0}]});
        assert!(err_of(v).starts_with("return.outages[0].duration"));

        let mut v = base();
        v["forward"]["link"]["delay_ms"] = serde_json::json!("slow");
        assert!(err_of(v).starts_with("forward.link.delay_ms:"));

        let mut v = base();
        v["schema"] = serde_json::json!("x");
        assert!(err_of(v).starts_with("schema:"));
    }

    #[test]
    fn patch_applies_only_what_it_names() {
        let mut s = LinkSettings {
            delay_ms: 5.0,
            loss: 0.1,
            ..Default::default()
        };
        LinkPatch {
            loss: Some(0.0),
            ..Default::default()
        }
        .apply(&mut s);
        assert_eq!(s.delay_ms, 5.0);
        assert_eq!(s.loss, 0.0);
    }
}
