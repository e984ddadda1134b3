//! CFDP PDU classifier (CCSDS 727.0-B-5, CCSDS File Delivery Protocol,
//! §5: PDU formats).
//!
//! One PDU per UDP datagram. The PDU data field length of the fixed header
//! must account for the rest of the datagram exactly; every fixed parameter,
//! length-value (LV) and type-length-value (TLV) field must lie inside the
//! data field, and the parameters of each file directive must fill it
//! (§5.2). Anything else is `None`.
//!
//! Versions '001' (727.0-B-5) and '000' (727.0-B-4 and earlier) are
//! accepted. The older layout differs only in bits B-4 reserved (zero) where
//! B-5 put the large-file and segment-metadata flags, and in bits this
//! classifier does not report (B-4's Finished "end system status" and
//! Metadata "segmentation control"; the latter sits where B-5 has a
//! reserved bit, next to "closure requested"). Versions 2-7 are undefined.
//!
//! The PDU data field length counts the CRC when there is one (as
//! spacepackets (Python and Rust) and tshark's dissector read it).
//!
//! File sizes, offsets, scope bounds and progress are "FSS" fields: 4 octets,
//! or 8 when the large-file flag is set (§5.1, Table 5-1).
//!
//! When the CRC flag is set, the last two octets of the data field are a
//! CRC-16 (polynomial 0x1021, preset 0xFFFF, no reflection, no final XOR)
//! over the whole PDU before them; `crc_ok` reports whether it matches. A
//! bad CRC does not make the PDU unclassifiable: the emulator still has to
//! be able to match (and, say, count) a corrupted PDU.

use std::sync::OnceLock;

use super::{be, code_name, Fields, Value};

/// Condition codes (§5.2.2-§5.2.4, Table 5-5) by 4-bit code: the
/// `condition_codes` table of specs/cfdp/wire.json.
fn condition_name(code: u8) -> &'static str {
    static CONDITIONS: OnceLock<Vec<Option<String>>> = OnceLock::new();
    code_name(&CONDITIONS, "cfdp", "condition_codes", usize::from(code))
        .expect("specs/cfdp/wire.json lists all 16 condition codes")
}

/// File directive codes (§5.2, Table 5-4; the others are reserved): the
/// `directives` table of specs/cfdp/wire.json.
fn directive_name(code: u8) -> Option<&'static str> {
    static DIRECTIVES: OnceLock<Vec<Option<String>>> = OnceLock::new();
    code_name(&DIRECTIVES, "cfdp", "directives", usize::from(code))
}

/// Finished file status (§5.2.3, 2 bits; wire.json file_statuses).
fn file_status_name(code: u8) -> &'static str {
    static T: OnceLock<Vec<Option<String>>> = OnceLock::new();
    code_name(&T, "cfdp", "file_statuses", usize::from(code)).expect("2-bit file status")
}

/// ACK transaction status (§5.2.4, 2 bits; wire.json transaction_statuses).
fn transaction_status_name(code: u8) -> &'static str {
    static T: OnceLock<Vec<Option<String>>> = OnceLock::new();
    code_name(&T, "cfdp", "transaction_statuses", usize::from(code)).expect("2-bit status")
}

/// TLV types (§5.4) by code, `None` for a code it does not define: the
/// `tlv_types` table of specs/cfdp/wire.json.
fn tlv_type_name(code: u8) -> Option<&'static str> {
    static T: OnceLock<Vec<Option<String>>> = OnceLock::new();
    code_name(&T, "cfdp", "tlv_types", usize::from(code))
}

