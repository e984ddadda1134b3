//! The decision log (`channel.jsonl`): one JSON line per frame the channel
//! handled, and its reader for `--replay`. The Python side reads it as
//! `conformance.core.types.ChannelRecord`.
//!
//! Keys, in the order written ([`KEYS`]); optional ones are absent when
//! they do not apply:
//!
//! | key              | when        | value                                            |
//! |------------------|-------------|--------------------------------------------------|
//! | `t_ns`           | always      | arrival, ns since the Unix epoch (comparable with pcaps) |
//! | `dir`            | always      | `"forward"` \| `"return"`                        |
//! | `index`          | always      | 1-based frame number in this direction           |
//! | `len`            | always      | frame length in bytes, Ethernet header included  |
//! | `kind`           | always      | `"udp"` \| `"ipv4"` \| `"fragment"` \| `"non-ip"` |
//! | `proto`, `seg`   | classified  | protocol, 1-based segment number of this direction |
//! | `fields`         | classified  | the classifier's fields                          |
//! | `decision`       | always      | `"pass"` \| `"corrupt"` \| `"drop"`              |
//! | `cause`          | dropped, corrupted, rule-delayed | a [`Cause`] name            |
//! | `rule`           | a rule acted | index of the rule                               |
//! | `release_ns`     | not dropped | when the frame left the channel (ns since the epoch) |
//! | `flipped`        | corrupted   | flipped bit positions (bit 0 = first bit of the frame) |
//! | `fixed`          | checksum recomputed | `true`                                   |
//! | `copies`         | duplicated  | `2`                                              |
//! | `hold`           | reordered   | left after this many later frames                |
//! | `extra_delay_ns` | rule delay  | a rule's extra delay                             |
//! | `replayed`       | under replay | `true`: the decision came from a replayed log   |
//! | `mismatch`       | under replay | `true`: the logged frame had another length or kind |

use std::collections::HashMap;

use crate::classify::Fields;
use crate::config::Dir;
use crate::jsonw::{field_u64, write_str, write_u64};
use crate::link::{Cause, Decision, Fate, Logged};

/// Every key a log line can carry, in the order they are written.
pub const KEYS: [&str; 19] = [
    "t_ns",
    "dir",
    "index",
    "len",
    "kind",
    "proto",
    "seg",
    "fields",
    "decision",
    "cause",
    "rule",
    "release_ns",
    "flipped",
    "fixed",
    "copies",
    "hold",
    "extra_delay_ns",
    "replayed",
    "mismatch",
];

/// One line of the decision log, borrowed from the channel's state.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// Arrival, ns since the Unix epoch.
    pub t_ns: u64,
    /// The frame's direction.
    pub dir: Dir,
    /// 1-based frame number in this direction.
    pub index: u64,
    /// Frame length, bytes.
    pub len: usize,
    /// `udp`, `ipv4`, `fragment` or `non-ip`.
    pub kind: &'static str,
    /// The classified protocol and its fields, with the 1-based segment
    /// number of this direction.
    pub segment: Option<(&'static str, u64, &'a Fields)>,
    /// What the link model decided.
    pub decision: &'a Decision,
    /// ns to add to a since-start time to get ns since the epoch.
    pub epoch_offset: u64,
    /// Under replay, the logged frame had another length or kind.
    pub mismatch: bool,
}

impl Record<'_> {
    /// Append this record as one line (with its newline) to `out`.
    pub fn write(&self, out: &mut String) {
        let d = self.decision;
        out.push_str("{\"t_ns\":");
        write_u64(out, self.t_ns);
        out.push_str(",\"dir\":\"");
        out.push_str(self.dir.name());
        out.push('"');
        field_u64(out, "index", self.index);
        field_u64(out, "len", self.len as u64);
        out.push_str(",\"kind\":\"");
        out.push_str(self.kind);
        out.push('"');
        if let Some((proto, seg, fields)) = self.segment {
            out.push_str(",\"proto\":\"");
            out.push_str(proto);
            out.push('"');
            field_u64(out, "seg", seg);
            out.push_str(",\"fields\":{");
            for (i, (k, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(out, k);
                out.push(':');
                v.write_json(out);
            }
            out.push('}');
        }
        out.push_str(",\"decision\":\"");
        out.push_str(d.fate.name());
        out.push('"');
        if let Some(c) = d.cause {
            out.push_str(",\"cause\":\"");
            out.push_str(c.name());
            out.push('"');
        }
        if let Some(r) = d.rule {
            field_u64(out, "rule", r as u64);
        }
        if d.fate != Fate::Drop {
            field_u64(out, "release_ns", d.release + self.epoch_offset);
        }
        if !d.flipped.is_empty() {
            out.push_str(",\"flipped\":[");
            for (i, b) in d.flipped.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_u64(out, u64::from(*b));
            }
            out.push(']');
        }
        if d.fixed {
            out.push_str(",\"fixed\":true");
        }
        if d.copies > 1 {
            field_u64(out, "copies", u64::from(d.copies));
        }
        if d.hold > 0 {
            field_u64(out, "hold", u64::from(d.hold));
        }
        if d.extra_delay_ns > 0 {
            field_u64(out, "extra_delay_ns", d.extra_delay_ns);
        }
        if d.replayed {
            out.push_str(",\"replayed\":true");
        }
        if self.mismatch {
            out.push_str(",\"mismatch\":true");
        }
        out.push_str("}\n");
    }
}

