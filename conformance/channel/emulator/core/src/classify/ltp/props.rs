//! Property tests (proptest) of the LTP classifier.
//!
//! A [`Segment`] is a model of one well-formed LTP segment (RFC 5326 §3),
//! generated for every segment type code of §3.1.2 as listed by
//! `specs/ltp/wire.json` and encoded here by the test's own encoder (RFC
//! 6256 §3.1 SDNVs, with the leftmost zero-padding §2 and §3.1 allow).
//! The properties:
//!
//! * a well-formed segment classifies to its type and the field values that
//!   were encoded (the expected [`Fields`] are built from the model and from
//!   wire.json, not from the classifier);
//! * every strict prefix of a well-formed segment, and the segment with
//!   octets appended, is rejected (`None`, the classifier's only verdict on
//!   malformed input), and so is a segment of a version other than 0;
//! * an SDNV longer than wire.json's `sdnv.max_bytes`, anywhere in a
//!   segment, makes it rejected; [`sdnv`] itself reads every padded
//!   encoding up to that length and refuses longer ones and values over 64
//!   bits;
//! * segments with octets replaced never make `classify` panic, and what
//!   it returns satisfies [`check_fields`] (also applied to arbitrary octets
//!   by `classify::props`).

use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;

use super::classify;
use crate::classify::{sdnv, wire_json, Fields, Protocol, Value};

/// One row of wire.json's `segment_types` (RFC 5326 §3.1.2), read by the
/// test itself.
#[derive(Debug)]
struct TypeRow {
    name: String,
    kind: String,
    red: bool,
    checkpoint: bool,
    eorp: bool,
    eob: bool,
}

/// The LTP wire facts the properties use.
#[derive(Debug)]
struct Wire {
    /// `sdnv.max_bytes`: the longest SDNV accepted (RFC 6256 §3.3 lets a
    /// protocol bound it; 10 octets hold 64 bits).
    max_sdnv: usize,
    /// `segment_types.entries`, indexed by code.
    types: Vec<TypeRow>,
    /// `cancel_reasons.entries[].code` (RFC 5326 §3.2.4).
    reasons: Vec<u8>,
}

fn wire() -> &'static Wire {
    static WIRE: OnceLock<Wire> = OnceLock::new();
    WIRE.get_or_init(|| {
        let v: serde_json::Value =
            serde_json::from_str(wire_json(Protocol::named("ltp"))).expect("wire.json is JSON");
        let max_sdnv = v["sdnv"]["max_bytes"].as_u64().expect("sdnv.max_bytes") as usize;
        let mut types: Vec<Option<TypeRow>> = (0..16).map(|_| None).collect();
        for e in v["segment_types"]["entries"].as_array().expect("entries") {
            let code = e["code"].as_u64().expect("code") as usize;
            let s = |k: &str| e[k].as_str().expect("a string").to_string();
            let b = |k: &str| e[k].as_bool().expect("a flag");
            // §3.1.2: the type code is the 4-bit low nibble of the control byte.
            assert!(code < 16 && types[code].is_none(), "segment type {code}");
            types[code] = Some(TypeRow {
                name: s("name"),
                kind: s("kind"),
                red: b("red"),
                checkpoint: b("checkpoint"),
                eorp: b("eorp"),
                eob: b("eob"),
            });
        }
        let reasons = v["cancel_reasons"]["entries"]
            .as_array()
            .expect("cancel_reasons.entries")
            .iter()
            .map(|e| e["code"].as_u64().expect("code") as u8)
            .collect();
        Wire {
            max_sdnv,
            types: types
                .into_iter()
                .map(|t| t.expect("wire.json lists all 16 type codes"))
                .collect(),
            reasons,
        }
    })
}

// ---------------------------------------------------------------------------
// The model and its encoder.

/// An SDNV field: its value and how many leftmost zero-padding octets
/// (0x80, RFC 6256 §3.1 last paragraph) the encoder puts before the minimal
/// encoding, capped so the whole stays within `sdnv.max_bytes`.
#[derive(Debug, Clone, Copy)]
struct Sdnv {
    value: u64,
    pad: usize,
}

