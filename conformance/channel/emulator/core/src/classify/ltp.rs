//! LTP segment classifier (RFC 5326 §3).
//!
//! One segment per UDP datagram (as ION's udplso/udplsi and licklider send
//! them). The field names are those declared in `specs/ltp/wire.json`, and
//! the segment type names, kinds and flags come from its `segment_types`
//! table (read once, at the first classification). The Python side
//! classifies captured segments to the same fields;
//! `conformance/tests/test_emulator_classify.py` checks that the two agree
//! on every captured segment.
//!
//! Acceptance: version 0 only, every SDNV complete, every length inside
//! the datagram and the whole datagram consumed. An SDNV whose value does
//! not fit in 64 bits is rejected, since the field values are `u64`.

use std::sync::OnceLock;

use super::{sdnv, wire_json, Fields, Protocol, Value};

/// One row of `segment_types.entries` in `specs/ltp/wire.json` (RFC 5326
/// §3.1.2): what the 4-bit type code (the low nibble of the control byte)
/// means.
#[derive(Debug)]
struct SegmentType {
    name: String,
    kind: String,
    red: bool,
    checkpoint: bool,
    eorp: bool,
    eob: bool,
}

/// The 16 segment types by code, parsed from the compiled-in wire.json on
/// first use (no JSON work per frame after that).
fn segment_types() -> &'static [SegmentType] {
    static TABLE: OnceLock<Vec<SegmentType>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let v: serde_json::Value = serde_json::from_str(wire_json(Protocol::named("ltp")))
            .expect("specs/ltp/wire.json is JSON");
        let mut rows: Vec<(u64, SegmentType)> = v["segment_types"]["entries"]
            .as_array()
            .expect("specs/ltp/wire.json: segment_types.entries is a list")
            .iter()
            .map(|e| {
                let text = |k: &str| {
                    e[k].as_str()
                        .unwrap_or_else(|| panic!("segment_types.entries[].{k}: a string"))
                        .to_string()
                };
                let flag = |k: &str| e[k].as_bool().unwrap_or(false);
                let code = e["code"]
                    .as_u64()
                    .expect("segment_types.entries[].code: a number");
                (
                    code,
                    SegmentType {
                        name: text("name"),
                        kind: text("kind"),
                        red: flag("red"),
                        checkpoint: flag("checkpoint"),
                        eorp: flag("eorp"),
                        eob: flag("eob"),
                    },
                )
            })
            .collect();
        rows.sort_by_key(|(code, _)| *code);
        assert!(
            rows.iter().map(|(c, _)| *c).eq(0..16),
            "specs/ltp/wire.json: segment_types must list codes 0..15 once each"
        );
        rows.into_iter().map(|(_, t)| t).collect()
    })
}

/// Skip `count` extensions (RFC 5326 §3.1.4 header extensions, §3.3
/// trailer extensions): each is a one-octet tag, an SDNV length and that
/// many octets of value.
fn skip_extensions(buf: &[u8], pos: &mut usize, count: u8) -> Option<()> {
    for _ in 0..count {
        buf.get(*pos)?; // extension tag
        *pos += 1;
        let len = sdnv(buf, pos)?;
        *pos = end_within(buf, *pos, len)?;
    }
    Some(())
}

/// `pos + len` when that stays inside `buf`.
fn end_within(buf: &[u8], pos: usize, len: u64) -> Option<usize> {
    let end = pos.checked_add(usize::try_from(len).ok()?)?;
    (end <= buf.len()).then_some(end)
}