/// Decisions of a log, per direction, by frame index.
#[derive(Debug, Default)]
pub struct ReplayLog {
    /// Forward and return decisions by 1-based frame index.
    pub by_dir: [HashMap<u64, Logged>; 2],
}

impl ReplayLog {
    /// The logged decision for frame `index` of `dir`, if the log has it.
    pub fn get(&self, dir: Dir, index: u64) -> Option<&Logged> {
        self.by_dir[dir.idx()].get(&index)
    }

    /// Decisions in the log.
    pub fn len(&self) -> usize {
        self.by_dir[0].len() + self.by_dir[1].len()
    }

    /// The log holds no decision.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Read a decision log; the error names the line and key.
pub fn read_replay(text: &str) -> Result<ReplayLog, String> {
    let mut log = ReplayLog::default();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = n + 1;
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("line {at}: not JSON: {e}"))?;
        let dir = match v["dir"].as_str() {
            Some("forward") => Dir::Forward,
            Some("return") => Dir::Return,
            _ => {
                return Err(format!(
                    "line {at}: dir: expected \"forward\" or \"return\""
                ))
            }
        };
        let index = v["index"]
            .as_u64()
            .ok_or(format!("line {at}: index: expected a number"))?;
        let decision = v["decision"]
            .as_str()
            .ok_or(format!("line {at}: decision: missing"))?;
        let fate = Fate::from_name(decision)
            .ok_or(format!("line {at}: decision: unknown {decision:?}"))?;
        let cause = match &v["cause"] {
            serde_json::Value::Null => None,
            c => Some(
                c.as_str()
                    .and_then(Cause::from_name)
                    .ok_or(format!("line {at}: cause: unknown {c}"))?,
            ),
        };
        if fate == Fate::Drop && cause.is_none() {
            return Err(format!("line {at}: cause: a drop names its cause"));
        }
        let flipped = match &v["flipped"] {
            serde_json::Value::Null => Vec::new(),
            serde_json::Value::Array(a) => a
                .iter()
                .map(|b| b.as_u64().and_then(|b| u32::try_from(b).ok()))
                .collect::<Option<Vec<u32>>>()
                .ok_or(format!("line {at}: flipped: expected bit numbers"))?,
            _ => return Err(format!("line {at}: flipped: expected a list")),
        };
        let logged = Logged {
            len: v["len"].as_u64().unwrap_or(0) as usize,
            kind: v["kind"].as_str().unwrap_or("").to_string(),
            drop: fate == Fate::Drop,
            cause,
            rule: v["rule"].as_u64().map(|r| r as usize),
            flipped,
            copies: v["copies"].as_u64().unwrap_or(1) as u8,
            hold: v["hold"].as_u64().unwrap_or(0) as u32,
            extra_delay_ns: v["extra_delay_ns"].as_u64().unwrap_or(0),
            fixed: v["fixed"].as_bool().unwrap_or(false),
        };
        log.by_dir[dir.idx()].insert(index, logged);
    }
    Ok(log)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Value;

    fn decision() -> Decision {
        Decision {
            fate: Fate::Corrupt,
            cause: Some(Cause::Ber),
            rule: None,
            flipped: vec![400, 913],
            copies: 2,
            hold: 1,
            extra_delay_ns: 0,
            depart: 10,
            release: 250_000_010,
            release_dup: 0,
            fixed: true,
            replayed: false,
        }
    }

    fn line(rec: &Record) -> String {
        let mut s = String::new();
        rec.write(&mut s);
        s
    }

    #[test]
    fn line_is_json_and_reads_back() {
        let fields: Fields = vec![("type", Value::Str("RS")), ("report_serial", Value::Int(2))];
        let d = decision();
        let s = line(&Record {
            t_ns: 1_700_000_000_000_000_000,
            dir: Dir::Return,
            index: 12,
            len: 90,
            kind: "udp",
            segment: Some(("ltp", 4, &fields)),
            decision: &d,
            epoch_offset: 1_000,
            mismatch: false,
        });
        assert!(s.ends_with("}\n") && s.matches('\n').count() == 1);
        let v: serde_json::Value = serde_json::from_str(s.trim_end()).unwrap();
        assert_eq!(v["fields"]["type"], "RS");
        assert_eq!(v["release_ns"], 250_001_010u64);
        assert_eq!(v["seg"], 4);
        assert_eq!(v["decision"], "corrupt");
        assert_eq!(v["cause"], "ber");
        let log = read_replay(&s).unwrap();
        let l = log.get(Dir::Return, 12).unwrap();
        assert_eq!(l.flipped, vec![400, 913]);
        assert_eq!(l.cause, Some(Cause::Ber));
        assert_eq!((l.copies, l.hold, l.fixed, l.drop), (2, 1, true, false));
        assert!(log.get(Dir::Forward, 12).is_none());
    }

    /// The keys written are exactly [`KEYS`], in that order, when every
    /// optional one applies; and a plain passed frame carries only the
    /// always-present ones. `ChannelRecord` (conformance/core/types.py) declares
    /// the same keys.
    #[test]
    fn keys_written_match_the_list() {
        let fields: Fields = vec![("type", Value::Str("RS"))];
        let all = Decision {
            rule: Some(3),
            extra_delay_ns: 7,
            replayed: true,
            ..decision()
        };
        let s = line(&Record {
            t_ns: 1,
            dir: Dir::Forward,
            index: 1,
            len: 60,
            kind: "udp",
            segment: Some(("ltp", 1, &fields)),
            decision: &all,
            epoch_offset: 0,
            mismatch: true,
        });
        // serde_json keeps keys sorted, so read the order off the text
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        let mut written: Vec<(usize, &str)> = v
            .as_object()
            .unwrap()
            .keys()
            .map(|k| (s.find(&format!("\"{k}\":")).unwrap(), k.as_str()))
            .collect();
        written.sort_unstable();
        let keys: Vec<&str> = written.into_iter().map(|(_, k)| k).collect();
        assert_eq!(keys, KEYS);

        let pass = Decision {
            fate: Fate::Pass,
            cause: None,
            flipped: vec![],
            copies: 1,
            hold: 0,
            fixed: false,
            ..decision()
        };
        let s = line(&Record {
            t_ns: 1,
            dir: Dir::Forward,
            index: 2,
            len: 60,
            kind: "non-ip",
            segment: None,
            decision: &pass,
            epoch_offset: 0,
            mismatch: false,
        });
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        let mut got: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        got.sort_unstable();
        assert_eq!(
            got,
            [
                "decision",
                "dir",
                "index",
                "kind",
                "len",
                "release_ns",
                "t_ns"
            ]
        );
    }

    #[test]
    fn every_cause_name_reads_back() {
        for c in Cause::ALL {
            assert_eq!(Cause::from_name(c.name()), Some(c));
            assert_eq!(Cause::ALL[c.idx()], c);
        }
        assert_eq!(Cause::from_name("verdict"), None);
    }

    #[test]
    fn bad_log_names_line_and_key() {
        let e = read_replay(
            "{\"dir\":\"forward\",\"index\":1,\"decision\":\"pass\"}\n{\"dir\":\"up\"}",
        )
        .unwrap_err();
        assert!(e.starts_with("line 2: dir"), "{e}");
        let e = read_replay("{\"dir\":\"forward\",\"index\":1,\"verdict\":\"pass\"}").unwrap_err();
        assert!(e.starts_with("line 1: decision: missing"), "{e}");
        let e = read_replay("{\"dir\":\"forward\",\"index\":1,\"decision\":\"drop\"}").unwrap_err();
        assert!(e.starts_with("line 1: cause"), "{e}");
        let e = read_replay(
            "{\"dir\":\"forward\",\"index\":1,\"decision\":\"drop\",\"cause\":\"gremlins\"}",
        )
        .unwrap_err();
        assert!(e.contains("gremlins"), "{e}");
    }
}