/// Octets of the minimal SDNV encoding of `v` (7 value bits per octet).
fn minimal_len(v: u64) -> usize {
    let bits = 64 - v.leading_zeros() as usize;
    bits.div_ceil(7).max(1)
}

/// Append `v` as an SDNV of exactly `width` octets (`width` at least
/// [`minimal_len`]): 7-bit groups, most significant first, the high bit set
/// on every octet but the last (RFC 6256 §2, §3.1; RFC 5326 §2 (20)).
fn put_sdnv(out: &mut Vec<u8>, v: u64, width: usize) {
    assert!(width >= minimal_len(v));
    for i in (0..width).rev() {
        let group = if 7 * i < 64 { (v >> (7 * i)) & 0x7f } else { 0 };
        out.push(group as u8 | if i > 0 { 0x80 } else { 0 });
    }
}

/// An extension TLV (RFC 5326 §3.1.4): tag octet, SDNV length, value.
#[derive(Debug, Clone)]
struct Ext {
    tag: u8,
    len_pad: usize,
    value: Vec<u8>,
}

/// Segment content (RFC 5326 §3.2), by the kind of the type code.
#[derive(Debug, Clone)]
enum Content {
    /// §3.2.1: client service ID, offset, length, the two serial numbers
    /// (checkpoint, report) of a checkpoint, client service data.
    Data {
        client_service_id: Sdnv,
        offset: Sdnv,
        length_pad: usize,
        serials: Option<(Sdnv, Sdnv)>,
        data: Vec<u8>,
    },
    /// §3.2.2: report serial, checkpoint serial, upper bound, lower bound,
    /// claim count, claims (offset, length).
    Report {
        report_serial: Sdnv,
        checkpoint_serial: Sdnv,
        upper: Sdnv,
        lower: Sdnv,
        count_pad: usize,
        claims: Vec<(Sdnv, Sdnv)>,
    },
    /// §3.2.3: the report serial number.
    ReportAck { report_serial: Sdnv },
    /// §3.2.4: one reason-code octet (CS, CR).
    Cancel { reason: u8 },
    /// §3.2.4 CAS, CAR ("no content"), and the undefined control types 10
    /// and 11, for which §3.1.2 defines no content.
    Empty,
}

/// One well-formed LTP segment (RFC 5326 §3).
#[derive(Debug, Clone)]
struct Segment {
    code: u8,
    originator: Sdnv,
    session: Sdnv,
    header: Vec<Ext>,
    trailer: Vec<Ext>,
    content: Content,
}

/// The encoder; it can write SDNV number `overlong.0` (in encoding order)
/// `overlong.1` octets wide instead of its own width.
struct Enc {
    out: Vec<u8>,
    max: usize,
    n: usize,
    overlong: Option<(usize, usize)>,
}

impl Enc {
    fn sdnv_pad(&mut self, value: u64, pad: usize) {
        let width = match self.overlong {
            Some((i, w)) if i == self.n => w,
            _ => (minimal_len(value) + pad).min(self.max),
        };
        put_sdnv(&mut self.out, value, width);
        self.n += 1;
    }

    fn sdnv(&mut self, s: Sdnv) {
        self.sdnv_pad(s.value, s.pad);
    }

    fn exts(&mut self, exts: &[Ext]) {
        for e in exts {
            self.out.push(e.tag);
            self.sdnv_pad(e.value.len() as u64, e.len_pad);
            self.out.extend_from_slice(&e.value);
        }
    }
}