/// Classify one UDP payload as an LTP segment; `None` unless it is exactly
/// one well-formed segment.
pub fn classify(payload: &[u8]) -> Option<Fields> {
    // §3.1 segment header: control byte (version, type flags).
    let control = *payload.first()?;
    if control >> 4 != 0 {
        return None; // §3.1: version number 0
    }
    let t = control & 0x0f;
    let mut pos = 1;
    // §3.1.4 session ID: session originator engine ID, session number.
    let originator = sdnv(payload, &mut pos)?;
    let session = sdnv(payload, &mut pos)?;
    // §3.1 extension counts: header (high nibble), trailer (low nibble).
    let counts = *payload.get(pos)?;
    pos += 1;
    skip_extensions(payload, &mut pos, counts >> 4)?;

    let mut client_service_id = None;
    let mut offset = None;
    let mut length = None;
    let mut checkpoint_serial = None;
    let mut report_serial = None;
    let mut upper_bound = None;
    let mut lower_bound = None;
    let mut claim_count = None;
    let mut reason = None;
    match t {
        // §3.2.1 data segment: client service ID, offset, length, then for
        // checkpoints (types 1-3) checkpoint and report serial numbers, then
        // the client service data.
        0..=7 => {
            client_service_id = Some(sdnv(payload, &mut pos)?);
            offset = Some(sdnv(payload, &mut pos)?);
            let len = sdnv(payload, &mut pos)?;
            if (1..=3).contains(&t) {
                checkpoint_serial = Some(sdnv(payload, &mut pos)?);
                report_serial = Some(sdnv(payload, &mut pos)?);
            }
            pos = end_within(payload, pos, len)?;
            length = Some(len);
        }
        // §3.2.2 report segment: report serial, checkpoint serial, upper
        // bound, lower bound, reception claim count, then the claims (each
        // an offset and a length).
        8 => {
            report_serial = Some(sdnv(payload, &mut pos)?);
            checkpoint_serial = Some(sdnv(payload, &mut pos)?);
            upper_bound = Some(sdnv(payload, &mut pos)?);
            lower_bound = Some(sdnv(payload, &mut pos)?);
            let count = sdnv(payload, &mut pos)?;
            // A sanity bound: no more claims than octets.
            if count > payload.len() as u64 {
                return None;
            }
            for _ in 0..count {
                sdnv(payload, &mut pos)?; // claim offset
                sdnv(payload, &mut pos)?; // claim length
            }
            claim_count = Some(count);
        }
        // §3.2.3 report-acknowledgment segment: the report serial number.
        9 => report_serial = Some(sdnv(payload, &mut pos)?),
        // §3.2.4 cancel segments (CS, CR): one reason-code octet.
        12 | 14 => {
            reason = Some(u64::from(*payload.get(pos)?));
            pos += 1;
        }
        // §3.2.5 CAS/CAR, and the undefined control types 10 and 11: no content.
        _ => {}
    }
    // §3.3 trailer extensions, then nothing may remain.
    skip_extensions(payload, &mut pos, counts & 0x0f)?;
    if pos != payload.len() {
        return None;
    }

    let st = &segment_types()[usize::from(t)];
    let mut f: Fields = vec![
        ("type", Value::Str(&st.name)),
        ("type_code", Value::Int(u64::from(t))),
        ("kind", Value::Str(&st.kind)),
        ("red", Value::Bool(st.red)),
        ("checkpoint", Value::Bool(st.checkpoint)),
        ("eorp", Value::Bool(st.eorp)),
        ("eob", Value::Bool(st.eob)),
        ("session_originator", Value::Int(originator)),
        ("session_number", Value::Int(session)),
    ];
    // Optional fields, in the order the Python side lists them.
    for (name, v) in [
        ("client_service_id", client_service_id),
        ("offset", offset),
        ("checkpoint_serial", checkpoint_serial),
        ("report_serial", report_serial),
        ("upper_bound", upper_bound),
        ("lower_bound", lower_bound),
        ("reason", reason),
        ("length", length),
        ("claim_count", claim_count),
    ] {
        if let Some(v) = v {
            f.push((name, Value::Int(v)));
        }
    }
    Some(f)
}

#[cfg(test)]
pub mod props;

#[cfg(test)]
pub mod tests {
    use super::super::Value::{Bool as B, Int as I, Str as S};
    use super::super::{Fields, Value};
    use super::classify;

