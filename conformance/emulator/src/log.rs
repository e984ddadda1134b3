//! The decision log: one JSON line per frame the channel handled, and its
//! reader for `--replay`.
//!
//! Keys (absent when they do not apply):
//!   t_ns        arrival time, ns since the Unix epoch (comparable with pcaps)
//!   dir         "forward" | "return"
//!   index       1-based frame number in this direction (every frame)
//!   len         frame length in bytes (Ethernet header included)
//!   kind        "udp" | "ipv4" | "fragment" | "non-ip"
//!   proto, seg  classified protocol, and the 1-based segment number of
//!               this direction (only frames that classify)
//!   fields      the classifier's fields
//!   verdict     "pass" | "corrupt" | "drop"
//!   cause       rule | outage | loss | ber | packet_error | queue | memory
//!   rule        index of the rule that acted
//!   release_ns  when the frame left the channel (ns since the epoch)
//!   flipped     flipped bit positions (bit 0 = first bit of the frame)
//!   fixed       the UDP checksum was recomputed after the flips
//!   copies      2 when duplicated
//!   hold        reordering: left after this many later frames
//!   extra_delay_ns  a rule's extra delay
//!   replayed    the decision came from a replayed log
//!   mismatch    under replay, the logged frame had another length or kind

use std::collections::HashMap;

use crate::classify::Fields;
use crate::config::Dir;
use crate::link::{Decision, Logged};

pub struct Entry<'a> {
    pub t_ns: u64,
    pub dir: Dir,
    pub index: u64,
    pub len: usize,
    pub kind: &'static str,
    pub proto: Option<&'static str>,
    pub seg: u64,
    pub fields: Option<&'a Fields>,
    pub decision: &'a Decision,
    /// ns to add to a since-start time to get ns since the epoch.
    pub epoch_offset: u64,
    pub mismatch: bool,
}

/// Append one log line (with its newline) to `out`.
pub fn format(e: &Entry, out: &mut String) {
    use crate::jsonw::{field_u64, write_u64};
    let d = e.decision;
    out.push_str("{\"t_ns\":");
    write_u64(out, e.t_ns);
    out.push_str(",\"dir\":\"");
    out.push_str(e.dir.name());
    out.push('"');
    field_u64(out, "index", e.index);
    field_u64(out, "len", e.len as u64);
    out.push_str(",\"kind\":\"");
    out.push_str(e.kind);
    out.push('"');
    if let (Some(p), Some(fields)) = (e.proto, e.fields) {
        out.push_str(",\"proto\":\"");
        out.push_str(p);
        out.push('"');
        field_u64(out, "seg", e.seg);
        out.push_str(",\"fields\":{");
        for (i, (k, v)) in fields.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            crate::jsonw::write_str(out, k);
            out.push(':');
            v.write_json(out);
        }
        out.push('}');
    }
    out.push_str(",\"verdict\":\"");
    out.push_str(d.verdict.name());
    out.push('"');
    if let Some(c) = &d.cause {
        out.push_str(",\"cause\":");
        crate::jsonw::write_str(out, c);
    }
    if let Some(r) = d.rule {
        field_u64(out, "rule", r as u64);
    }
    if d.verdict != crate::link::Verdict::Drop {
        field_u64(out, "release_ns", d.release + e.epoch_offset);
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
    if e.mismatch {
        out.push_str(",\"mismatch\":true");
    }
    out.push_str("}\n");
}

/// Decisions of a log, per direction, by frame index.
#[derive(Debug, Default)]
pub struct ReplayLog {
    pub by_dir: [HashMap<u64, Logged>; 2],
}

impl ReplayLog {
    pub fn get(&self, dir: Dir, index: u64) -> Option<&Logged> {
        self.by_dir[dir.idx()].get(&index)
    }

    pub fn len(&self) -> usize {
        self.by_dir[0].len() + self.by_dir[1].len()
    }

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
        let verdict = v["verdict"]
            .as_str()
            .ok_or(format!("line {at}: verdict: missing"))?;
        if !matches!(verdict, "pass" | "corrupt" | "drop") {
            return Err(format!("line {at}: verdict: unknown {verdict:?}"));
        }
        let flipped = match &v["flipped"] {
            serde_json::Value::Null => Vec::new(),
            serde_json::Value::Array(a) => a
                .iter()
                .map(|b| b.as_u64().map(|b| b as u32))
                .collect::<Option<Vec<u32>>>()
                .ok_or(format!("line {at}: flipped: expected bit numbers"))?,
            _ => return Err(format!("line {at}: flipped: expected a list")),
        };
        let logged = Logged {
            len: v["len"].as_u64().unwrap_or(0) as usize,
            kind: v["kind"].as_str().unwrap_or("").to_string(),
            drop: verdict == "drop",
            cause: v["cause"].as_str().map(str::to_string),
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
    use crate::link::Verdict;

    fn decision() -> Decision {
        Decision {
            verdict: Verdict::Corrupt,
            cause: Some("ber".into()),
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

    #[test]
    fn line_is_json_and_reads_back() {
        let fields: Fields = vec![("type", Value::Str("RS")), ("report_serial", Value::Int(2))];
        let d = decision();
        let mut s = String::new();
        format(
            &Entry {
                t_ns: 1_700_000_000_000_000_000,
                dir: Dir::Return,
                index: 12,
                len: 90,
                kind: "udp",
                proto: Some("ltp"),
                seg: 4,
                fields: Some(&fields),
                decision: &d,
                epoch_offset: 1_000,
                mismatch: false,
            },
            &mut s,
        );
        let v: serde_json::Value = serde_json::from_str(s.trim_end()).unwrap();
        assert_eq!(v["fields"]["type"], "RS");
        assert_eq!(v["release_ns"], 250_001_010u64);
        assert_eq!(v["seg"], 4);
        let log = read_replay(&s).unwrap();
        let l = log.get(Dir::Return, 12).unwrap();
        assert_eq!(l.flipped, vec![400, 913]);
        assert_eq!((l.copies, l.hold, l.fixed, l.drop), (2, 1, true, false));
        assert!(log.get(Dir::Forward, 12).is_none());
    }

    #[test]
    fn bad_log_names_line_and_key() {
        let e =
            read_replay("{\"dir\":\"forward\",\"index\":1,\"verdict\":\"pass\"}\n{\"dir\":\"up\"}")
                .unwrap_err();
        assert!(e.starts_with("line 2: dir"), "{e}");
    }
}