impl Segment {
    /// The segment's octets, and how many SDNVs they hold.
    fn encode_with(&self, overlong: Option<(usize, usize)>) -> (Vec<u8>, usize) {
        let mut e = Enc {
            out: Vec::new(),
            max: wire().max_sdnv,
            n: 0,
            overlong,
        };
        // §3.1: control byte (version 0000, type flags), session ID,
        // extension counts (header high nibble, trailer low nibble, §3.1.4).
        e.out.push(self.code);
        e.sdnv(self.originator);
        e.sdnv(self.session);
        e.out
            .push(((self.header.len() as u8) << 4) | self.trailer.len() as u8);
        e.exts(&self.header);
        match &self.content {
            Content::Data {
                client_service_id,
                offset,
                length_pad,
                serials,
                data,
            } => {
                e.sdnv(*client_service_id);
                e.sdnv(*offset);
                e.sdnv_pad(data.len() as u64, *length_pad);
                if let Some((checkpoint, report)) = serials {
                    e.sdnv(*checkpoint);
                    e.sdnv(*report);
                }
                e.out.extend_from_slice(data);
            }
            Content::Report {
                report_serial,
                checkpoint_serial,
                upper,
                lower,
                count_pad,
                claims,
            } => {
                e.sdnv(*report_serial);
                e.sdnv(*checkpoint_serial);
                e.sdnv(*upper);
                e.sdnv(*lower);
                e.sdnv_pad(claims.len() as u64, *count_pad);
                for (offset, length) in claims {
                    e.sdnv(*offset);
                    e.sdnv(*length);
                }
            }
            Content::ReportAck { report_serial } => e.sdnv(*report_serial),
            Content::Cancel { reason } => e.out.push(*reason),
            Content::Empty => {}
        }
        // §3.3: the trailer extensions close the segment.
        e.exts(&self.trailer);
        (e.out, e.n)
    }

    fn encode(&self) -> Vec<u8> {
        self.encode_with(None).0
    }

    /// The fields `classify` must return, in its documented order.
    fn expected(&self) -> Fields {
        let row = &wire().types[usize::from(self.code)];
        let mut f: Fields = vec![
            ("type", Value::Str(&row.name)),
            ("type_code", Value::Int(u64::from(self.code))),
            ("kind", Value::Str(&row.kind)),
            ("red", Value::Bool(row.red)),
            ("checkpoint", Value::Bool(row.checkpoint)),
            ("eorp", Value::Bool(row.eorp)),
            ("eob", Value::Bool(row.eob)),
            ("session_originator", Value::Int(self.originator.value)),
            ("session_number", Value::Int(self.session.value)),
        ];
        let mut push = |name, v: u64| f.push((name, Value::Int(v)));
        match &self.content {
            Content::Data {
                client_service_id,
                offset,
                serials,
                data,
                ..
            } => {
                push("client_service_id", client_service_id.value);
                push("offset", offset.value);
                if let Some((checkpoint, report)) = serials {
                    push("checkpoint_serial", checkpoint.value);
                    push("report_serial", report.value);
                }
                push("length", data.len() as u64);
            }
            Content::Report {
                report_serial,
                checkpoint_serial,
                upper,
                lower,
                claims,
                ..
            } => {
                push("checkpoint_serial", checkpoint_serial.value);
                push("report_serial", report_serial.value);
                push("upper_bound", upper.value);
                push("lower_bound", lower.value);
                push("claim_count", claims.len() as u64);
            }
            Content::ReportAck { report_serial } => push("report_serial", report_serial.value),
            Content::Cancel { reason } => push("reason", u64::from(*reason)),
            Content::Empty => {}
        }
        f
    }
}

// ---------------------------------------------------------------------------
// Strategies.

/// SDNV values, weighted toward the edges of the 7-bit groups (2^k - 1 and
/// 2^k, where the encoding gains an octet) and small numbers.
fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => any::<u64>(),
        2 => 0u64..300,
        2 => (1u32..=64).prop_map(|k| u64::MAX >> (64 - k)),
        2 => (0u32..64).prop_map(|k| 1u64 << k),
    ]
}

/// Zero-padding octets before a minimal SDNV: mostly none, as encoders
/// write them.
fn pad() -> impl Strategy<Value = usize> {
    prop_oneof![3 => Just(0usize), 1 => 1usize..10]
}

fn sdnv_field(v: impl Strategy<Value = u64>) -> impl Strategy<Value = Sdnv> {
    (v, pad()).prop_map(|(value, pad)| Sdnv { value, pad })
}

fn any_sdnv() -> impl Strategy<Value = Sdnv> {
    sdnv_field(value())
}

/// A serial number the RFC says MUST NOT be zero (checkpoint serial of a
/// checkpoint, §3.2.1; report serial of an RS, §3.2.2, and so of its RA).
fn nonzero_sdnv() -> impl Strategy<Value = Sdnv> {
    sdnv_field(value().prop_map(|v| v.max(1)))
}