    // Real segments: UDP payloads (port 1113) of the captures in
    // reports/findings/captures/ — licklider-core 0.1.1 traffic, and the
    // hand-built segments of the wireshark-4.0.17-ltp-* findings.
    // licklider-0.1.1-first-cs-not-acknowledged-receiver-side.pcap frame 5
    pub const RD: &str = "00018db5d3887f00010087680726456483a2c1e004234261809fbedd01203f5e7d9cbbdaf91d3c5b7a99b8d7f61a39587796b5d4f31736557493b2d1f01433527190afceed11304f6e8daccbea0e2d4c6b8aa9c8e70b2a496887a6c5e40827466584a3c2e10524436281a0bfde0221405f7e9dbcdbfa1e3d5c7b9ab9d8f71b3a597897b6d5f41837567594b3d2f11534537291b0cfee1231506f8eadcceb0f2e4d6c8baac9e80c2b4a6988a7c6e50928476685a4c3e20625446382a1c0df032241607f9ebddc001f3e5d7c9bbad9f81c3b5a7998b7d6f51938577695b4d3f21635547392b1d0ef133251708faecdec102f4e6d8cabcae90d2c4b6a89a8c7e60a29486786a5c4e30726456483a2c1e004234261809fbedd01203f5e7d9cbbdaf91d3c5b7a99b8d7f61a39587796b5d4f31736557493b2d1f01433527190afceed11304f6e8daccbea0e2d4c6b8aa9c8e70b2a496887a6c5e40827466584a3c2e10524436281a0bfde0221405f7e9dbcdbfa1e3d5c7b9ab9d8f71b3a597897b6d5f41837567594b3d2f11534537291b0cfee1231506f8eadcceb0f2e4d6c8baac9e80c2b4a6988a7c6e50928476685a4c3e20625446382a1c0df032241607f9ebddc001f3e5d7c9bbad9f81c3b5a7998b7d6f51938577695b4d3f21635547392b1d0ef133251708faecdec102f4e6d8cabcae90d2c4b6a89a8c7e60a29486786a5c4e30726456483a2c1e004234261809fbedd01203f5e7d9cbbdaf91d3c5b7a99b8d7f61a39587796b5d4f31736557493b2d1f01433527190afceed11304f6e8daccbea0e2d4c6b8aa9c8e70b2a496887a6c5e40827466584a3c2e10524436281a0bfde0221405f7e9dbcdbfa1e3d5c7b9ab9d8f71b3a597897b6d5f41837567594b3d2f11534537291b0cfee1231506f8eadcceb0f2e4d6c8baac9e80c2b4a6988a7c6e50928476685a4c3e20625446382a1c0df032241607f9ebddc001f3e5d7c9bbad9f81c3b5a7998b7d6f51938577695b4d3f21635547392b1d0ef133251708faecdec102f4e6d8cabcae90d2c4b6a89a8c7e60a29486786a5c4e30726456483a2c1e004234261809fbedd01203f5e7d9cbbdaf91d3c5b7a99b8d7f61a39587796b5d4f31736557493b2d1f01433527190afceed11304f6e8daccbea0e2d4c6b8aa9c8e70b2a496887a6c5e40827466584a3c2e10524436281a0bfde0221405f7e9dbcdbfa1e3d5c7b9ab9d8f71b3a597897b6d5f41837567594b3d2f11534537291b0cfee1231506f8eadcceb0f2e4d6c8baac9e80c2b4a6988a7c6e50928476685a4c3e20625446382a1c0df032241607f9ebddc001f3e5d7c9bbad9f81c3b5a7998b7d6f51938577695b4d3f21635547392b1d0ef133251708faecdec102f4e6d8cabcae90d2c4b6a89a8c7e60a294867";
    // licklider-0.1.1-first-cs-not-acknowledged-sender-side.pcap frame 6
    pub const RD_CP_EORP_EOB: &str = "03018db5d3887f00018768876899480086a5c4e30726456483a2c1e004234261809fbedd01203f5e7d9cbbdaf91d3c5b7a99b8d7f61a39587796b5d4f31736557493b2d1f01433527190afceed11304f6e8daccbea0e2d4c6b8aa9c8e70b2a496887a6c5e40827466584a3c2e10524436281a0bfde0221405f7e9dbcdbfa1e3d5c7b9ab9d8f71b3a597897b6d5f41837567594b3d2f11534537291b0cfee1231506f8eadcceb0f2e4d6c8baac9e80c2b4a6988a7c6e50928476685a4c3e20625446382a1c0df032241607f9ebddc001f3e5d7c9bbad9f81c3b5a7998b7d6f51938577695b4d3f21635547392b1d0ef133251708faecdec102f4e6d8cabcae90d2c4b6a89a8c7e60a29486786a5c4e30726456483a2c1e004234261809fbedd01203f5e7d9cbbdaf91d3c5b7a99b8d7f61a39587796b5d4f31736557493b2d1f01433527190afceed11304f6e8daccbea0e2d4c6b8aa9c8e70b2a496887a6c5e40827466584a3c2e10524436281a0bfde0221405f7e9dbcdbfa1e3d5c7b9ab9d8f71b3a597897b6d5f41837567594b3d2f11534537291b0cfee1231506f8eadcceb0f2e4d6c8baac9e80c2b4a6988a7c6e50928476685a4c3e20625446382a1c0df032241607f9ebddc001f3e5d7c9bbad9f81c3b5a7998b7d6f51938577695b4d3f21635547392b1d0ef133251708faecdec102f4e6d8cabcae90d2c4b6a89a8c7e60a29486786a5c4e30726456483a2c1e004234261809fbedd01203f5e7d9cbbdaf91d3c5b7a99b8d7f61a39587796b5d4f31736557493b2d1f01433527190afceed11304f6e8daccbea0e2d4c6b8aa9c8e70b2a496887a6c5e40827466584a3c2e10524436281a0bfde0221405f7e9dbcdbfa1e3d5c7b9ab9d8f71b3a597897b6d5f41837567594b3d2f11534537291b0cfee1231506f8eadcceb0f2e4d6c8baac9e80c2b4a6988a7c6e50928476685a4c3e20625446382a1c0df032241607f9ebddc001f3e5d7c9bbad9f81c3b5a7998b7d6f51938577695b4d3f21635547392b1d0ef133251708faecdec102f4e6d8cabcae90d2c4b6a89a8c7e60a29486786a5c4e30726456483a2c1e004234261809fbedd01203f5e7d9cbbdaf91d3c5b7a99b8d7f61a39587796b5d4f31736557493b2d1f01433527190afceed11304f6e8daccbea0e2d4c6b8aa9c8e70b2a496887a6c5e40827466584a3c2e10524436281a0bfde0221405f7e9dbcdbfa1e3d5c7b9ab9d8f71b3a597897b6d5f41837567594b3d2f11534537291b0cfee1231506f8eadcceb0f2e4d6c8baac9e80c2b4a6988a7c6e50928476685a4c3e20625446382a1c0df032241607f9ebddc001f3e5d7c9bbad9f81c3b5a7998b7d6f51938577695b4d3f21635547392b1d0ef133251708faecdec102f4e6d8cabcae90d2c4b6a89a8c7e6";
    // licklider-0.1.1-redundant-checkpoint-ignores-report-limit-receiver-side.pcap frame 6
    pub const RD_CP_EORP: &str = "020187a4e9845500018f508768a42d000a29486786a5c4e30726456483a2c1e004234261809fbedd01203f5e7d9cbbdaf91d3c5b7a99b8d7f61a39587796b5d4f31736557493b2d1f01433527190afceed11304f6e8daccbea0e2d4c6b8aa9c8e70b2a496887a6c5e40827466584a3c2e10524436281a0bfde0221405f7e9dbcdbfa1e3d5c7b9ab9d8f71b3a597897b6d5f41837567594b3d2f11534537291b0cfee1231506f8eadcceb0f2e4d6c8baac9e80c2b4a6988a7c6e50928476685a4c3e20625446382a1c0df032241607f9ebddc001f3e5d7c9bbad9f81c3b5a7998b7d6f51938577695b4d3f21635547392b1d0ef133251708faecdec102f4e6d8cabcae90d2c4b6a89a8c7e60a29486786a5c4e30726456483a2c1e004234261809fbedd01203f5e7d9cbbdaf91d3c5b7a99b8d7f61a39587796b5d4f31736557493b2d1f01433527190afceed11304f6e8daccbea0e2d4c6b8aa9c8e70b2a496887a6c5e40827466584a3c2e10524436281a0bfde0221405f7e9dbcdbfa1e3d5c7b9ab9d8f71b3a597897b6d5f41837567594b3d2f11534537291b0cfee1231506f8eadcceb0f2e4d6c8baac9e80c2b4a6988a7c6e50928476685a4c3e20625446382a1c0df032241607f9ebddc001f3e5d7c9bbad9f81c3b5a7998b7d6f51938577695b4d3f21635547392b1d0ef133251708faecdec102f4e6d8cabcae90d2c4b6a89a8c7e60a29486786a5c4e30726456483a2c1e004234261809fbedd01203f5e7d9cbbdaf91d3c5b7a99b8d7f61a39587796b5d4f31736557493b2d1f01433527190afceed11304f6e8daccbea0e2d4c6b8aa9c8e70b2a496887a6c5e40827466584a3c2e10524436281a0bfde0221405f7e9dbcdbfa1e3d5c7b9ab9d8f71b3a597897b6d5f41837567594b3d2f11534537291b0cfee1231506f8eadcceb0f2e4d6c8baac9e80c2b4a6988a7c6e50928476685a4c3e20625446382a1c0df032241607f9ebddc001f3e5d7c9bbad9f81c3b5a7998b7d6f51938577695b4d3f21635547392b1d0ef133251708faecdec102f4e6d8cabcae90d2c4b6a89a8c7e60a29486786a5c4e30726456483a2c1e004234261809fbedd01203f5e7d9cbbdaf91d3c5b7a99b8d7f61a39587796b5d4f31736557493b2d1f01433527190afceed11304f6e8daccbea0e2d4c6b8aa9c8e70b2a496887a6c5e40827466584a3c2e10524436281a0bfde0221405f7e9dbcdbfa1e3d5c7b9ab9d8f71b3a597897b6d5f41837567594b3d2f11534537291b0cfee1231506f8eadcceb0f2e4d6c8baac9e80c2b4a6988a7c6e50928476685a4c3e20625446382a1c0df032241607f9ebddc001f3e5d7c9bbad9f81c3b5a7998b7d6f51938577695b4d3f21635547392b1d0ef133251708faecdec102f4e6d8cabcae90d2c4b6a";
    // licklider-0.1.1-redundant-checkpoint-ignores-report-limit-receiver-side.pcap frame 7
    pub const RS: &str = "080187a4e9845500b454a42d97380001009738";
    // licklider-0.1.1-redundant-checkpoint-ignores-report-limit-receiver-side.pcap frame 8
    pub const GD_EOB: &str = "070187a4e9845500019738876889a8c7e60a29486786a5c4e30726456483a2c1e004234261809fbedd01203f5e7d9cbbdaf91d3c5b7a99b8d7f61a39587796b5d4f31736557493b2d1f01433527190afceed11304f6e8daccbea0e2d4c6b8aa9c8e70b2a496887a6c5e40827466584a3c2e10524436281a0bfde0221405f7e9dbcdbfa1e3d5c7b9ab9d8f71b3a597897b6d5f41837567594b3d2f11534537291b0cfee1231506f8eadcceb0f2e4d6c8baac9e80c2b4a6988a7c6e50928476685a4c3e20625446382a1c0df032241607f9ebddc001f3e5d7c9bbad9f81c3b5a7998b7d6f51938577695b4d3f21635547392b1d0ef133251708faecdec102f4e6d8cabcae90d2c4b6a89a8c7e60a29486786a5c4e30726456483a2c1e004234261809fbedd01203f5e7d9cbbdaf91d3c5b7a99b8d7f61a39587796b5d4f31736557493b2d1f01433527190afceed11304f6e8daccbea0e2d4c6b8aa9c8e70b2a496887a6c5e40827466584a3c2e10524436281a0bfde0221405f7e9dbcdbfa1e3d5c7b9ab9d8f71b3a597897b6d5f41837567594b3d2f11534537291b0cfee1231506f8eadcceb0f2e4d6c8baac9e80c2b4a6988a7c6e50928476685a4c3e20625446382a1c0df032241607f9ebddc001f3e5d7c9bbad9f81c3b5a7998b7d6f51938577695b4d3f21635547392b1d0ef133251708faecdec102f4e6d8cabcae90d2c4b6a89a8c7e60a29486786a5c4e30726456483a2c1e004234261809fbedd01203f5e7d9cbbdaf91d3c5b7a99b8d7f61a39587796b5d4f31736557493b2d1f01433527190afceed11304f6e8daccbea0e2d4c6b8aa9c8e70b2a496887a6c5e40827466584a3c2e10524436281a0bfde0221405f7e9dbcdbfa1e3d5c7b9ab9d8f71b3a597897b6d5f41837567594b3d2f11534537291b0cfee1231506f8eadcceb0f2e4d6c8baac9e80c2b4a6988a7c6e50928476685a4c3e20625446382a1c0df032241607f9ebddc001f3e5d7c9bbad9f81c3b5a7998b7d6f51938577695b4d3f21635547392b1d0ef133251708faecdec102f4e6d8cabcae90d2c4b6a89a8c7e60a29486786a5c4e30726456483a2c1e004234261809fbedd01203f5e7d9cbbdaf91d3c5b7a99b8d7f61a39587796b5d4f31736557493b2d1f01433527190afceed11304f6e8daccbea0e2d4c6b8aa9c8e70b2a496887a6c5e40827466584a3c2e10524436281a0bfde0221405f7e9dbcdbfa1e3d5c7b9ab9d8f71b3a597897b6d5f41837567594b3d2f11534537291b0cfee1231506f8eadcceb0f2e4d6c8baac9e80c2b4a6988a7c6e50928476685a4c3e20625446382a1c0df032241607f9ebddc001f3e5d7c9bbad9f81c3b5a7998b7d6f51938577695b4d3f21635547392b1d0ef133251708faecdec102f4e6d8cabcae9";
    // licklider-0.1.1-redundant-checkpoint-ignores-report-limit-receiver-side.pcap frame 14
    pub const RA: &str = "090187a4e9845500b454";
    // licklider-0.1.1-first-cs-not-acknowledged-receiver-side.pcap frame 18
    pub const CS: &str = "0c018db5d3887f0002";
    // licklider-0.1.1-first-cs-not-acknowledged-receiver-side.pcap frame 20
    pub const CAS: &str = "0d018db5d3887f00";
    // wireshark-4.0.17-ltp-second-header-extension.pcap frame 1
    pub const RD_CP_TWO_HEADER_EXTS: &str = "01014d200003aabbccc00001000809006162636465666768";
    // wireshark-4.0.17-ltp-trailer-extension.pcap frame 1
    pub const RA_TRAILER_EXT: &str = "09014d0103c003616263";
    // wireshark-4.0.17-ltp-report-bounds-32bit.pcap frame 1
    pub const RS_BOUNDS_32BIT: &str = "08014d00030292d097e4008ef3acd00001008768";
    // GD, green data not at end of block (built with the Python LTP encoder)
    pub const SYN_GD: &str = "0407822c00029f2005677265656e";
    // CR with reason RXMTCYCEXC (built with the Python LTP encoder)
    pub const SYN_CR: &str = "0e818000010005";
    // CAR (built with the Python LTP encoder)
    pub const SYN_CAR: &str = "0f010200";
    // undefined control type 10 (built with the Python LTP encoder)
    pub const SYN_CTRL_U10: &str = "0a010200";
    // RS, 3 claims, one header and two trailer extensions (built with the Python LTP encoder)
    pub const SYN_RS_EXTS: &str = "0881ffffffffffffffff7f908080800012000201020908a70887680300648148822c973887680100ff81487878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878";

