//! Targeted impairments keyed on protocol fields: a rule counts the segments
//! of its direction and protocol whose fields equal every entry of its
//! `match`, and acts on matches number `occurrence` .. `occurrence+count-1`.
//! Every rule counts every segment it matches, whatever other rules decide:
//! "the 2nd RS" is the 2nd RS sent into the channel.

use crate::classify::{Fields, Protocol, Value};
use crate::config::{ActionKind, Checksum, Dir, MatchValue, RuleConfig};

/// One rule, with its counters.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Position in the config's `rules`.
    pub index: usize,
    /// The direction it counts.
    pub dir: Dir,
    /// The protocol it counts.
    pub protocol: Protocol,
    /// Fields and the values they must have.
    pub match_: Vec<(String, MatchValue)>,
    /// First match acted on (1-based).
    pub first: u64,
    /// Last match acted on.
    pub last: u64,
    /// What it does.
    pub action: ActionKind,
    /// corrupt: bits to flip.
    pub bits: u32,
    /// delay: extra delay, ns.
    pub delay_ns: u64,
    /// corrupt: checksum handling (default: the link's).
    pub checksum: Option<Checksum>,
    /// corrupt: flip bits only in the payload's last octets.
    pub tail_octets: Option<u32>,
    /// Segments matched so far.
    pub seen: u64,
    /// Segments acted on so far.
    pub fired: u64,
}

/// What the winning rule asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Action {
    /// The rule's index.
    pub rule: usize,
    /// What to do.
    pub kind: ActionKind,
    /// corrupt: bits to flip.
    pub bits: u32,
    /// delay: extra delay, ns.
    pub delay_ns: u64,
    /// corrupt: checksum handling (default: the link's).
    pub checksum: Option<Checksum>,
    /// corrupt: flip bits only in the payload's last octets.
    pub tail_octets: Option<u32>,
}

fn value_eq(field: &Value, want: &MatchValue) -> bool {
    match (field, want) {
        (Value::Int(a), MatchValue::Int(b)) => a == b,
        (Value::Str(a), MatchValue::Str(b)) => a == b,
        (Value::Bool(a), MatchValue::Bool(b)) => a == b,
        _ => false,
    }
}

/// The match key that names a byte instead of a field: a segment carrying
/// client data from `offset` for `length` bytes matches `holds: X` when
/// `offset <= X < offset + length`. "The data segment that holds byte X"
/// means the same whatever the implementation's segmentation; an `offset`
/// match assumes a grid.
pub const HOLDS: &str = "holds";

fn field_int(fields: &Fields, key: &str) -> Option<u64> {
    match fields.iter().find(|(k, _)| *k == key) {
        Some((_, Value::Int(n))) => Some(*n),
        _ => None,
    }
}

/// True when every entry of `want` equals the segment's field. A code field
/// given as a number matches the field's `<name>_code` companion (LTP's
/// `type` may be given as "RS" or as 8); `holds` (see [`HOLDS`]) matches a
/// segment whose data holds that byte.
pub fn matches(fields: &Fields, want: &[(String, MatchValue)]) -> bool {
    want.iter().all(|(key, w)| {
        if key == HOLDS {
            let (Some(off), Some(len), MatchValue::Int(x)) =
                (field_int(fields, "offset"), field_int(fields, "length"), w)
            else {
                return false;
            };
            return off <= *x && *x - off < len;
        }
        let Some((_, have)) = fields.iter().find(|(k, _)| k == key) else {
            return false;
        };
        if value_eq(have, w) {
            return true;
        }
        if let (Value::Str(_), MatchValue::Int(_)) = (have, w) {
            let code = format!("{key}_code");
            return fields.iter().any(|(k, v)| *k == code && value_eq(v, w));
        }
        false
    })
}

impl Rule {
    /// The rule of config entry `index`.
    pub fn from_config(index: usize, rc: &RuleConfig) -> Rule {
        Rule {
            index,
            dir: rc.direction,
            protocol: Protocol::from_name(&rc.protocol).expect("validated protocol"),
            match_: rc
                .match_
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            first: rc.occurrence,
            last: rc.occurrence + rc.count - 1,
            action: rc.action,
            bits: rc.bits,
            delay_ns: (rc.delay_ms * 1e6).round() as u64,
            checksum: rc.checksum,
            tail_octets: rc.tail_octets,
            seen: 0,
            fired: 0,
        }
    }
}

/// All rules of a run.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    /// In config order.
    pub rules: Vec<Rule>,
}

impl RuleSet {
    /// The rules of a config.
    pub fn new(cfgs: &[RuleConfig]) -> RuleSet {
        RuleSet {
            rules: cfgs
                .iter()
                .enumerate()
                .map(|(i, r)| Rule::from_config(i, r))
                .collect(),
        }
    }