/// CRC-16 lookup table for polynomial 0x1021 (MSB first).
const CRC_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = (i as u16) << 8;
        let mut k = 0;
        while k < 8 {
            c = if c & 0x8000 != 0 {
                (c << 1) ^ 0x1021
            } else {
                c << 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// The PDU CRC: CRC-16, polynomial 0x1021, preset 0xFFFF (the CCSDS CRC,
/// "CRC-16/CCITT-FALSE").
fn crc16(data: &[u8]) -> u16 {
    data.iter().fold(0xffff, |crc, &b| {
        (crc << 8) ^ CRC_TABLE[usize::from((crc >> 8) as u8 ^ b)]
    })
}

/// Walk the TLVs (Table 5-3: type octet, length octet, value) that fill
/// `buf` exactly; call `each(type, value)`, which may reject one.
fn tlvs<'a>(buf: &'a [u8], mut each: impl FnMut(u8, &'a [u8]) -> Option<()>) -> Option<()> {
    let mut pos = 0;
    while pos < buf.len() {
        let t = buf[pos];
        let len = usize::from(*buf.get(pos + 1)?);
        let value = buf.get(pos + 2..pos + 2 + len)?;
        each(t, value)?;
        pos += 2 + len;
    }
    Some(())
}

/// An entity ID TLV's value (§5.4): a 1-8 octet unsigned integer.
fn entity_id(value: &[u8]) -> Option<u64> {
    if value.is_empty() || value.len() > 8 {
        return None;
    }
    be(value, 0, value.len())
}

/// Skip an LV (Table 5-2: length octet, value) at `*pos` of `buf`.
fn skip_lv(buf: &[u8], pos: &mut usize) -> Option<()> {
    let len = usize::from(*buf.get(*pos)?);
    buf.get(*pos + 1..*pos + 1 + len)?;
    *pos += 1 + len;
    Some(())
}

/// The value of a filestore request (`response` false) or response TLV
/// (§5.4) must hold its LVs: an octet of action code (4 bits) and status
/// code or spare (4 bits), the first file name LV, a second file name LV for
/// rename, append and replace (action codes 2-4) only, and for a response the
/// filestore message LV. The book is not reachable here; this is the layout
/// of spacepackets-py (src/spacepackets/cfdp/tlv/tlv.py), spacepackets-rs
/// (src/cfdp/tlv/mod.rs) and Yamcs (yamcs-core/.../cfdp/pdu/
/// FileStoreResponse.java, ActionCode.java), all of which fail on an LV that
/// runs past the TLV; dariol83/ccsds (FilestoreResponseTLV.java, "Table
/// 5-17") has the same fields. As the Scapy layer and our Lua dissector do,
/// octets after the LVs and a value without even the action code octet are
/// accepted (the dissector flags them as protocol warnings).
fn filestore_value(value: &[u8], response: bool) -> Option<()> {
    let Some(&first) = value.first() else {
        return Some(());
    };
    let mut pos = 1;
    skip_lv(value, &mut pos)?;
    if matches!(first >> 4, 2..=4) {
        skip_lv(value, &mut pos)?;
    }
    if response {
        skip_lv(value, &mut pos)?;
    }
    Some(())
}

/// Classify one UDP payload as a CFDP PDU; `None` unless it is exactly one
/// well-formed PDU.
pub fn classify(payload: &[u8]) -> Option<Fields> {
    // §5.1 fixed PDU header (Table 5-1), first octet: version (3 bits),
    // PDU type, direction, transmission mode, CRC flag, large file flag.
    let b0 = *payload.first()?;
    let version = b0 >> 5;
    if version > 1 {
        return None;
    }
    let file_data = b0 & 0x10 != 0;
    let toward_sender = b0 & 0x08 != 0;
    let unacknowledged = b0 & 0x04 != 0;
    let crc = b0 & 0x02 != 0;
    let large = b0 & 0x01 != 0;
    // PDU data field length (16 bits).
    let data_len = be(payload, 1, 2)?;
    // Fourth octet: segmentation control, length of entity IDs less one
    // (3 bits), segment metadata flag, length of transaction sequence
    // number less one (3 bits).
    let b3 = *payload.get(3)?;
    let segmentation_control = b3 & 0x80 != 0;
    let eid_len = usize::from((b3 >> 4) & 0x07) + 1;
    let segment_metadata = b3 & 0x08 != 0;
    let tsn_len = usize::from(b3 & 0x07) + 1;
    // Source entity ID, transaction sequence number, destination entity ID.
    let header_len = 4 + 2 * eid_len + tsn_len;
    if payload.len() as u64 != header_len as u64 + data_len {
        return None;
    }
    let source = be(payload, 4, eid_len)?;
    let transaction = be(payload, 4 + eid_len, tsn_len)?;
    let dest = be(payload, 4 + eid_len + tsn_len, eid_len)?;

    let mut data = &payload[header_len..];
    let mut crc_ok = None;
    if crc {
        let at = data.len().checked_sub(2)?;
        let sent = be(data, at, 2)?;
        crc_ok = Some(u64::from(crc16(&payload[..payload.len() - 2])) == sent);
        data = &data[..at];
    }
    let fss = if large { 8 } else { 4 };

    let mut f: Fields = vec![
        ("version", Value::Int(u64::from(version))),
        (
            "pdu_type",
            Value::Str(if file_data {
                "file_data"
            } else {
                "file_directive"
            }),
        ),
        (
            "direction",
            Value::Str(if toward_sender {
                "toward_sender"
            } else {
                "toward_receiver"
            }),
        ),
        (
            "mode",
            Value::Str(if unacknowledged {
                "unacknowledged"
            } else {
                "acknowledged"
            }),
        ),
        ("crc", Value::Bool(crc)),
        ("large_file", Value::Bool(large)),
        ("data_field_length", Value::Int(data_len)),
        ("source_entity", Value::Int(source)),
        ("transaction", Value::Int(transaction)),
        ("dest_entity", Value::Int(dest)),
    ];
    if let Some(ok) = crc_ok {
        f.push(("crc_ok", Value::Bool(ok)));
    }
    if file_data {
        file_data_fields(data, fss, segmentation_control, segment_metadata, &mut f)?;
    } else {
        directive_fields(data, fss, &mut f)?;
    }
    Some(f)
}

/// §5.3 file data PDU: optional segment metadata, offset (FSS), file data.
fn file_data_fields(
    data: &[u8],
    fss: usize,
    segmentation_control: bool,
    segment_metadata: bool,
    f: &mut Fields,
) -> Option<()> {
    f.push(("segmentation_control", Value::Bool(segmentation_control)));
    f.push(("segment_metadata", Value::Bool(segment_metadata)));
    let mut pos = 0;
    if segment_metadata {
        // Record continuation state (2 bits), segment metadata length
        // (6 bits, 0-63), segment metadata.
        let b = *data.first()?;
        let meta_len = usize::from(b & 0x3f);
        f.push((
            "record_continuation",
            Value::Str(match b >> 6 {
                0b00 => "neither",
                0b01 => "start",
                0b10 => "end",
                _ => "start_and_end",
            }),
        ));
        f.push(("segment_metadata_length", Value::Int(meta_len as u64)));
        pos = 1 + meta_len;
    }
    let offset = be(data, pos, fss)?;
    f.push(("offset", Value::Int(offset)));
    f.push(("length", Value::Int((data.len() - pos - fss) as u64)));
    Some(())
}

/// §5.2 file directive PDUs: directive code octet, then its parameters.
fn directive_fields(data: &[u8], fss: usize, f: &mut Fields) -> Option<()> {
    let code = *data.first()?;
    let name = directive_name(code)?;
    let p = &data[1..];
    f.push(("directive", Value::Str(name)));
    f.push(("directive_code", Value::Int(u64::from(code))));
    let condition = |b: u8| Value::Str(condition_name(b >> 4));
    match code {
        // §5.2.2 EOF (Table 5-6): condition code (4 bits), spare (4),
        // file checksum (32 bits), file size (FSS), fault location (entity
        // ID TLV, omitted when the condition is "no error").
        0x04 => {
            let size = be(p, 5, fss)?;
            f.push(("condition", condition(p[0])));
            f.push(("checksum", Value::Int(be(p, 1, 4)?)));
            f.push(("file_size", Value::Int(size)));
            let mut fault = None;
            tlvs(&p[5 + fss..], |t, v| {
                if tlv_type_name(t) != Some("entity_id") || fault.is_some() {
                    return None;
                }
                fault = Some(entity_id(v)?);
                Some(())
            })?;
            if let Some(id) = fault {
                if p[0] >> 4 == 0 {
                    return None; // a fault location with condition "no error"
                }
                f.push(("fault_location", Value::Int(id)));
            }
        }
        // §5.2.3 Finished (Table 5-7): condition code (4 bits), spare (1;
        // the B-4 "end system status"), delivery code (1), file status (2),
        // then filestore response TLVs and a fault location TLV.
        0x05 => {
            let b = *p.first()?;
            f.push(("condition", condition(b)));
            f.push((
                "delivery_code",
                Value::Str(if b & 0x04 != 0 {
                    "data_incomplete"
                } else {
                    "data_complete"
                }),
            ));
            f.push(("file_status", Value::Str(file_status_name(b & 0x03))));
            // The fault location, if any, is the last TLV.
            let mut fault = None;
            tlvs(&p[1..], |t, v| match tlv_type_name(t) {
                _ if fault.is_some() => None,
                Some("filestore_response") => filestore_value(v, true),
                Some("entity_id") => {
                    fault = Some(entity_id(v)?);
                    Some(())
                }
                _ => None,
            })?;
            if let Some(id) = fault {
                if b >> 4 == 0 {
                    return None; // a fault location with condition "no error"
                }
                f.push(("fault_location", Value::Int(id)));
            }
        }
        // §5.2.4 ACK (Table 5-8): directive code of the acknowledged PDU
        // (4 bits), directive subtype code (4), condition code (4), spare
        // (2), transaction status (2).
        0x06 => {
            if p.len() != 2 {
                return None;
            }
            f.push(("ack_of", Value::Str(directive_name(p[0] >> 4)?)));
            f.push(("ack_subtype", Value::Int(u64::from(p[0] & 0x0f))));
            f.push(("condition", condition(p[1])));
            f.push((
                "transaction_status",
                Value::Str(transaction_status_name(p[1] & 0x03)),
            ));
        }
        // §5.2.5 Metadata (Table 5-9): reserved (1 bit), closure requested
        // (1), reserved (2), checksum type (4), file size (FSS), source and
        // destination file names (LV), options (TLVs: filestore requests,
        // messages to user, fault handler overrides, flow label).
        0x07 => {
            let size = be(p, 1, fss)?;
            let mut pos = 1 + fss;
            skip_lv(p, &mut pos)?;
            skip_lv(p, &mut pos)?;
            tlvs(&p[pos..], |t, v| match tlv_type_name(t) {
                Some("filestore_request") => filestore_value(v, false),
                Some("message_to_user" | "fault_handler_override" | "flow_label") => Some(()),
                _ => None,
            })?;
            f.push(("closure_requested", Value::Bool(p[0] & 0x40 != 0)));
            f.push(("checksum_type", Value::Int(u64::from(p[0] & 0x0f))));
            f.push(("file_size", Value::Int(size)));
        }
        // §5.2.6 NAK (Table 5-10): start and end of scope (FSS each), then
        // segment requests (Table 5-11: start and end offset, FSS each).
        0x08 => {
            let end = be(p, fss, fss)?;
            let requests = &p[2 * fss..];
            if requests.len() % (2 * fss) != 0 {
                return None;
            }
            f.push(("start_of_scope", Value::Int(be(p, 0, fss)?)));
            f.push(("end_of_scope", Value::Int(end)));
            f.push((
                "segment_requests",
                Value::Int((requests.len() / (2 * fss)) as u64),
            ));
        }
        // §5.2.7 Prompt: response required (1 bit: NAK or
        // keep alive), spare (7).
        0x09 => {
            if p.len() != 1 {
                return None;
            }
            f.push((
                "response_required",
                Value::Str(if p[0] & 0x80 != 0 {
                    "keep_alive"
                } else {
                    "nak"
                }),
            ));
        }
        // §5.2.8 Keep Alive: progress (FSS).
        _ => {
            if p.len() != fss {
                return None;
            }
            f.push(("progress", Value::Int(be(p, 0, fss)?)));
        }
    }
    Some(())
}

#[cfg(test)]
pub mod tests {
    use super::super::Value::{Bool as B, Int as I, Str as S};
    use super::super::{Fields, Value};
    use super::{classify, crc16};

    // One PDU of every file directive type plus file data PDUs (normal and
    // large file, with and without segment metadata, with and without CRC,
    // 1-, 2- and 8-octet entity IDs and sequence numbers), built with the
    // PDU classes of the Python package spacepackets 0.32.0 (as installed
    // by `pip install cfdp-py==0.7.0 fastcrc==0.3.6`), e.g.
    // `EofPdu(conf, file_checksum=0x1234ABCD, file_size=4096).pack()`.
    pub const EOF_NO_ERROR: &str = "20000a0001030204001234abcd00001000";
    pub const EOF_CANCEL_FAULT_LOCATION_CRC: &str =
        "220010130102deadbeef030404f000000000000003e80602030456b2";
    pub const EOF_LARGE: &str = "21000e000103020400ffffffff0000000200000005";
    pub const FINISHED_RETAINED: &str = "280002000103020502";
    pub const FINISHED_INCOMPLETE_FS_RESPONSE_FAULT: &str =
        "2a0017130102deadbeef03040554010d100a2f746d702f612e747874000602030401a7";
    pub const ACK_EOF: &str = "28000300010302064001";
    pub const ACK_FINISHED: &str = "2200050001030206518236fe";
    pub const METADATA: &str =
        "200022000103020743000008000d2f7372632f66696c652e62696e0d2f6473742f66696c652e62696e";
    pub const METADATA_OPTIONS_LARGE_UNACK: &str =
        "27001d00010302070f000001000000000001610162020568656c6c6f04017405010758f8";
    pub const NAK_TWO_REQUESTS: &str =
        "2800190001030208000000000000100000000000000002000000040000000800";
    pub const NAK_LARGE_CRC: &str =
        "2b0023000103020800000001000000000000000100000064000000010000000a00000001000000143f0e";
    pub const NAK_NO_REQUESTS: &str = "280009130102deadbeef03040800000064000000c8";
    pub const PROMPT_NAK: &str = "200002000103020900";
    pub const PROMPT_KEEP_ALIVE_CRC: &str = "220004000103020980ccd2";
    pub const KEEP_ALIVE: &str = "280005000103020c00000309";
    pub const KEEP_ALIVE_LARGE: &str = "290009000103020c0000000800000000";
    pub const FILE_DATA: &str = "300014000103020000040030313233343536373839616263646566";
    pub const FILE_DATA_UNACK_WIDE_IDS: &str = concat!(
        "340044130102deadbeef030400000000000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
    );
    pub const FILE_DATA_LARGE: &str = "31000b00010302000000010000000778797a";
    pub const FILE_DATA_SEGMENT_METADATA: &str = "30000e88010302c3010203000000407265636f7264";
    pub const FILE_DATA_SEGMENT_METADATA_EMPTY_CRC: &str = "3200098801030240000000467232f005";
    pub const FILE_DATA_CRC: &str = "32000b000103020000000568656c6c6f0cd3";
    pub const FILE_DATA_LARGE_SEGMETA_CRC_U64: &str = concat!(
        "33004b7f8000000000000001ffffffffffffffff0000000000000009bf6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d",
        "6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6dffffffff",
        "fffffffe21891c",
    );
    pub const FILE_DATA_EMPTY: &str = "3000040001030200001000";

    /// Decode a hex constant.
    pub use crate::classify::testutil::hex;
    use crate::classify::testutil::never_panics;

    pub fn samples() -> Vec<Vec<u8>> {
        [
            EOF_NO_ERROR,
            EOF_CANCEL_FAULT_LOCATION_CRC,
            EOF_LARGE,
            FINISHED_RETAINED,
            FINISHED_INCOMPLETE_FS_RESPONSE_FAULT,
            ACK_EOF,
            ACK_FINISHED,
            METADATA,
            METADATA_OPTIONS_LARGE_UNACK,
            NAK_TWO_REQUESTS,
            NAK_LARGE_CRC,
            NAK_NO_REQUESTS,
            PROMPT_NAK,
            PROMPT_KEEP_ALIVE_CRC,
            KEEP_ALIVE,
            KEEP_ALIVE_LARGE,
            FILE_DATA,
            FILE_DATA_UNACK_WIDE_IDS,
            FILE_DATA_LARGE,
            FILE_DATA_SEGMENT_METADATA,
            FILE_DATA_SEGMENT_METADATA_EMPTY_CRC,
            FILE_DATA_CRC,
            FILE_DATA_LARGE_SEGMETA_CRC_U64,
            FILE_DATA_EMPTY,
        ]
        .iter()
        .map(|h| hex(h))
        .collect()
    }

    /// Expected fields, from independent decoders, not this file's code:
    /// spacepackets 0.32.0's own decoder (`PduHeader.unpack(raw)` for the
    /// header, `PduFactory.from_raw(raw)` and the decoded objects' attributes
    /// for the rest, mapped to this vocabulary). Where that decoder is wrong
    /// or refuses: the EOF condition code of EOF_CANCEL_FAULT_LOCATION_CRC is
    /// the one the PDU was built with (spacepackets' EofPdu.unpack returns
    /// the unshifted octet, 240), and FILE_DATA_EMPTY, which spacepackets
    /// will not decode, is read off its builder call. tshark 4.0.17's cfdp dissector
    /// (`tshark -d udp.port==5222,cfdp`) agrees on every field it decodes
    /// correctly (version, PDU type, direction, mode, CRC flag, data field
    /// length, IDs, directive code, condition, checksum, delivery code,
    /// file status, ACK fields, response required, and the FSS fields of
    /// small-file PDUs); conformance/tests/test_emulator_classify.py
    /// repeats that comparison against the built binary.
    fn expected() -> Vec<(&'static str, Fields)> {
        vec![
            (
                EOF_NO_ERROR,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_directive")),
                    ("direction", S("toward_receiver")),
                    ("mode", S("acknowledged")),
                    ("crc", B(false)),
                    ("large_file", B(false)),
                    ("data_field_length", I(10)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("directive", S("eof")),
                    ("directive_code", I(4)),
                    ("condition", S("no_error")),
                    ("checksum", I(305441741)),
                    ("file_size", I(4096)),
                ],
            ),
            (
                EOF_CANCEL_FAULT_LOCATION_CRC,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_directive")),
                    ("direction", S("toward_receiver")),
                    ("mode", S("acknowledged")),
                    ("crc", B(true)),
                    ("large_file", B(false)),
                    ("data_field_length", I(16)),
                    ("source_entity", I(258)),
                    ("transaction", I(3735928559)),
                    ("dest_entity", I(772)),
                    ("crc_ok", B(true)),
                    ("directive", S("eof")),
                    ("directive_code", I(4)),
                    ("condition", S("cancel_request_received")),
                    ("checksum", I(0)),
                    ("file_size", I(1000)),
                    ("fault_location", I(772)),
                ],
            ),
            (
                EOF_LARGE,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_directive")),
                    ("direction", S("toward_receiver")),
                    ("mode", S("acknowledged")),
                    ("crc", B(false)),
                    ("large_file", B(true)),
                    ("data_field_length", I(14)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("directive", S("eof")),
                    ("directive_code", I(4)),
                    ("condition", S("no_error")),
                    ("checksum", I(4294967295)),
                    ("file_size", I(8589934597)),
                ],
            ),
            (
                FINISHED_RETAINED,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_directive")),
                    ("direction", S("toward_sender")),
                    ("mode", S("acknowledged")),
                    ("crc", B(false)),
                    ("large_file", B(false)),
                    ("data_field_length", I(2)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("directive", S("finished")),
                    ("directive_code", I(5)),
                    ("condition", S("no_error")),
                    ("delivery_code", S("data_complete")),
                    ("file_status", S("retained")),
                ],
            ),
            (
                FINISHED_INCOMPLETE_FS_RESPONSE_FAULT,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_directive")),
                    ("direction", S("toward_sender")),
                    ("mode", S("acknowledged")),
                    ("crc", B(true)),
                    ("large_file", B(false)),
                    ("data_field_length", I(23)),
                    ("source_entity", I(258)),
                    ("transaction", I(3735928559)),
                    ("dest_entity", I(772)),
                    ("crc_ok", B(true)),
                    ("directive", S("finished")),
                    ("directive_code", I(5)),
                    ("condition", S("file_checksum_failure")),
                    ("delivery_code", S("data_incomplete")),
                    ("file_status", S("discarded_deliberately")),
                    ("fault_location", I(772)),
                ],
            ),
            (
                ACK_EOF,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_directive")),
                    ("direction", S("toward_sender")),
                    ("mode", S("acknowledged")),
                    ("crc", B(false)),
                    ("large_file", B(false)),
                    ("data_field_length", I(3)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("directive", S("ack")),
                    ("directive_code", I(6)),
                    ("ack_of", S("eof")),
                    ("ack_subtype", I(0)),
                    ("condition", S("no_error")),
                    ("transaction_status", S("active")),
                ],
            ),
            (
                ACK_FINISHED,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_directive")),
                    ("direction", S("toward_receiver")),
                    ("mode", S("acknowledged")),
                    ("crc", B(true)),
                    ("large_file", B(false)),
                    ("data_field_length", I(5)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("crc_ok", B(true)),
                    ("directive", S("ack")),
                    ("directive_code", I(6)),
                    ("ack_of", S("finished")),
                    ("ack_subtype", I(1)),
                    ("condition", S("inactivity_detected")),
                    ("transaction_status", S("terminated")),
                ],
            ),
            (
                METADATA,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_directive")),
                    ("direction", S("toward_receiver")),
                    ("mode", S("acknowledged")),
                    ("crc", B(false)),
                    ("large_file", B(false)),
                    ("data_field_length", I(34)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("directive", S("metadata")),
                    ("directive_code", I(7)),
                    ("closure_requested", B(true)),
                    ("checksum_type", I(3)),
                    ("file_size", I(2048)),
                ],
            ),
            (
                METADATA_OPTIONS_LARGE_UNACK,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_directive")),
                    ("direction", S("toward_receiver")),
                    ("mode", S("unacknowledged")),
                    ("crc", B(true)),
                    ("large_file", B(true)),
                    ("data_field_length", I(29)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("crc_ok", B(true)),
                    ("directive", S("metadata")),
                    ("directive_code", I(7)),
                    ("closure_requested", B(false)),
                    ("checksum_type", I(15)),
                    ("file_size", I(1099511627776)),
                ],
            ),
            (
                NAK_TWO_REQUESTS,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_directive")),
                    ("direction", S("toward_sender")),
                    ("mode", S("acknowledged")),
                    ("crc", B(false)),
                    ("large_file", B(false)),
                    ("data_field_length", I(25)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("directive", S("nak")),
                    ("directive_code", I(8)),
                    ("start_of_scope", I(0)),
                    ("end_of_scope", I(4096)),
                    ("segment_requests", I(2)),
                ],
            ),
            (
                NAK_LARGE_CRC,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_directive")),
                    ("direction", S("toward_sender")),
                    ("mode", S("acknowledged")),
                    ("crc", B(true)),
                    ("large_file", B(true)),
                    ("data_field_length", I(35)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("crc_ok", B(true)),
                    ("directive", S("nak")),
                    ("directive_code", I(8)),
                    ("start_of_scope", I(4294967296)),
                    ("end_of_scope", I(4294967396)),
                    ("segment_requests", I(1)),
                ],
            ),
            (
                NAK_NO_REQUESTS,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_directive")),
                    ("direction", S("toward_sender")),
                    ("mode", S("acknowledged")),
                    ("crc", B(false)),
                    ("large_file", B(false)),
                    ("data_field_length", I(9)),
                    ("source_entity", I(258)),
                    ("transaction", I(3735928559)),
                    ("dest_entity", I(772)),
                    ("directive", S("nak")),
                    ("directive_code", I(8)),
                    ("start_of_scope", I(100)),
                    ("end_of_scope", I(200)),
                    ("segment_requests", I(0)),
                ],
            ),
            (
                PROMPT_NAK,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_directive")),
                    ("direction", S("toward_receiver")),
                    ("mode", S("acknowledged")),
                    ("crc", B(false)),
                    ("large_file", B(false)),
                    ("data_field_length", I(2)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("directive", S("prompt")),
                    ("directive_code", I(9)),
                    ("response_required", S("nak")),
                ],
            ),
            (
                PROMPT_KEEP_ALIVE_CRC,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_directive")),
                    ("direction", S("toward_receiver")),
                    ("mode", S("acknowledged")),
                    ("crc", B(true)),
                    ("large_file", B(false)),
                    ("data_field_length", I(4)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("crc_ok", B(true)),
                    ("directive", S("prompt")),
                    ("directive_code", I(9)),
                    ("response_required", S("keep_alive")),
                ],
            ),
            (
                KEEP_ALIVE,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_directive")),
                    ("direction", S("toward_sender")),
                    ("mode", S("acknowledged")),
                    ("crc", B(false)),
                    ("large_file", B(false)),
                    ("data_field_length", I(5)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("directive", S("keep_alive")),
                    ("directive_code", I(12)),
                    ("progress", I(777)),
                ],
            ),
            (
                KEEP_ALIVE_LARGE,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_directive")),
                    ("direction", S("toward_sender")),
                    ("mode", S("acknowledged")),
                    ("crc", B(false)),
                    ("large_file", B(true)),
                    ("data_field_length", I(9)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("directive", S("keep_alive")),
                    ("directive_code", I(12)),
                    ("progress", I(34359738368)),
                ],
            ),
            (
                FILE_DATA,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_data")),
                    ("direction", S("toward_receiver")),
                    ("mode", S("acknowledged")),
                    ("crc", B(false)),
                    ("large_file", B(false)),
                    ("data_field_length", I(20)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("segmentation_control", B(false)),
                    ("segment_metadata", B(false)),
                    ("offset", I(1024)),
                    ("length", I(16)),
                ],
            ),
            (
                FILE_DATA_UNACK_WIDE_IDS,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_data")),
                    ("direction", S("toward_receiver")),
                    ("mode", S("unacknowledged")),
                    ("crc", B(false)),
                    ("large_file", B(false)),
                    ("data_field_length", I(68)),
                    ("source_entity", I(258)),
                    ("transaction", I(3735928559)),
                    ("dest_entity", I(772)),
                    ("segmentation_control", B(false)),
                    ("segment_metadata", B(false)),
                    ("offset", I(0)),
                    ("length", I(64)),
                ],
            ),
            (
                FILE_DATA_LARGE,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_data")),
                    ("direction", S("toward_receiver")),
                    ("mode", S("acknowledged")),
                    ("crc", B(false)),
                    ("large_file", B(true)),
                    ("data_field_length", I(11)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("segmentation_control", B(false)),
                    ("segment_metadata", B(false)),
                    ("offset", I(4294967303)),
                    ("length", I(3)),
                ],
            ),
            (
                FILE_DATA_SEGMENT_METADATA,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_data")),
                    ("direction", S("toward_receiver")),
                    ("mode", S("acknowledged")),
                    ("crc", B(false)),
                    ("large_file", B(false)),
                    ("data_field_length", I(14)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("segmentation_control", B(true)),
                    ("segment_metadata", B(true)),
                    ("record_continuation", S("start_and_end")),
                    ("segment_metadata_length", I(3)),
                    ("offset", I(64)),
                    ("length", I(6)),
                ],
            ),
            (
                FILE_DATA_SEGMENT_METADATA_EMPTY_CRC,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_data")),
                    ("direction", S("toward_receiver")),
                    ("mode", S("acknowledged")),
                    ("crc", B(true)),
                    ("large_file", B(false)),
                    ("data_field_length", I(9)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("crc_ok", B(true)),
                    ("segmentation_control", B(true)),
                    ("segment_metadata", B(true)),
                    ("record_continuation", S("start")),
                    ("segment_metadata_length", I(0)),
                    ("offset", I(70)),
                    ("length", I(2)),
                ],
            ),
            (
                FILE_DATA_CRC,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_data")),
                    ("direction", S("toward_receiver")),
                    ("mode", S("acknowledged")),
                    ("crc", B(true)),
                    ("large_file", B(false)),
                    ("data_field_length", I(11)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("crc_ok", B(true)),
                    ("segmentation_control", B(false)),
                    ("segment_metadata", B(false)),
                    ("offset", I(5)),
                    ("length", I(5)),
                ],
            ),
            (
                FILE_DATA_LARGE_SEGMETA_CRC_U64,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_data")),
                    ("direction", S("toward_receiver")),
                    ("mode", S("acknowledged")),
                    ("crc", B(true)),
                    ("large_file", B(true)),
                    ("data_field_length", I(75)),
                    ("source_entity", I(9223372036854775809)),
                    ("transaction", I(18446744073709551615)),
                    ("dest_entity", I(9)),
                    ("crc_ok", B(true)),
                    ("segmentation_control", B(false)),
                    ("segment_metadata", B(true)),
                    ("record_continuation", S("end")),
                    ("segment_metadata_length", I(63)),
                    ("offset", I(18446744073709551614)),
                    ("length", I(1)),
                ],
            ),
            (
                FILE_DATA_EMPTY,
                vec![
                    ("version", I(1)),
                    ("pdu_type", S("file_data")),
                    ("direction", S("toward_receiver")),
                    ("mode", S("acknowledged")),
                    ("crc", B(false)),
                    ("large_file", B(false)),
                    ("data_field_length", I(4)),
                    ("source_entity", I(1)),
                    ("transaction", I(3)),
                    ("dest_entity", I(2)),
                    ("segmentation_control", B(false)),
                    ("segment_metadata", B(false)),
                    ("offset", I(4096)),
                    ("length", I(0)),
                ],
            ),
        ]
    }

    #[test]
    fn fields_equal_spacepackets_decoding() {
        for (h, want) in expected() {
            assert_eq!(classify(&hex(h)), Some(want), "PDU {h:.40}");
        }
    }

    #[test]
    fn crc16_check_value() {
        // CRC-16/CCITT-FALSE check value: "123456789" -> 0x29B1.
        assert_eq!(crc16(b"123456789"), 0x29b1);
    }

    fn field(f: &Fields, name: &str) -> Option<Value> {
        f.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn corrupted_crc_still_classifies_with_crc_ok_false() {
        let mut pdu = hex(FILE_DATA_CRC);
        let n = pdu.len();
        pdu[n - 3] ^= 0x01; // a file data octet
        let f = classify(&pdu).expect("still a PDU");
        assert_eq!(field(&f, "crc_ok"), Some(B(false)));
        assert_eq!(field(&f, "offset"), Some(I(5)));
    }

    #[test]
    fn condition_codes_table_5_5() {
        // Finished PDUs (hand-built) with every condition code of wire.json.
        let names: Vec<&'static str> = crate::classify::code_names(
            crate::classify::Protocol::named("cfdp"),
            "condition_codes",
        )
        .into_iter()
        .map(|n| &*Box::leak(n.expect("16 codes").into_boxed_str()))
        .collect();
        assert_eq!(names.len(), 16);
        for (code, name) in names.iter().enumerate() {
            let pdu = [
                0x28,
                0x00,
                0x02,
                0x00,
                0x01,
                0x03,
                0x02,
                0x05,
                (code as u8) << 4 | 0x02,
            ];
            let f = classify(&pdu).expect("Finished");
            assert_eq!(field(&f, "condition"), Some(S(name)), "code {code}");
        }
    }

    #[test]
    fn version_0_accepted_versions_2_to_7_rejected() {
        let mut pdu = hex(PROMPT_NAK);
        pdu[0] &= 0x1f;
        assert_eq!(field(&classify(&pdu).unwrap(), "version"), Some(I(0)));
        for v in 2..8u8 {
            pdu[0] = (pdu[0] & 0x1f) | (v << 5);
            assert_eq!(classify(&pdu), None, "version {v}");
        }
    }

    #[test]
    fn malformed_directives_are_rejected() {
        let header = [0x20, 0x00, 0x00, 0x00, 0x01, 0x03, 0x02];
        let with = |data: &[u8]| {
            let mut p = header.to_vec();
            p[2] = data.len() as u8;
            p.extend_from_slice(data);
            p
        };
        // Sanity: the helper builds a valid Prompt.
        assert!(classify(&with(&[0x09, 0x80])).is_some());
        for (why, data) in [
            ("reserved directive code 0x0a", &[0x0a, 0x00][..]),
            ("reserved directive code 0x00", &[0x00][..]),
            ("empty data field", &[][..]),
            ("Prompt with an extra octet", &[0x09, 0x80, 0x00][..]),
            ("ACK of a reserved directive", &[0x06, 0x10, 0x01][..]),
            ("ACK too short", &[0x06, 0x40][..]),
            (
                "Keep Alive progress cut short",
                &[0x0c, 0x00, 0x00, 0x01][..],
            ),
            (
                "NAK with half a segment request",
                &[0x08, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1][..],
            ),
            (
                "EOF with a non-entity TLV",
                &[0x04, 0xf0, 0, 0, 0, 0, 0, 0, 0, 1, 0x05, 0x01, 0x07][..],
            ),
            (
                "EOF fault location running past",
                &[0x04, 0xf0, 0, 0, 0, 0, 0, 0, 0, 1, 0x06, 0x02, 0x07][..],
            ),
            (
                "EOF empty fault location",
                &[0x04, 0xf0, 0, 0, 0, 0, 0, 0, 0, 1, 0x06, 0x00][..],
            ),
            (
                "Finished with a flow label TLV",
                &[0x05, 0x02, 0x05, 0x01, 0x07][..],
            ),
            (
                "Metadata missing destination name",
                &[0x07, 0x40, 0, 0, 0, 9, 0x01, b'a'][..],
            ),
            (
                "Metadata with an entity ID TLV",
                &[0x07, 0x40, 0, 0, 0, 9, 0, 0, 0x06, 0x01, 0x01][..],
            ),
            (
                "EOF(no error) with a fault location",
                &[0x04, 0x00, 0, 0, 0, 0, 0, 0, 0, 1, 0x06, 0x01, 0x07][..],
            ),
            (
                "Finished(no error) with a fault location",
                &[0x05, 0x02, 0x06, 0x01, 0x07][..],
            ),
            (
                "Finished filestore response after the fault location",
                &[0x05, 0x42, 0x06, 0x01, 0x07, 0x01, 0x03, 0x00, 0x00, 0x00][..],
            ),
            (
                "Finished filestore response whose first file name runs past its TLV",
                &[0x05, 0x02, 0x01, 0x05, 0x14, 0x2a, b'/', b't', b'x'][..],
            ),
            (
                "Finished filestore response without its filestore message",
                &[0x05, 0x02, 0x01, 0x03, 0x10, 0x01, b'a'][..],
            ),
            (
                "Finished rename response without its filestore message",
                &[0x05, 0x02, 0x01, 0x04, 0x20, 0x01, b'a', 0x00][..],
            ),
            (
                "Metadata filestore request whose first file name runs past its TLV",
                &[0x07, 0x40, 0, 0, 0, 9, 0, 0, 0x00, 0x03, 0x10, 0x09, b'a'][..],
            ),
        ] {
            assert_eq!(classify(&with(data)), None, "{why}");
        }
    }

    #[test]
    fn filestore_tlvs_must_hold_their_lvs() {
        // Issue 27: our Lua dissector flagged an LV overrun inside this
        // Finished's filestore response (a delete, action 1: first file name
        // LV of length 0x2a in a 13-octet value); spacepackets 0.32.0 fails
        // on it too ("Detected length exceeds size of passed bytearray").
        assert_eq!(
            classify(&hex("280011000107020502010d142a6f746d702f612e54f87400")),
            None
        );
        let header = [0x20, 0x00, 0x00, 0x00, 0x01, 0x03, 0x02];
        let with = |data: &[u8]| {
            let mut p = header.to_vec();
            p[2] = data.len() as u8;
            p.extend_from_slice(data);
            p
        };
        for (why, data) in [
            (
                "delete response: first file name, message",
                &[0x05, 0x02, 0x01, 0x04, 0x10, 0x01, b'a', 0x00][..],
            ),
            (
                "rename response: two file names, message",
                &[
                    0x05, 0x02, 0x01, 0x07, 0x20, 0x01, b'a', 0x01, b'b', 0x01, b'm',
                ][..],
            ),
            (
                "delete response with an empty second name after its LVs",
                &[0x05, 0x02, 0x01, 0x05, 0x10, 0x01, b'a', 0x00, 0x00][..],
            ),
            (
                "filestore response without its action code octet",
                &[0x05, 0x02, 0x01, 0x00][..],
            ),
            (
                "Metadata with a create-file filestore request",
                &[0x07, 0x40, 0, 0, 0, 9, 0, 0, 0x00, 0x03, 0x00, 0x01, b'a'][..],
            ),
        ] {
            assert!(classify(&with(data)).is_some(), "{why}");
        }
    }

    #[test]
    fn file_data_segment_metadata_must_fit() {
        // Segment metadata length 63 with only a few octets behind it.
        let pdu = [
            0x30, 0x00, 0x06, 0x08, 0x01, 0x03, 0x02, 0x3f, 0, 0, 0, 0, 0,
        ];
        assert_eq!(classify(&pdu), None);
    }

    #[test]
    fn truncated_prefixes_and_trailing_bytes_are_rejected() {
        for s in samples() {
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
        never_panics(
            classify,
            &samples(),
            (200_000, 48),
            (50_000, 3),
            |buf, _| {
                // Bias toward plausible PDUs: version 1 and a data field length
                // that matches the buffer, so the body parsers get exercised.
                if buf.len() >= 4 {
                    buf[0] = (buf[0] & 0x1f) | 0x20;
                    let hdr =
                        4 + 2 * (usize::from((buf[3] >> 4) & 7) + 1) + usize::from(buf[3] & 7) + 1;
                    if buf.len() >= hdr {
                        let d = (buf.len() - hdr) as u16;
                        buf[1..3].copy_from_slice(&d.to_be_bytes());
                    }
                }
            },
        );
    }
}
