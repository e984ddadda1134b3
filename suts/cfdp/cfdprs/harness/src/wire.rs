//! The few PDU fields the harness reads itself: to count PDUs, to fire the
//! users' requests on them and to log them. Nothing here builds or answers
//! a PDU: every byte on the wire comes from cfdp-rs.
//!
//! Names are those of specs/cfdp/wire.json (Table 5-4 directives, Table 5-5
//! condition codes, the Finished file statuses).

use serde_json::{Map, Value};

/// Table 5-5 (wire.json "condition_codes"), by code.
pub const CONDITIONS: [&str; 16] = [
    "no_error",
    "positive_ack_limit_reached",
    "keep_alive_limit_reached",
    "invalid_transmission_mode",
    "filestore_rejection",
    "file_checksum_failure",
    "file_size_error",
    "nak_limit_reached",
    "inactivity_detected",
    "invalid_file_structure",
    "check_limit_reached",
    "unsupported_checksum_type",
    "reserved_12",
    "reserved_13",
    "suspend_request_received",
    "cancel_request_received",
];

/// wire.json "file_statuses", by code.
pub const FILE_STATUSES: [&str; 4] = [
    "discarded_deliberately",
    "discarded_filestore_rejection",
    "retained",
    "unreported",
];

pub fn condition_name(code: u8) -> String {
    CONDITIONS
        .get(code as usize)
        .map(|s| s.to_string())
        .unwrap_or_else(|| format!("condition_{code}"))
}

/// Table 5-4 (wire.json "directives").
pub fn directive_name(code: u8) -> String {
    match code {
        4 => "eof",
        5 => "finished",
        6 => "ack",
        7 => "metadata",
        8 => "nak",
        9 => "prompt",
        12 => "keep_alive",
        _ => return format!("directive_{code}"),
    }
    .to_string()
}

/// What one PDU says, as a request's `match` names it.
#[derive(Debug, Clone)]
pub struct Fields {
    /// pdu_type, directive, ack_of, condition, offset (those present).
    pub map: Map<String, Value>,
    /// A short description for counters and the log.
    pub label: String,
}

impl Fields {
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.map.get(key).and_then(Value::as_str)
    }

    /// The key under which the result's pdus_sent / pdus_received count it.
    pub fn counter_key(&self) -> String {
        if self.get_str("pdu_type") == Some("file_data") {
            return "file_data".into();
        }
        if self.get_str("directive") == Some("nak") {
            return "nak".into();
        }
        self.label.clone()
    }

    /// Whether every entry of `want` equals the PDU's field.
    pub fn matches(&self, want: &Map<String, Value>) -> bool {
        want.iter().all(|(k, v)| match self.map.get(k) {
            Some(have) => json_eq(have, v),
            None => false,
        })
    }
}

fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(p), Some(q)) => p == q,
            _ => x == y,
        },
        _ => a == b,
    }
}

fn be(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
}

/// The whole PDU's length as its header states it (fixed header, entity
/// IDs, sequence number, data field), or why the datagram is no PDU.
pub fn pdu_len(buf: &[u8]) -> Result<usize, String> {
    if buf.len() < 4 {
        return Err(format!("{} octets: shorter than a PDU header", buf.len()));
    }
    let data_len = usize::from(u16::from_be_bytes([buf[1], buf[2]]));
    let eid = usize::from((buf[3] >> 4) & 7) + 1;
    let seq = usize::from(buf[3] & 7) + 1;
    let total = 4 + 2 * eid + seq + data_len;
    if buf.len() < total {
        return Err(format!(
            "{} octets: shorter than the {} its header states",
            buf.len(),
            total
        ));
    }
    Ok(total)
}

