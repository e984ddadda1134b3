//! Property tests (proptest) over every registered classifier: whatever
//! octets arrive, `classify` returns (never panics), and the fields it
//! returns agree with the protocol's wire.json: every name is declared in
//! `fields`, none twice, every value is of the kind `values` gives (read as
//! `conformance/core/classifiers.py` reads it), a code name agrees with its
//! companion code field, and no length field exceeds the datagram. LTP's
//! own checks ([`ltp::props::check_fields`]) run on what LTP accepts.

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;

use super::{cfdp, norm, saratoga};
use super::{code_names, ltp, wire_json, Fields, Protocol, Value};

/// What one field may equal (one entry of `values` in a wire.json).
#[derive(Debug)]
enum Allowed {
    Bool,
    /// An integer in `lo..=hi` ("uint", {"min", "max"}).
    Range(u64, u64),
    /// {"one_of": [...]}, {"codes_of": table}.
    OneOf(Vec<u64>),
    /// {"names": [...]}, {"table": T}; with "code", the companion integer
    /// field and the name of each of its codes.
    Names(Vec<String>, Option<(String, Vec<Option<String>>)>),
}

/// One protocol's declared fields and their allowed values.
#[derive(Debug)]
struct Facts {
    declared: HashSet<String>,
    allowed: HashMap<String, Allowed>,
}

fn ints(v: &serde_json::Value) -> Vec<u64> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|n| n.as_u64().expect("a number"))
        .collect()
}

/// The names of table `t` of wire.json `w`: a code table's entry names
/// (and its `other`), or the keys of a table of names (LTP's `kinds`).
fn table_names(w: &serde_json::Value, t: &str) -> Vec<String> {
    let data = &w[t];
    let mut names: Vec<String> = match data.get("entries") {
        Some(entries) => entries
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| e["name"].as_str().expect("name").to_string())
            .collect(),
        None => data.as_object().expect("a table").keys().cloned().collect(),
    };
    if let Some(other) = data["other"].as_str() {
        names.push(other.to_string());
    }
    names
}

fn facts(p: Protocol) -> Facts {
    let w: serde_json::Value = serde_json::from_str(wire_json(p)).expect("wire.json is JSON");
    let declared: HashSet<String> = w["fields"]
        .as_object()
        .expect("fields")
        .keys()
        .cloned()
        .collect();
    let mut allowed = HashMap::new();
    for (k, spec) in w["values"].as_object().expect("values") {
        let a = match spec {
            serde_json::Value::String(s) if s == "bool" => Allowed::Bool,
            serde_json::Value::String(s) if s == "uint" => Allowed::Range(0, u64::MAX),
            serde_json::Value::Object(m) if m.contains_key("one_of") => {
                Allowed::OneOf(ints(&m["one_of"]))
            }
            serde_json::Value::Object(m) if m.contains_key("codes_of") => {
                let t = m["codes_of"].as_str().expect("codes_of");
                Allowed::OneOf(
                    w[t]["entries"]
                        .as_array()
                        .expect("entries")
                        .iter()
                        .map(|e| e["code"].as_u64().expect("code"))
                        .collect(),
                )
            }
            serde_json::Value::Object(m) if m.contains_key("names") || m.contains_key("table") => {
                let names = match m.get("table") {
                    Some(t) => table_names(&w, t.as_str().expect("table")),
                    None => m["names"]
                        .as_array()
                        .expect("names")
                        .iter()
                        .map(|n| n.as_str().expect("a name").to_string())
                        .collect(),
                };
                let code = m.get("code").map(|c| {
                    let t = m["table"].as_str().expect("a code field goes with a table");
                    (c.as_str().expect("code").to_string(), code_names(p, t))
                });
                Allowed::Names(names, code)
            }
            serde_json::Value::Object(m) if m.contains_key("min") || m.contains_key("max") => {
                Allowed::Range(
                    m.get("min").map_or(0, |v| v.as_u64().expect("min")),
                    m.get("max").map_or(u64::MAX, |v| v.as_u64().expect("max")),
                )
            }
            other => panic!("{}: values.{k}: unknown spec {other}", p.name()),
        };
        allowed.insert(k.clone(), a);
    }
    Facts { declared, allowed }
}