fn ext() -> impl Strategy<Value = Ext> {
    // §3.1.4: any tag octet (assigned, unassigned, reserved or private).
    (
        any::<u8>(),
        pad(),
        prop::collection::vec(any::<u8>(), 0..12),
    )
        .prop_map(|(tag, len_pad, value)| Ext {
            tag,
            len_pad,
            value,
        })
}

/// 0 to 15 extensions (§3.1.4: a 4-bit count), most often none.
fn exts() -> impl Strategy<Value = Vec<Ext>> {
    prop_oneof![
        2 => Just(Vec::new()),
        1 => prop::collection::vec(ext(), 1..=15),
    ]
}

/// Report content obeying §3.2.2's claim rules: one or more claims, each of
/// length at least 1, each offset greater than the end of the previous
/// claim, the last ending at or below upper bound - lower bound.
fn report() -> impl Strategy<Value = Content> {
    (
        nonzero_sdnv(),
        any_sdnv(),
        (0u64..=u64::MAX / 2, pad(), pad()),
        prop::collection::vec((0u64..5000, 1u64..5000, pad(), pad()), 1..8),
        (0u64..5000),
        pad(),
    )
        .prop_map(
            |(
                report_serial,
                checkpoint_serial,
                (lower, lower_pad, upper_pad),
                raw,
                slack,
                count_pad,
            )| {
                let mut end = 0u64;
                let mut claims = Vec::new();
                for (i, (gap, len, op, lp)) in raw.into_iter().enumerate() {
                    let offset = if i == 0 { gap } else { end + 1 + gap };
                    end = offset + len;
                    claims.push((
                        Sdnv {
                            value: offset,
                            pad: op,
                        },
                        Sdnv {
                            value: len,
                            pad: lp,
                        },
                    ));
                }
                Content::Report {
                    report_serial,
                    checkpoint_serial,
                    upper: Sdnv {
                        value: lower + end + slack,
                        pad: upper_pad,
                    },
                    lower: Sdnv {
                        value: lower,
                        pad: lower_pad,
                    },
                    count_pad,
                    claims,
                }
            },
        )
}

/// The content of a segment of type `code`, by its wire.json kind.
fn content(code: u8) -> BoxedStrategy<Content> {
    let row = &wire().types[usize::from(code)];
    match row.kind.as_str() {
        // §3.2.1. Codes 5 and 6 are undefined green data (§3.1.2);
        // wire.json files them as green_data and the classifier and the
        // Python dissector read them with the data segment layout.
        "red_data" | "green_data" => {
            let serials = if row.checkpoint {
                // §3.2.1: the report serial is zero or an RS's serial.
                (nonzero_sdnv(), any_sdnv()).prop_map(Some).boxed()
            } else {
                Just(None).boxed()
            };
            (
                any_sdnv(),
                any_sdnv(),
                pad(),
                serials,
                prop::collection::vec(any::<u8>(), 0..64),
            )
                .prop_map(
                    |(client_service_id, offset, length_pad, serials, data)| Content::Data {
                        client_service_id,
                        offset,
                        length_pad,
                        serials,
                        data,
                    },
                )
                .boxed()
        }
        "report" => report().boxed(),
        "report_ack" => nonzero_sdnv()
            .prop_map(|report_serial| Content::ReportAck { report_serial })
            .boxed(),
        // §3.2.4: the defined reason codes, or a reserved one (06-FF),
        // which is still one octet to report.
        "cancel" => prop_oneof![prop::sample::select(wire().reasons.clone()), any::<u8>()]
            .prop_map(|reason| Content::Cancel { reason })
            .boxed(),
        "cancel_ack" | "undefined" => Just(Content::Empty).boxed(),
        k => panic!("wire.json segment type {code}: unknown kind {k}"),
    }
}

/// Well-formed segments of every type code wire.json lists (0-15).
fn segment() -> impl Strategy<Value = Segment> {
    (0u8..wire().types.len() as u8).prop_flat_map(|code| {
        (any_sdnv(), any_sdnv(), exts(), exts(), content(code)).prop_map(
            move |(originator, session, header, trailer, content)| Segment {
                code,
                originator,
                session,
                header,
                trailer,
                content,
            },
        )
    })
}

// ---------------------------------------------------------------------------
// What any classification must satisfy.