/// Decode the header (5.1) and the fields named above.
pub fn decode(buf: &[u8]) -> Result<Fields, String> {
    let total = pdu_len(buf)?;
    let b0 = buf[0];
    let file_data = (b0 >> 4) & 1 == 1;
    let crc = (b0 >> 1) & 1 == 1;
    let large = b0 & 1 == 1;
    let eid = usize::from((buf[3] >> 4) & 7) + 1;
    let seq = usize::from(buf[3] & 7) + 1;
    let seg_meta = (buf[3] >> 3) & 1 == 1;
    let header_len = 4 + 2 * eid + seq;
    let mut body = &buf[header_len..total];
    if crc {
        if body.len() < 2 {
            return Err("CRC flag set but no room for the CRC".into());
        }
        body = &body[..body.len() - 2];
    }
    let fss = if large { 8 } else { 4 };
    let mut map = Map::new();
    if file_data {
        let mut at = 0;
        if seg_meta {
            let Some(first) = body.first() else {
                return Err("file data PDU without its segment metadata".into());
            };
            at = 1 + usize::from(first & 0x3f);
        }
        if body.len() < at + fss {
            return Err("file data PDU too short for its offset".into());
        }
        let offset = be(&body[at..at + fss]);
        let len = body.len() - at - fss;
        map.insert("pdu_type".into(), "file_data".into());
        map.insert("offset".into(), offset.into());
        return Ok(Fields {
            map,
            label: format!("file_data[{offset}+{len}]"),
        });
    }
    let Some(&code) = body.first() else {
        return Err("file directive PDU without a directive code".into());
    };
    let name = directive_name(code);
    map.insert("pdu_type".into(), "file_directive".into());
    map.insert("directive".into(), name.clone().into());
    let mut label = name.clone();
    match code {
        6 if body.len() >= 3 => {
            let of = directive_name(body[1] >> 4);
            let cond = condition_name(body[2] >> 4);
            label = format!("ack({of},{cond})");
            map.insert("ack_of".into(), of.into());
            map.insert("condition".into(), cond.into());
        }
        4 | 5 if body.len() >= 2 => {
            let cond = condition_name(body[1] >> 4);
            label = format!("{name}({cond})");
            map.insert("condition".into(), cond.into());
        }
        8 if body.len() > 2 * fss => {
            let reqs: Vec<String> = body[1 + 2 * fss..]
                .chunks_exact(2 * fss)
                .map(|c| format!("{}-{}", be(&c[..fss]), be(&c[fss..])))
                .collect();
            label = format!("nak[{}]", reqs.join(","));
        }
        9 if body.len() >= 2 => {
            let what = if body[1] >> 7 == 1 {
                "keep_alive"
            } else {
                "nak"
            };
            label = format!("prompt({what})");
        }
        _ => {}
    }
    Ok(Fields { map, label })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_file_data_and_directives() {
        // version 1, file data, toward receiver, unacknowledged, no CRC;
        // 2-octet entity IDs, 4-octet sequence number.
        let mut fd = vec![0x34, 0, 7, 0x13, 0, 1, 0, 0, 0, 9, 0, 2];
        fd.extend_from_slice(&[0, 0, 4, 0, 0xaa, 0xbb, 0xcc]);
        let f = decode(&fd).unwrap();
        assert_eq!(f.label, "file_data[1024+3]");
        assert_eq!(f.counter_key(), "file_data");
        let mut want = Map::new();
        want.insert("pdu_type".into(), "file_data".into());
        want.insert("offset".into(), 1024.into());
        assert!(f.matches(&want));
        want.insert("offset".into(), 0.into());
        assert!(!f.matches(&want));

        let ack = [0x20, 0, 3, 0x13, 0, 2, 0, 0, 0, 9, 0, 1, 6, 0x40, 0xf1];
        let f = decode(&ack).unwrap();
        assert_eq!(f.label, "ack(eof,cancel_request_received)");
        assert_eq!(f.get_str("ack_of"), Some("eof"));

        let short = [0x20, 0, 9, 0x13];
        assert!(decode(&short).is_err());
    }
}