    /// Decode a hex constant.
    pub use crate::classify::testutil::hex;
    use crate::classify::testutil::never_panics;

    /// Real captured payloads, one or more of every segment type seen on the wire.
    pub fn samples() -> Vec<Vec<u8>> {
        [
            RD,
            RD_CP_EORP_EOB,
            RD_CP_EORP,
            RS,
            GD_EOB,
            RA,
            CS,
            CAS,
            RD_CP_TWO_HEADER_EXTS,
            RA_TRAILER_EXT,
            RS_BOUNDS_32BIT,
        ]
        .iter()
        .map(|h| hex(h))
        .collect()
    }

    /// Segments of the types no capture holds, built with the Python LTP encoder.
    fn synthetic() -> Vec<Vec<u8>> {
        [SYN_GD, SYN_CR, SYN_CAR, SYN_CTRL_U10, SYN_RS_EXTS]
            .iter()
            .map(|h| hex(h))
            .collect()
    }

    /// Expected fields, from an independent decoder: computed with the
    /// Python codec of the time (now dissectors/ltp/layer.py, whose tests
    /// check these same values) from each segment's bytes, not derived from
    /// this file's code.
    fn expected() -> Vec<(&'static str, Fields)> {
        vec![
            (
                RD,
                vec![
                    ("type", S("RD")),
                    ("type_code", I(0)),
                    ("kind", S("red_data")),
                    ("red", B(true)),
                    ("checkpoint", B(false)),
                    ("eorp", B(false)),
                    ("eob", B(false)),
                    ("session_originator", I(1)),
                    ("session_number", I(3602171007)),
                    ("client_service_id", I(1)),
                    ("offset", I(0)),
                    ("length", I(1000)),
                ],
            ),
            (
                RD_CP_EORP_EOB,
                vec![
                    ("type", S("RD-CP-EORP-EOB")),
                    ("type_code", I(3)),
                    ("kind", S("red_data")),
                    ("red", B(true)),
                    ("checkpoint", B(true)),
                    ("eorp", B(true)),
                    ("eob", B(true)),
                    ("session_originator", I(1)),
                    ("session_number", I(3602171007)),
                    ("client_service_id", I(1)),
                    ("offset", I(1000)),
                    ("checkpoint_serial", I(3272)),
                    ("report_serial", I(0)),
                    ("length", I(1000)),
                ],
            ),
            (
                RD_CP_EORP,
                vec![
                    ("type", S("RD-CP-EORP")),
                    ("type_code", I(2)),
                    ("kind", S("red_data")),
                    ("red", B(true)),
                    ("checkpoint", B(true)),
                    ("eorp", B(true)),
                    ("eob", B(false)),
                    ("session_originator", I(1)),
                    ("session_number", I(1956266581)),
                    ("client_service_id", I(1)),
                    ("offset", I(2000)),
                    ("checkpoint_serial", I(4653)),
                    ("report_serial", I(0)),
                    ("length", I(1000)),
                ],
            ),
            (
                RS,
                vec![
                    ("type", S("RS")),
                    ("type_code", I(8)),
                    ("kind", S("report")),
                    ("red", B(false)),
                    ("checkpoint", B(false)),
                    ("eorp", B(false)),
                    ("eob", B(false)),
                    ("session_originator", I(1)),
                    ("session_number", I(1956266581)),
                    ("checkpoint_serial", I(4653)),
                    ("report_serial", I(6740)),
                    ("upper_bound", I(3000)),
                    ("lower_bound", I(0)),
                    ("claim_count", I(1)),
                ],
            ),
            (
                GD_EOB,
                vec![
                    ("type", S("GD-EOB")),
                    ("type_code", I(7)),
                    ("kind", S("green_data")),
                    ("red", B(false)),
                    ("checkpoint", B(false)),
                    ("eorp", B(false)),
                    ("eob", B(true)),
                    ("session_originator", I(1)),
                    ("session_number", I(1956266581)),
                    ("client_service_id", I(1)),
                    ("offset", I(3000)),
                    ("length", I(1000)),
                ],
            ),
            (
                RA,
                vec![
                    ("type", S("RA")),
                    ("type_code", I(9)),
                    ("kind", S("report_ack")),
                    ("red", B(false)),
                    ("checkpoint", B(false)),
                    ("eorp", B(false)),
                    ("eob", B(false)),
                    ("session_originator", I(1)),
                    ("session_number", I(1956266581)),
                    ("report_serial", I(6740)),
                ],
            ),
            (
                CS,
                vec![
                    ("type", S("CS")),
                    ("type_code", I(12)),
                    ("kind", S("cancel")),
                    ("red", B(false)),
                    ("checkpoint", B(false)),
                    ("eorp", B(false)),
                    ("eob", B(false)),
                    ("session_originator", I(1)),
                    ("session_number", I(3602171007)),
                    ("reason", I(2)),
                ],
            ),
            (
                CAS,
                vec![
                    ("type", S("CAS")),
                    ("type_code", I(13)),
                    ("kind", S("cancel_ack")),
                    ("red", B(false)),
                    ("checkpoint", B(false)),
                    ("eorp", B(false)),
                    ("eob", B(false)),
                    ("session_originator", I(1)),
                    ("session_number", I(3602171007)),
                ],
            ),
            (
                RD_CP_TWO_HEADER_EXTS,
                vec![
                    ("type", S("RD-CP")),
                    ("type_code", I(1)),
                    ("kind", S("red_data")),
                    ("red", B(true)),
                    ("checkpoint", B(true)),
                    ("eorp", B(false)),
                    ("eob", B(false)),
                    ("session_originator", I(1)),
                    ("session_number", I(77)),
                    ("client_service_id", I(1)),
                    ("offset", I(0)),
                    ("checkpoint_serial", I(9)),
                    ("report_serial", I(0)),
                    ("length", I(8)),
                ],
            ),
            (
                RA_TRAILER_EXT,
                vec![
                    ("type", S("RA")),
                    ("type_code", I(9)),
                    ("kind", S("report_ack")),
                    ("red", B(false)),
                    ("checkpoint", B(false)),
                    ("eorp", B(false)),
                    ("eob", B(false)),
                    ("session_originator", I(1)),
                    ("session_number", I(77)),
                    ("report_serial", I(3)),
                ],
            ),
            (
                RS_BOUNDS_32BIT,
                vec![
                    ("type", S("RS")),
                    ("type_code", I(8)),
                    ("kind", S("report")),
                    ("red", B(false)),
                    ("checkpoint", B(false)),
                    ("eorp", B(false)),
                    ("eob", B(false)),
                    ("session_originator", I(1)),
                    ("session_number", I(77)),
                    ("checkpoint_serial", I(2)),
                    ("report_serial", I(3)),
                    ("upper_bound", I(5000000000)),
                    ("lower_bound", I(4000000000)),
                    ("claim_count", I(1)),
                ],
            ),
            (
                SYN_GD,
                vec![
                    ("type", S("GD")),
                    ("type_code", I(4)),
                    ("kind", S("green_data")),
                    ("red", B(false)),
                    ("checkpoint", B(false)),
                    ("eorp", B(false)),
                    ("eob", B(false)),
                    ("session_originator", I(7)),
                    ("session_number", I(300)),
                    ("client_service_id", I(2)),
                    ("offset", I(4000)),
                    ("length", I(5)),
                ],
            ),
            (
                SYN_CR,
                vec![
                    ("type", S("CR")),
                    ("type_code", I(14)),
                    ("kind", S("cancel")),
                    ("red", B(false)),
                    ("checkpoint", B(false)),
                    ("eorp", B(false)),
                    ("eob", B(false)),
                    ("session_originator", I(16384)),
                    ("session_number", I(1)),
                    ("reason", I(5)),
                ],
            ),
            (
                SYN_CAR,
                vec![
                    ("type", S("CAR")),
                    ("type_code", I(15)),
                    ("kind", S("cancel_ack")),
                    ("red", B(false)),
                    ("checkpoint", B(false)),
                    ("eorp", B(false)),
                    ("eob", B(false)),
                    ("session_originator", I(1)),
                    ("session_number", I(2)),
                ],
            ),
            (
                SYN_CTRL_U10,
                vec![
                    ("type", S("CTRL-U10")),
                    ("type_code", I(10)),
                    ("kind", S("undefined")),
                    ("red", B(false)),
                    ("checkpoint", B(false)),
                    ("eorp", B(false)),
                    ("eob", B(false)),
                    ("session_originator", I(1)),
                    ("session_number", I(2)),
                ],
            ),
            (
                SYN_RS_EXTS,
                vec![
                    ("type", S("RS")),
                    ("type_code", I(8)),
                    ("kind", S("report")),
                    ("red", B(false)),
                    ("checkpoint", B(false)),
                    ("eorp", B(false)),
                    ("eob", B(false)),
                    ("session_originator", I(18446744073709551615)),
                    ("session_number", I(4294967296)),
                    ("checkpoint_serial", I(8)),
                    ("report_serial", I(9)),
                    ("upper_bound", I(5000)),
                    ("lower_bound", I(1000)),
                    ("claim_count", I(3)),
                ],
            ),
        ]
    }