fn field<'a>(fields: &'a Fields, name: &str) -> Option<&'a Value> {
    fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
}

fn int(fields: &Fields, name: &str) -> Option<u64> {
    match field(fields, name) {
        Some(Value::Int(n)) => Some(*n),
        _ => None,
    }
}

/// LTP's own checks of one classification of `payload` (the generic ones,
/// names and value ranges against wire.json, are in `classify::props`):
/// the type is the control byte's low nibble (§3.1, §3.1.2) and its name,
/// kind and flags are wire.json's row for it; exactly the fields of that
/// kind's layout (§3.2) are present; a data segment's length and an RS's
/// claims fit in the datagram.
pub fn check_fields(payload: &[u8], fields: &Fields) -> Result<(), TestCaseError> {
    prop_assert!(!payload.is_empty());
    prop_assert!(fields.len() >= 9, "{:?}", fields);
    prop_assert_eq!(payload[0] >> 4, 0, "accepted a version other than 0");
    let code = payload[0] & 0x0f;
    let row = &wire().types[usize::from(code)];
    prop_assert_eq!(
        &fields[..7],
        &[
            ("type", Value::Str(&row.name)),
            ("type_code", Value::Int(u64::from(code))),
            ("kind", Value::Str(&row.kind)),
            ("red", Value::Bool(row.red)),
            ("checkpoint", Value::Bool(row.checkpoint)),
            ("eorp", Value::Bool(row.eorp)),
            ("eob", Value::Bool(row.eob)),
        ][..]
    );
    let names: Vec<&str> = fields.iter().map(|(n, _)| *n).collect();
    let layout: &[&str] = match row.kind.as_str() {
        "red_data" | "green_data" if row.checkpoint => &[
            "client_service_id",
            "offset",
            "checkpoint_serial",
            "report_serial",
            "length",
        ],
        "red_data" | "green_data" => &["client_service_id", "offset", "length"],
        "report" => &[
            "checkpoint_serial",
            "report_serial",
            "upper_bound",
            "lower_bound",
            "claim_count",
        ],
        "report_ack" => &["report_serial"],
        "cancel" => &["reason"],
        _ => &[],
    };
    prop_assert_eq!(&names[7..9], &["session_originator", "session_number"][..]);
    prop_assert_eq!(&names[9..], layout, "fields of a {} segment", row.name);
    // Control byte, two SDNVs, extension counts: at least 4 octets; then a
    // data segment's three SDNVs (or five) and `length` octets of data.
    if let Some(length) = int(fields, "length") {
        let min = 4 + if row.checkpoint { 5 } else { 3 };
        prop_assert!(length + min <= payload.len() as u64, "length {length}");
    }
    // An RS: five SDNVs before the claims, each claim two SDNVs.
    if let Some(count) = int(fields, "claim_count") {
        prop_assert!(4 + 5 + 2 * count <= payload.len() as u64, "claims {count}");
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The properties.

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// A well-formed segment classifies to its type and the values encoded.
    #[test]
    fn well_formed_segments_round_trip(seg in segment()) {
        let bytes = seg.encode();
        let got = classify(&bytes);
        prop_assert_eq!(got.as_ref(), Some(&seg.expected()), "segment {:02x?}", bytes);
        check_fields(&bytes, got.as_ref().unwrap())?;
    }

    /// Cutting a well-formed segment short is always malformed: every item
    /// after the control byte is delimited by the octets before it (SDNVs
    /// by their last octet's high bit, RFC 6256 §2; data and extension
    /// values by their length field, RFC 5326 §3.2.1 and §3.1.4; claims by
    /// the claim count, §3.2.2; the trailer by the extension count, §3.1.4
    /// and §3.3), so no strict prefix of a segment is a segment, and the
    /// classifier must say `None` for all of them (a data segment cut
    /// inside its data still declares the full length, so no truncation is
    /// legitimately accepted). Checked at a random cut and one octet short.
    #[test]
    fn truncated_segments_are_rejected(seg in segment(), cut in any::<Index>()) {
        let bytes = seg.encode();
        let n = cut.index(bytes.len());
        prop_assert_eq!(classify(&bytes[..n]), None, "prefix {} of {:02x?}", n, bytes);
        prop_assert_eq!(classify(&bytes[..bytes.len() - 1]), None, "one short: {:02x?}", bytes);
    }

    /// One segment per datagram, the whole datagram consumed (the
    /// classifier's acceptance, as for ION's udplsi): octets after the last
    /// trailer extension are rejected.
    #[test]
    fn trailing_octets_are_rejected(
        seg in segment(),
        extra in prop::collection::vec(any::<u8>(), 1..8),
    ) {
        let mut bytes = seg.encode();
        bytes.extend_from_slice(&extra);
        prop_assert_eq!(classify(&bytes), None, "{:02x?}", bytes);
    }

    /// §3.1: the version number MUST be 0000; a segment with any other
    /// version is not one this classifier reads.
    #[test]
    fn nonzero_version_is_rejected(seg in segment(), version in 1u8..16) {
        let mut bytes = seg.encode();
        bytes[0] |= version << 4;
        prop_assert_eq!(classify(&bytes), None, "{:02x?}", bytes);
    }

    /// Any one SDNV of a segment (session ID, content, extension lengths)
    /// written longer than wire.json's `sdnv.max_bytes` (RFC 6256 §3.3: the
    /// protocol bounds SDNV width; RFC 5326 §2 (20)) makes it rejected,
    /// even when the value itself fits in 64 bits (zero-padding).
    #[test]
    fn overlong_sdnv_is_rejected(seg in segment(), which in any::<Index>(), over in 1usize..8) {
        let (_, count) = seg.encode_with(None);
        let i = which.index(count);
        let (bytes, _) = seg.encode_with(Some((i, wire().max_sdnv + over)));
        prop_assert_eq!(classify(&bytes), None, "SDNV {} of {:02x?}", i, bytes);
    }

    /// Well-formed segments with 1-4 octets replaced: `classify` returns,
    /// and whatever it accepts passes [`check_fields`].
    #[test]
    fn edited_segments_stay_consistent(
        seg in segment(),
        edits in prop::collection::vec((any::<Index>(), any::<u8>()), 1..5),
    ) {
        let mut bytes = seg.encode();
        for (at, b) in edits {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        if let Some(fields) = classify(&bytes) {
            check_fields(&bytes, &fields)?;
        }
    }

    /// [`sdnv`] reads an encoding of any width from minimal to
    /// `sdnv.max_bytes` (leading 0x80 octets are zero-padding, RFC 6256
    /// §3.1, §3.2) and stops right after it; one octet wider is refused.
    #[test]
    fn sdnv_reads_padded_encodings_up_to_the_limit(
        v in value(),
        extra in 0usize..10,
        tail in prop::collection::vec(any::<u8>(), 0..4),
    ) {
        let max = wire().max_sdnv;
        prop_assume!(minimal_len(v) <= max);
        let width = (minimal_len(v) + extra).min(max);
        let mut buf = Vec::new();
        put_sdnv(&mut buf, v, width);
        buf.extend_from_slice(&tail);
        let mut pos = 0;
        prop_assert_eq!(sdnv(&buf, &mut pos), Some(v));
        prop_assert_eq!(pos, width);

        let mut long = Vec::new();
        put_sdnv(&mut long, v, max + 1);
        let mut pos = 0;
        prop_assert_eq!(sdnv(&long, &mut pos), None, "{:02x?}", long);
        prop_assert_eq!(pos, 0);
    }

    /// Values of 2^64 and more in 10 octets (70 bits) are refused: the
    /// fields are 64-bit (RFC 6256 §3.3; wire.json `sdnv.note`).
    #[test]
    fn sdnv_over_64_bits_is_refused(
        high in 2u8..0x80,
        low in any::<u64>().prop_map(|v| v >> 1),
        tail in prop::collection::vec(any::<u8>(), 0..4),
    ) {
        // `high` is the top 7-bit group (bits 63-69, at least 2^64), `low`
        // the nine groups below it (63 bits).
        let mut buf = vec![0x80 | high];
        put_sdnv(&mut buf, low, 9);
        buf.extend_from_slice(&tail);
        let mut pos = 0;
        prop_assert_eq!(sdnv(&buf, &mut pos), None, "{:02x?}", buf);
    }
}