/// The checks every classification of `payload` by `p` must pass.
fn check(p: Protocol, facts: &Facts, payload: &[u8], fields: &Fields) -> Result<(), TestCaseError> {
    let proto = p.name();
    let mut seen = HashSet::new();
    for (name, value) in fields {
        prop_assert!(
            facts.declared.contains(*name),
            "{proto}: undeclared field {name}"
        );
        prop_assert!(seen.insert(*name), "{proto}: field {name} twice");
        let ok = match (facts.allowed.get(*name), value) {
            (None, _) => true, // declared without a value type: any value
            (Some(Allowed::Bool), Value::Bool(_)) => true,
            (Some(Allowed::Range(lo, hi)), Value::Int(n)) => lo <= n && n <= hi,
            (Some(Allowed::OneOf(ok)), Value::Int(n)) => ok.contains(n),
            (Some(Allowed::Names(names, code)), Value::Str(s)) => {
                names.iter().any(|n| n == s)
                    && code.as_ref().is_none_or(|(code_field, by_code)| {
                        // The companion code field, when given, names `s`.
                        match fields.iter().find(|(n, _)| n == code_field) {
                            Some((_, Value::Int(c))) => {
                                usize::try_from(*c)
                                    .ok()
                                    .and_then(|c| by_code.get(c)?.as_deref())
                                    == Some(*s)
                            }
                            Some(_) => false,
                            None => true,
                        }
                    })
            }
            _ => false,
        };
        prop_assert!(
            ok,
            "{proto}: {name} = {value:?} is not what wire.json allows"
        );
        // A length of part of the datagram cannot exceed the datagram.
        if *name == "length" || name.ends_with("_length") {
            if let Value::Int(n) = value {
                prop_assert!(
                    *n <= payload.len() as u64,
                    "{proto}: {name} {n} in {} octets",
                    payload.len()
                );
            }
        }
    }
    if proto == "ltp" {
        ltp::props::check_fields(payload, fields)?;
    }
    Ok(())
}

/// Classify `payload` as every protocol, checking what is accepted.
fn classify_all(all: &[(Protocol, Facts)], payload: &[u8]) -> Result<usize, TestCaseError> {
    let mut accepted = 0;
    for (p, facts) in all {
        if let Some(fields) = p.classify(payload) {
            check(*p, facts, payload, &fields)?;
            accepted += 1;
        }
    }
    Ok(accepted)
}

fn all_facts() -> Vec<(Protocol, Facts)> {
    Protocol::all().map(|p| (p, facts(p))).collect()
}

/// Every classifier's real samples.
fn samples() -> Vec<Vec<u8>> {
    [
        ltp::tests::samples(),
        cfdp::tests::samples(),
        norm::tests::samples(),
        saratoga::tests::samples(),
    ]
    .concat()
}

#[test]
fn every_protocol_has_samples_here() {
    // `samples` must grow with the registry.
    assert_eq!(Protocol::all().count(), 4);
    for p in Protocol::all() {
        assert!(
            samples().iter().any(|s| p.classify(s).is_some()),
            "{}",
            p.name()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    /// Arbitrary octets, 0 to 1999 of them (often short, where a header
    /// can be complete), through every classifier.
    #[test]
    fn arbitrary_octets_never_panic_and_fields_agree_with_wire_json(
        payload in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..2000),
            prop::collection::vec(any::<u8>(), 0..40),
        ],
    ) {
        thread_local!(static ALL: Vec<(Protocol, Facts)> = all_facts());
        ALL.with(|all| classify_all(all, &payload))?;
    }

    /// The real samples of every protocol with 1-4 octets replaced and
    /// maybe cut short or extended, through every classifier: most
    /// variants still classify, so the field checks get exercised.
    #[test]
    fn edited_samples_never_panic_and_fields_agree_with_wire_json(
        which in any::<Index>(),
        edits in prop::collection::vec((any::<Index>(), any::<u8>()), 1..5),
        end in prop_oneof![
            2 => Just(None),
            1 => any::<Index>().prop_map(Some),
        ],
        extra in prop::collection::vec(any::<u8>(), 0..3),
    ) {
        thread_local!(static SAMPLES: Vec<Vec<u8>> = samples());
        thread_local!(static ALL: Vec<(Protocol, Facts)> = all_facts());
        let mut payload = SAMPLES.with(|s| s[which.index(s.len())].clone());
        for (at, b) in edits {
            let i = at.index(payload.len());
            payload[i] = b;
        }
        if let Some(end) = end {
            payload.truncate(end.index(payload.len()));
        }
        payload.extend_from_slice(&extra);
        ALL.with(|all| classify_all(all, &payload))?;
    }
}
