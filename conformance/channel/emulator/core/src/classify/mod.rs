//! Field classifiers: turn one UDP payload into the flat field list that
//! impairment rules match on.
//!
//! The field names of every protocol are declared once, in
//! `specs/<proto>/wire.json` (compiled in here, and read by the Python side
//! when it validates a scenario). A classifier must only emit
//! names declared there; `tests::vocabulary_*` checks that, and the
//! property tests in `props` (proptest) check every classifier's output
//! against its wire.json on arbitrary and edited octets.

pub mod cfdp;
pub mod ltp;
pub mod norm;
pub mod saratoga;

#[cfg(test)]
mod props;

/// A field value: numbers, names of codes, flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A number.
    Int(u64),
    /// The name of a code.
    Str(&'static str),
    /// A flag.
    Bool(bool),
}

impl Value {
    /// Append the value as JSON.
    pub fn write_json(&self, out: &mut String) {
        match self {
            Value::Int(n) => crate::jsonw::write_u64(out, *n),
            Value::Str(s) => crate::jsonw::write_str(out, s),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        }
    }
}

/// The decoded fields of one segment/PDU/message/frame, in a fixed order.
pub type Fields = Vec<(&'static str, Value)>;

/// One protocol the emulator can classify: its name, its wire facts
/// (`specs/<proto>/wire.json`, compiled in) and its classifier.
#[derive(Debug)]
pub struct Classifier {
    /// The name used in configs, scenarios and logs.
    pub name: &'static str,
    /// The protocol's wire.json.
    pub wire: &'static str,
    /// One UDP payload -> its fields, `None` unless one well-formed unit.
    pub classify: fn(&[u8]) -> Option<Fields>,
}

/// The registry entry of protocol module `$p`: its name, its
/// `specs/$p/wire.json` and `$p::classify`.
macro_rules! classifier {
    ($p:ident) => {
        Classifier {
            name: stringify!($p),
            wire: include_str!(concat!(
                "../../../../../../specs/",
                stringify!($p),
                "/wire.json"
            )),
            classify: $p::classify,
        }
    };
}

/// The classifier registry: one line per protocol (and its `pub mod` above).
pub static CLASSIFIERS: &[Classifier] = &[
    classifier!(ltp),
    classifier!(cfdp),
    classifier!(norm),
    classifier!(saratoga),
];

/// A registered protocol (an index into [`CLASSIFIERS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Protocol(usize);

impl Protocol {
    /// The protocol of a name, if registered.
    pub fn from_name(s: &str) -> Option<Protocol> {
        CLASSIFIERS.iter().position(|c| c.name == s).map(Protocol)
    }

    /// The registered protocol `name`; panics when there is none (for
    /// names fixed in the code, such as tests').
    pub fn named(name: &str) -> Protocol {
        Protocol::from_name(name).unwrap_or_else(|| panic!("protocol {name} is not registered"))
    }

    /// Every registered protocol.
    pub fn all() -> impl Iterator<Item = Protocol> {
        (0..CLASSIFIERS.len()).map(Protocol)
    }

    fn entry(self) -> &'static Classifier {
        &CLASSIFIERS[self.0]
    }

    /// The name used in configs and logs.
    pub fn name(self) -> &'static str {
        self.entry().name
    }

    /// Classify one UDP payload; `None` when it is not a well-formed unit
    /// of this protocol (it is then forwarded as plain UDP, never counted).
    pub fn classify(self, payload: &[u8]) -> Option<Fields> {
        (self.entry().classify)(payload)
    }
}

/// A protocol's wire facts (`specs/<proto>/wire.json`), compiled in.
pub fn wire_json(p: Protocol) -> &'static str {
    p.entry().wire
}

/// Code table `table` of a protocol's wire.json (its `entries`, each with a
/// `code` and a `name`) as a name per code, `None` for codes it does not
/// list; a table with `other` (and `size`, the number of codes) names
/// every unlisted code below `size` so. Parse it once (a `OnceLock`), not
/// per frame.
pub fn code_names(p: Protocol, table: &str) -> Vec<Option<String>> {
    let v: serde_json::Value = serde_json::from_str(wire_json(p)).expect("wire.json is valid JSON");
    let entries = v[table]["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("specs/{}/wire.json: {table}.entries is a list", p.name()));
    let other = v[table]["other"].as_str();
    let size = v[table]["size"].as_u64().unwrap_or(0) as usize;
    let mut out: Vec<Option<String>> = vec![None; size];
    for e in entries {
        let code = e["code"].as_u64().expect("entries[].code: a number") as usize;
        let name = e["name"].as_str().expect("entries[].name: a string");
        if out.len() <= code {
            out.resize(code + 1, None);
        }
        assert!(out[code].is_none(), "{table}: code {code} listed twice");
        out[code] = Some(name.to_string());
    }
    if let Some(other) = other {
        for slot in out.iter_mut().filter(|s| s.is_none()) {
            *slot = Some(other.to_string());
        }
    }
    out
}

/// The name of `code` in code table `table` of protocol `proto`'s
/// wire.json, parsed into `cell` on first use (declare one `static`
/// `OnceLock` per table); `None` for a code the table does not list.
pub fn code_name(
    cell: &'static std::sync::OnceLock<Vec<Option<String>>>,
    proto: &str,
    table: &str,
    code: usize,
) -> Option<&'static str> {
    cell.get_or_init(|| code_names(Protocol::named(proto), table))
        .get(code)?
        .as_deref()
}