    #[test]
    fn fields_equal_python_classify() {
        for (h, want) in expected() {
            assert_eq!(classify(&hex(h)), Some(want), "segment {h:.40}");
        }
    }

    #[test]
    fn every_segment_type_in_the_samples() {
        let mut seen: Vec<&str> = samples()
            .iter()
            .map(|s| match classify(s).unwrap()[0].1 {
                Value::Str(t) => t,
                _ => unreachable!(),
            })
            .collect();
        seen.sort_unstable();
        seen.dedup();
        for t in [
            "RD",
            "RD-CP",
            "RD-CP-EORP",
            "RD-CP-EORP-EOB",
            "GD-EOB",
            "RS",
            "RA",
            "CS",
            "CAS",
        ] {
            assert!(seen.contains(&t), "no {t} sample");
        }
    }

    #[test]
    fn truncated_prefixes_and_trailing_bytes_are_rejected() {
        for s in samples().into_iter().chain(synthetic()) {
            for n in 0..s.len() {
                assert_eq!(classify(&s[..n]), None, "prefix {n} of {s:02x?}");
            }
            let mut long = s.clone();
            long.push(0);
            assert_eq!(classify(&long), None, "trailing octet after {s:02x?}");
        }
    }

    #[test]
    fn random_and_mutated_bytes_never_panic() {
        let all: Vec<Vec<u8>> = samples().into_iter().chain(synthetic()).collect();
        never_panics(classify, &all, (200_000, 48), (50_000, 3), |buf, _| {
            // Bias toward plausible headers: version 0, short SDNVs.
            if let Some(b) = buf.first_mut() {
                *b &= 0x0f;
            }
        });
    }