    /// Count one classified segment; return the action of the first rule
    /// (in file order) that acts on it, if any.
    pub fn decide(&mut self, dir: Dir, proto: Protocol, fields: &Fields) -> Option<Action> {
        let mut out = None;
        for r in &mut self.rules {
            if r.dir != dir || r.protocol != proto || !matches(fields, &r.match_) {
                continue;
            }
            r.seen += 1;
            if (r.first..=r.last).contains(&r.seen) {
                r.fired += 1;
                if out.is_none() {
                    out = Some(Action {
                        rule: r.index,
                        kind: r.action,
                        bits: r.bits,
                        delay_ns: r.delay_ns,
                        checksum: r.checksum,
                        tail_octets: r.tail_octets,
                    });
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn rs(serial: u64) -> Fields {
        vec![
            ("type", Value::Str("RS")),
            ("type_code", Value::Int(8)),
            ("report_serial", Value::Int(serial)),
            ("red", Value::Bool(false)),
        ]
    }

    fn rule(m: &[(&str, MatchValue)], occ: u64, count: u64) -> RuleConfig {
        RuleConfig {
            direction: Dir::Return,
            protocol: "ltp".into(),
            match_: m
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<BTreeMap<_, _>>(),
            occurrence: occ,
            count,
            action: ActionKind::Drop,
            bits: 1,
            delay_ms: 0.0,
            checksum: None,
            tail_octets: None,
        }
    }

    #[test]
    fn name_or_code_and_type_strictness() {
        let f = rs(3);
        assert!(matches(
            &f,
            &[("type".into(), MatchValue::Str("RS".into()))]
        ));
        assert!(matches(&f, &[("type".into(), MatchValue::Int(8))]));
        assert!(!matches(&f, &[("type".into(), MatchValue::Int(9))]));
        assert!(
            !matches(&f, &[("red".into(), MatchValue::Int(0))]),
            "bool is not int"
        );
        assert!(
            !matches(&f, &[("offset".into(), MatchValue::Int(0))]),
            "absent field"
        );
    }

    #[test]
    fn holds_names_a_byte_whatever_the_segmentation() {
        // ION's third segment of a 3000-byte red part (segment size 1000,
        // header counted): 1999 .. 2998
        let seg = vec![
            ("kind", Value::Str("red_data")),
            ("offset", Value::Int(1999)),
            ("length", Value::Int(999)),
        ];
        let holds = |x| [(HOLDS.to_string(), MatchValue::Int(x))];
        assert!(matches(&seg, &holds(1999)), "its first byte");
        assert!(matches(&seg, &holds(2000)), "the grid's checkpoint's first byte");
        assert!(matches(&seg, &holds(2997)), "its last byte");
        assert!(!matches(&seg, &holds(2998)), "the next segment's first byte");
        assert!(!matches(&seg, &holds(1998)), "the previous segment's last byte");
        assert!(!matches(&rs(1), &holds(0)), "a segment without data");
        let with_kind = [
            ("kind".to_string(), MatchValue::Str("green_data".into())),
            (HOLDS.to_string(), MatchValue::Int(2000)),
        ];
        assert!(!matches(&seg, &with_kind), "every entry must hold");
    }

    #[test]
    fn occurrence_and_count_window() {
        let mut rs_set = RuleSet::new(&[rule(&[("type", MatchValue::Str("RS".into()))], 2, 2)]);
        let got: Vec<bool> = (1..=5)
            .map(|i| {
                rs_set
                    .decide(Dir::Return, Protocol::named("ltp"), &rs(i))
                    .is_some()
            })
            .collect();
        assert_eq!(got, [false, true, true, false, false]);
        // other direction and protocol are not counted
        assert!(rs_set
            .decide(Dir::Forward, Protocol::named("ltp"), &rs(9))
            .is_none());
        assert_eq!(rs_set.rules[0].seen, 5);
    }

    #[test]
    fn overlapping_rules_count_independently() {
        let mut set = RuleSet::new(&[
            rule(&[("type", MatchValue::Str("RS".into()))], 1, 1),
            rule(&[("report_serial", MatchValue::Int(2))], 1, 1),
        ]);
        assert_eq!(
            set.decide(Dir::Return, Protocol::named("ltp"), &rs(1))
                .map(|a| a.rule),
            Some(0)
        );
        // rule 1's first match is this RS, even though rule 0 did not act
        assert_eq!(
            set.decide(Dir::Return, Protocol::named("ltp"), &rs(2))
                .map(|a| a.rule),
            Some(1)
        );
        assert_eq!(set.rules[0].seen, 2);
    }
}