/// Declared field names of one protocol (`fields` of its wire.json).
pub fn vocabulary(p: Protocol) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(wire_json(p)).expect("wire.json is valid JSON");
    v["fields"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// Read a self-delimiting numeric value (SDNV, RFC 6256 / RFC 5326 §2) at
/// `*pos`; advance `*pos`. `None` on truncation or a value over 64 bits.
pub fn sdnv(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for i in 0..10 {
        let b = *buf.get(*pos + i)?;
        if v >> 57 != 0 {
            return None;
        }
        v = (v << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            *pos += i + 1;
            return Some(v);
        }
    }
    None
}

/// Bytes of a hex string (an even number of hex digits, nothing else).
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Big-endian unsigned integer of `n` bytes (n ≤ 8) at `pos`.
pub fn be(buf: &[u8], pos: usize, n: usize) -> Option<u64> {
    let s = buf.get(pos..pos + n)?;
    Some(s.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
}

/// Helpers shared by the classifiers' tests.
#[cfg(test)]
pub mod testutil {
    use super::Fields;
    use crate::rng::Rng;

    pub fn hex(s: &str) -> Vec<u8> {
        super::from_hex(s).expect("hex")
    }

    /// Feed `classify` `random` random buffers (up to `max_len` octets,
    /// then shaped by `steer` to look more like the protocol so the body
    /// parsers get exercised) and `mutated` samples with 1..=`max_edits`
    /// octets replaced: whatever comes in, it must return, never panic.
    pub fn never_panics(
        classify: fn(&[u8]) -> Option<Fields>,
        samples: &[Vec<u8>],
        (random, max_len): (usize, u64),
        (mutated, max_edits): (usize, u64),
        steer: impl Fn(&mut Vec<u8>, usize),
    ) {
        let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15, 0);
        let mut buf = Vec::new();
        for i in 0..random {
            buf.clear();
            let len = rng.below(max_len) as usize;
            buf.extend((0..len).map(|_| rng.next_u64() as u8));
            steer(&mut buf, i);
            let _ = classify(&buf);
        }
        for _ in 0..mutated {
            let mut m = samples[rng.below(samples.len() as u64) as usize].clone();
            for _ in 0..1 + rng.below(max_edits) {
                let at = rng.below(m.len() as u64) as usize;
                m[at] = rng.next_u64() as u8;
            }
            let _ = classify(&m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sdnv_examples_rfc6256() {
        // RFC 6256 §2.1 examples: 0xABC -> 0x95 0x3C; 0x1234 -> 0xA4 0x34;
        // 0x4234 -> 0x81 0x84 0x34; 0x7F -> 0x7F.
        for (bytes, want) in [
            (&[0x95u8, 0x3c][..], 0xabc_u64),
            (&[0xa4, 0x34][..], 0x1234),
            (&[0x81, 0x84, 0x34][..], 0x4234),
            (&[0x7f][..], 0x7f),
        ] {
            let mut pos = 0;
            assert_eq!(sdnv(bytes, &mut pos), Some(want));
            assert_eq!(pos, bytes.len());
        }
        let mut pos = 0;
        assert_eq!(sdnv(&[0x81, 0x80], &mut pos), None, "truncated");
    }

    fn check_vocabulary(p: Protocol, samples: &[Vec<u8>]) {
        let declared = vocabulary(p);
        assert!(!declared.is_empty(), "{} has no declared fields", p.name());
        for s in samples {
            let fields = p.classify(s).expect("sample classifies");
            for (name, _) in fields {
                assert!(
                    declared.iter().any(|d| d == name),
                    "{}: field {name} is not declared in its wire.json",
                    p.name()
                );
            }
        }
    }

    #[test]
    fn vocabulary_ltp() {
        check_vocabulary(Protocol::named("ltp"), &ltp::tests::samples());
    }

    #[test]
    fn vocabulary_cfdp() {
        check_vocabulary(Protocol::named("cfdp"), &cfdp::tests::samples());
    }

    #[test]
    fn vocabulary_norm() {
        check_vocabulary(Protocol::named("norm"), &norm::tests::samples());
    }

    #[test]
    fn vocabulary_saratoga() {
        check_vocabulary(Protocol::named("saratoga"), &saratoga::tests::samples());
    }
}