    #[test]
    fn version_must_be_zero() {
        let mut s = hex(CAS);
        s[0] |= 0x10;
        assert_eq!(classify(&s), None);
    }

    #[test]
    fn sdnv_over_64_bits_is_rejected() {
        // Session number 2^64 (81 80 .. 80 00, ten octets) after originator 1.
        let mut s = vec![0x0d, 0x01, 0x82];
        s.extend([0x80; 8]);
        s.extend([0x00, 0x00]);
        assert_eq!(classify(&s), None);
        // 2^64 - 1 still fits.
        let mut s = vec![0x0d, 0x01, 0x81];
        s.extend([0xff; 8]);
        s.extend([0x7f, 0x00]);
        assert_eq!(classify(&s).unwrap()[8], ("session_number", I(u64::MAX)));
    }

    #[test]
    fn report_claim_count_is_bounded_by_the_datagram() {
        // RS whose claim count (0x7f) exceeds the datagram length: rejected
        // before any claim is read.
        let s = hex("0801010001010100007f");
        assert_eq!(classify(&s), None);
    }

    #[test]
    fn data_length_past_the_end_is_rejected() {
        // GD, length SDNV 0x8f 0x7f (2047) with five data octets.
        let s = hex("040102000100008f7f6162636465");
        assert_eq!(classify(&s), None);
    }
}
