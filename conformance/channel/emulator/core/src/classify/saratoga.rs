//! Saratoga (draft-wood-tsvwg-saratoga-22, December 2017, the last
//! revision) packet classifier. Saratoga runs over UDP port 7542 (§9).
//!
//! Every packet starts with one 32-bit word (§4):
//!
//! ```text
//!  bits 0-2   version: 001 for this specification (000 is the older,
//!             incompatible pre-draft format, not classified)
//!  bits 3-7   packet type: 0 BEACON, 1 REQUEST, 2 METADATA, 3 DATA, 4 STATUS
//!  bits 8-31  flags; REQUEST, METADATA and STATUS put an 8-bit field in
//!             bits 24-31 (request type, checksum length/type, status code)
//! ```
//!
//! Bit numbers below follow the draft's figures: bit 0 is the most
//! significant bit of the first word. Flag bits 8-9 give the width of the
//! offset descriptors (00 16, 01 32, 10 64, 11 128 bits): the exact width
//! used in METADATA, DATA and STATUS, the largest supported in BEACON and
//! REQUEST (§4.1). 128-bit descriptor values above 2^64-1 are reported as
//! 2^64-1 (fields are 64-bit).

use std::sync::OnceLock;

use super::{be, code_name, Fields, Value};

/// Version 1 (`001`), the version this draft specifies (§4).
const SARATOGA_VERSION: u64 = 1;

/// Length of the optional DATA/STATUS timestamp/nonce field (§4.4, App. A).
const TIMESTAMP_LEN: usize = 16;

/// Bit `n` (0 = MSB) of the first 32-bit word.
fn bit(word: u64, n: u32) -> bool {
    (word >> (31 - n)) & 1 == 1
}

/// Two-bit field at bits `n`, `n+1`.
fn bits2(word: u64, n: u32) -> u64 {
    (word >> (30 - n)) & 3
}

/// Descriptor width in octets for a 2-bit size code (§4.1 table).
fn width(code: u64) -> usize {
    2 << code
}

/// An unsigned descriptor of `w` octets at `pos`, saturated to 64 bits.
fn descriptor(p: &[u8], pos: usize, w: usize) -> Option<u64> {
    if w <= 8 {
        return be(p, pos, w);
    }
    let hi = be(p, pos, w - 8)?;
    let lo = be(p, pos + w - 8, 8)?;
    Some(if hi == 0 { lo } else { u64::MAX })
}

/// Transfer type of METADATA and DATA, flag bits 10-11 (§4.3, §4.4;
/// specs/saratoga/wire.json transfer_types).
fn transfer_name(code: u64) -> &'static str {
    static T: OnceLock<Vec<Option<String>>> = OnceLock::new();
    code_name(&T, "saratoga", "transfer_types", code as usize).expect("2-bit transfer type")
}

/// BEACON/REQUEST capability and willingness pairs (bits 12-13 send,
/// 14-15 receive; §4.1; wire.json capabilities): 00 none, 10 capable but
/// unwilling, 11 willing, 01 invalid.
fn willingness(code: u64) -> Option<&'static str> {
    static T: OnceLock<Vec<Option<String>>> = OnceLock::new();
    code_name(&T, "saratoga", "capabilities", code as usize)
}

/// Classify one UDP payload as a Saratoga packet.
pub fn classify(p: &[u8]) -> Option<Fields> {
    let word = be(p, 0, 4)?;
    let version = word >> 29;
    let ptype = (word >> 24) & 0x1f;
    if version != SARATOGA_VERSION {
        return None;
    }
    // §4 packet types (specs/saratoga/wire.json packet_types).
    static TYPES: OnceLock<Vec<Option<String>>> = OnceLock::new();
    let name = code_name(&TYPES, "saratoga", "packet_types", ptype as usize)?;
    let desc_code = bits2(word, 8);
    let mut f: Fields = vec![
        ("type", Value::Str(name)),
        ("version", Value::Int(version)),
        ("descriptor", Value::Int(16 << desc_code)),
    ];
    match ptype {
        0 => beacon(p, word, &mut f)?,
        1 => request(p, word, &mut f)?,
        2 => metadata(p, word, &mut f)?,
        3 => data(p, word, width(desc_code), &mut f)?,
        _ => status(p, word, width(desc_code), &mut f)?,
    }
    Some(f)
}

/// BEACON (§4.1): flags, optional free space (bit 17; width by bits
/// 18-19, in KiB), then the endpoint identifier, UTF-8, to the end of
/// the packet (it MUST identify the peer, so it is not empty).
fn beacon(p: &[u8], word: u64, f: &mut Fields) -> Option<()> {
    f.push(("streaming", Value::Bool(bit(word, 11))));
    f.push(("sending", Value::Str(willingness(bits2(word, 12))?)));
    f.push(("receiving", Value::Str(willingness(bits2(word, 14))?)));
    f.push(("udp_lite", Value::Bool(bit(word, 16))));
    let mut pos = 4;
    if bit(word, 17) {
        let w = width(bits2(word, 18));
        f.push(("free_space", Value::Int(descriptor(p, pos, w)?)));
        pos += w;
    }
    let eid = p.get(pos..).filter(|e| !e.is_empty())?;
    std::str::from_utf8(eid).ok()?;
    Some(())
}

/// REQUEST (§4.2): flags in bits 8-23, request type in bits 24-31, the
/// 32-bit session Id, a null-terminated UTF-8 file path (at least the
/// null octet) and an optional authentication field.
fn request(p: &[u8], word: u64, f: &mut Fields) -> Option<()> {
    f.push(("streaming", Value::Bool(bit(word, 11))));
    f.push(("udp_lite", Value::Bool(bit(word, 16))));
    static REQUESTS: OnceLock<Vec<Option<String>>> = OnceLock::new();
    let req = code_name(
        &REQUESTS,
        "saratoga",
        "request_types",
        (word & 0xff) as usize,
    )
    .expect("request_types names every 8-bit code");
    f.push(("request", Value::Str(req)));
    f.push(("session", Value::Int(be(p, 4, 4)?)));
    let path = p.get(8..)?;
    let nul = path.iter().position(|&b| b == 0)?;
    std::str::from_utf8(&path[..nul]).ok()?;
    Some(())
}

/// METADATA (§4.3): flags bits 8-23 (8-9 descriptor, 10-11 transfer type,
/// 12 transfer no longer in progress, 13 UDP-Lite permitted), checksum
/// length (bits 24-27, 32-bit words) and type (bits 28-31), session Id,
/// checksum, then one Directory Entry (§5): properties(16, first bit 1,
/// bits 8-9 size descriptor width), size (descriptor), mtime(32),
/// ctime(32), null-terminated file path.
fn metadata(p: &[u8], word: u64, f: &mut Fields) -> Option<()> {
    f.push(("transfer", Value::Str(transfer_name(bits2(word, 10)))));
    f.push(("in_progress", Value::Bool(!bit(word, 12))));
    f.push(("udp_lite", Value::Bool(bit(word, 13))));
    let sum_words = usize::try_from((word >> 4) & 0xf).ok()?;
    static CHECKSUMS: OnceLock<Vec<Option<String>>> = OnceLock::new();
    let checksum = code_name(
        &CHECKSUMS,
        "saratoga",
        "checksum_types",
        (word & 0xf) as usize,
    )
    .expect("checksum_types names every 4-bit code");
    f.push(("checksum", Value::Str(checksum)));
    f.push(("session", Value::Int(be(p, 4, 4)?)));
    let entry = 8 + sum_words * 4;
    let props = be(p, entry, 2)?;
    if props & 0x8000 == 0 {
        return None;
    }
    let w = width((props >> 6) & 3);
    f.push(("file_size", Value::Int(descriptor(p, entry + 2, w)?)));
    let path = p.get(entry + 2 + w + 8..)?;
    let nul = path.iter().position(|&b| b == 0)?;
    std::str::from_utf8(&path[..nul]).ok()?;
    Some(())
}

/// DATA (§4.4): flags (8-9 descriptor, 10-11 transfer type, 12 timestamp
/// present, 15 STATUS requested, 16 End of Data), session Id, optional
/// 128-bit timestamp/nonce, offset descriptor, payload (may be empty).
fn data(p: &[u8], word: u64, w: usize, f: &mut Fields) -> Option<()> {
    let ts = bit(word, 12);
    f.push(("transfer", Value::Str(transfer_name(bits2(word, 10)))));
    f.push(("timestamp", Value::Bool(ts)));
    f.push(("status_request", Value::Bool(bit(word, 15))));
    f.push(("eod", Value::Bool(bit(word, 16))));
    f.push(("session", Value::Int(be(p, 4, 4)?)));
    let pos = 8 + if ts { TIMESTAMP_LEN } else { 0 };
    f.push(("offset", Value::Int(descriptor(p, pos, w)?)));
    f.push(("length", Value::Int((p.len() - pos - w) as u64)));
    Some(())
}

/// STATUS error codes (§4.5.1; specs/saratoga/wire.json status_codes).
fn status_name(code: u64) -> &'static str {
    static T: OnceLock<Vec<Option<String>>> = OnceLock::new();
    code_name(&T, "saratoga", "status_codes", code as usize)
        .expect("status_codes names every 8-bit code")
}

/// STATUS (§4.5): flags (8-9 descriptor, 12 timestamp present, 13 METADATA
/// not received, 14 hole list incomplete, 15 voluntary), status code in
/// bits 24-31, session Id, optional timestamp, progress indicator and
/// in-response-to descriptors, then hole pairs (start, end descriptors).
/// §4.5.1: the offsets of a failure STATUS (non-zero code) MUST NOT be
/// processed, so they are neither checked nor reported.
fn status(p: &[u8], word: u64, w: usize, f: &mut Fields) -> Option<()> {
    let ts = bit(word, 12);
    let code = word & 0xff;
    f.push(("timestamp", Value::Bool(ts)));
    f.push(("metadata_missing", Value::Bool(bit(word, 13))));
    f.push(("holes_incomplete", Value::Bool(bit(word, 14))));
    f.push(("voluntary", Value::Bool(bit(word, 15))));
    f.push(("status", Value::Str(status_name(code))));
    f.push(("status_code", Value::Int(code)));
    f.push(("session", Value::Int(be(p, 4, 4)?)));
    if code != 0 {
        return Some(());
    }
    let pos = 8 + if ts { TIMESTAMP_LEN } else { 0 };
    f.push(("progress", Value::Int(descriptor(p, pos, w)?)));
    f.push(("in_response_to", Value::Int(descriptor(p, pos + w, w)?)));
    let holes = p.len() - (pos + 2 * w);
    if holes % (2 * w) != 0 {
        return None;
    }
    f.push(("holes", Value::Int((holes / (2 * w)) as u64)));
    Some(())
}

#[cfg(test)]
pub mod tests {
    use super::super::{Fields, Value};
    use super::*;

    /// Hand-built frames following the figures of draft-wood-tsvwg-saratoga-22
    /// (there is no public implementation to capture from that we could
    /// run here). Bit numbers are the draft's (0 = MSB of the first word).
    /// Session Ids 0x5a5a000N. The Python test reads this table from this
    /// file: keep one `("name", "hex"),` per line.
    pub const FRAMES: &[(&str, &str)] = &[
        // BEACON §4.1: 20 = version 001, type 00000. Flags 5f 50 00:
        // bits 8-9 01 (up to 32-bit descriptors), 10 0, 11 1 (streaming),
        // 12-13 11 (can and will send), 14-15 11 (can and will receive),
        // 16 0 (no UDP-Lite), 17 1 (free space present), 18-19 01 (32-bit
        // free space field). Free space 00100000 KiB (1 GiB). Endpoint
        // identifier "sat1.example".
        ("beacon_full", "205f500000100000736174312e6578616d706c65"),
        // BEACON: flags 08 00 00: 16-bit descriptors only, no streaming,
        // 12-13 10 (can send, unwilling now), 14-15 00 (cannot receive),
        // no free space. Endpoint identifier "g".
        ("beacon_min", "2008000067"),
        // REQUEST §4.2: 21 = version 1, type 1. Flags 93 80: bits 8-9 10
        // (64-bit), 11 1 (can receive streams), 14-15 11 (can and will
        // receive), 16 1 (UDP-Lite). Request type 01 (_get_). Session Id
        // 5a5a0001. File path "/data/img001.tif" + null.
        ("request_get", "219380015a5a00012f646174612f696d673030312e74696600"),
        // REQUEST: flags 03 00 (16-bit, willing to receive), request type 06
        // (_getdir_), Id 5a5a0002, path "/data" + null.
        ("request_getdir", "210300065a5a00022f6461746100"),
        // REQUEST: flags 0f 00 (can and will send and receive), request
        // type 02 (_put_), Id 5a5a0003, path "up.bin" + null, then a 4-octet
        // authentication field deadbeef.
        ("request_put_auth", "210f00025a5a000375702e62696e00deadbeef"),
        // METADATA §4.3: 22 = type 2. Flags 40 00: bits 8-9 01 (32-bit
        // descriptors), 10-11 00 (a file), 12 0 (in progress), 13 0
        // (reliable, UDP). Sumleng 4 (words) / sumtype 2 (MD5) = 42. Id
        // 5a5a0001. MD5 (an arbitrary 128-bit value here). Directory entry
        // §5: properties 8040 (bit 0 set, normal file, bits 8-9 01 = 32-bit
        // size), size 00012345, mtime and ctime 21a3f2c0 (seconds since
        // 2000), path "img001.tif" + null.
        ("metadata_md5", "224000425a5a00010123456789abcdeffedcba987654321080400001234521a3f2c021a3f2c0696d673030312e74696600"),
        // METADATA: flags bc 00: bits 8-9 10 (64-bit), 10-11 11 (stream),
        // 12 1 (transfer terminated), 13 1 (UDP-Lite permitted); no
        // checksum (00). Id 5a5a0004. Directory entry: properties 8280
        // (bit 0, bit 6 special, bits 8-9 10 = 64-bit size), size 0 (a
        // stream), mtime, ctime, path "cam0" + null.
        ("metadata_stream_end", "22bc00005a5a00048280000000000000000021a3f2c021a3f2c063616d3000"),
        // DATA §4.4: 23 = type 3. Flags 00 00 00: 16-bit descriptors, a
        // file, no timestamp, no STATUS request, not EOD. Id 5a5a0001,
        // offset 0400 (1024), 16 octets of payload.
        ("data16", "230000005a5a00010400000102030405060708090a0b0c0d0e0f"),
        // DATA: flags 49 00: bits 8-9 01 (32-bit), 12 1 (timestamp), 15 1
        // (STATUS requested). Id, 128-bit timestamp (App. A: 32-bit POSIX
        // time 5a000000, zeros, last octet 01 = "32-bit POSIX timestamp"),
        // offset 00010000 (65536), payload "payload!".
        ("data32_ts_req", "234900005a5a00015a000000000000000000000000000001000100007061796c6f616421"),
        // DATA: flags 81 80: bits 8-9 10 (64-bit), 15 1 (STATUS requested),
        // 16 1 (End of Data). Offset 0000000100000000 (4 GiB), no payload
        // (§4.4: an empty EOD DATA elicits a STATUS).
        ("data64_eod", "238180005a5a00010000000100000000"),
        // DATA: flags d0 00: bits 8-9 11 (128-bit), 10-11 01 (directory
        // record, answering _getdir_). Id 5a5a0002, 128-bit offset 512,
        // two payload octets (the start of a directory entry).
        ("data128_dir", "23d000005a5a0002000000000000000000000000000002008000"),
        // STATUS §4.5: 24 = type 4. Flags 40 00: 32-bit descriptors, no
        // timestamp, METADATA received, hole list complete, requested (not
        // voluntary). Status 00 (success). Id, progress indicator 00000400,
        // in-response-to 00002000, holes [400, 7ff] and [1000, 13ff].
        ("status_holes", "244000005a5a0001000004000000200000000400000007ff00001000000013ff"),
        // STATUS: flags 09 00: 16-bit, 12 1 (timestamp), 15 1 (voluntary);
        // status 00. Id, echoed timestamp, progress = in-response-to = 1e00
        // (7680, the file length: transfer complete, §6.6), no holes.
        ("status_done_ts", "240900005a5a00015a0000000000000000000000000000011e001e00"),
        // STATUS: flags 05 00: 16-bit, 13 1 (METADATA not received), 15 1
        // (voluntary); status 10 (METADATA required). Id, zero progress and
        // in-response-to (§4.5.1: not to be processed in a failure STATUS).
        ("status_error", "240500105a5a000100000000"),
        // STATUS: flags 82 00: 64-bit, 14 1 (incomplete hole list); status
        // 00. Progress 100000000, in-response-to 100001000, one hole
        // [100000400, 1000007ff].
        ("status64_partial", "248200005a5a000100000001000000000000000100001000000000010000040000000001000007ff"),
    ];

    pub use crate::classify::testutil::hex;
    use crate::classify::testutil::never_panics;

    pub fn samples() -> Vec<Vec<u8>> {
        FRAMES.iter().map(|(_, h)| hex(h)).collect()
    }

    fn frame(name: &str) -> Vec<u8> {
        hex(FRAMES.iter().find(|(n, _)| *n == name).unwrap().1)
    }

    fn int(k: &'static str, v: u64) -> (&'static str, Value) {
        (k, Value::Int(v))
    }

    fn s(k: &'static str, v: &'static str) -> (&'static str, Value) {
        (k, Value::Str(v))
    }

    fn b(k: &'static str, v: bool) -> (&'static str, Value) {
        (k, Value::Bool(v))
    }

    fn head(t: &'static str, descriptor: u64, rest: &[(&'static str, Value)]) -> Fields {
        let mut f = vec![
            s("type", t),
            int("version", 1),
            int("descriptor", descriptor),
        ];
        f.extend(rest.iter().cloned());
        f
    }

    /// Expected fields, read off the construction comments above.
    fn expected(name: &str) -> Fields {
        const S1: u64 = 0x5a5a_0001;
        match name {
            "beacon_full" => head(
                "beacon",
                32,
                &[
                    b("streaming", true),
                    s("sending", "willing"),
                    s("receiving", "willing"),
                    b("udp_lite", false),
                    int("free_space", 0x0010_0000),
                ],
            ),
            "beacon_min" => head(
                "beacon",
                16,
                &[
                    b("streaming", false),
                    s("sending", "capable"),
                    s("receiving", "none"),
                    b("udp_lite", false),
                ],
            ),
            "request_get" => head(
                "request",
                64,
                &[
                    b("streaming", true),
                    b("udp_lite", true),
                    s("request", "get"),
                    int("session", S1),
                ],
            ),
            "request_getdir" | "request_put_auth" => {
                let (req, id) = if name == "request_getdir" {
                    ("getdir", 0x5a5a_0002)
                } else {
                    ("put", 0x5a5a_0003)
                };
                head(
                    "request",
                    16,
                    &[
                        b("streaming", false),
                        b("udp_lite", false),
                        s("request", req),
                        int("session", id),
                    ],
                )
            }
            "metadata_md5" => head(
                "metadata",
                32,
                &[
                    s("transfer", "file"),
                    b("in_progress", true),
                    b("udp_lite", false),
                    s("checksum", "md5"),
                    int("session", S1),
                    int("file_size", 0x12345),
                ],
            ),
            "metadata_stream_end" => head(
                "metadata",
                64,
                &[
                    s("transfer", "stream"),
                    b("in_progress", false),
                    b("udp_lite", true),
                    s("checksum", "none"),
                    int("session", 0x5a5a_0004),
                    int("file_size", 0),
                ],
            ),
            "data16" => data(16, "file", [false, false, false], S1, 1024, 16),
            "data32_ts_req" => data(32, "file", [true, true, false], S1, 65536, 8),
            "data64_eod" => data(64, "file", [false, true, true], S1, 1 << 32, 0),
            "data128_dir" => data(128, "directory", [false; 3], 0x5a5a_0002, 512, 2),
            "status_holes" => status(32, [false; 4], "success", 0, Some([1024, 8192, 2])),
            "status_done_ts" => status(
                16,
                [true, false, false, true],
                "success",
                0,
                Some([7680, 7680, 0]),
            ),
            "status_error" => status(
                16,
                [false, true, false, true],
                "metadata_required",
                0x10,
                None,
            ),
            "status64_partial" => status(
                64,
                [false, false, true, false],
                "success",
                0,
                Some([1 << 32, (1 << 32) + 4096, 1]),
            ),
            other => panic!("no expectation for {other}"),
        }
    }

    /// `flags`: timestamp, status_request, eod.
    fn data(
        d: u64,
        transfer: &'static str,
        flags: [bool; 3],
        id: u64,
        off: u64,
        len: u64,
    ) -> Fields {
        head(
            "data",
            d,
            &[
                s("transfer", transfer),
                b("timestamp", flags[0]),
                b("status_request", flags[1]),
                b("eod", flags[2]),
                int("session", id),
                int("offset", off),
                int("length", len),
            ],
        )
    }

    /// `flags`: timestamp, metadata_missing, holes_incomplete, voluntary;
    /// `offsets`: progress, in_response_to, holes.
    fn status(
        d: u64,
        flags: [bool; 4],
        name: &'static str,
        code: u64,
        offsets: Option<[u64; 3]>,
    ) -> Fields {
        let mut f = head(
            "status",
            d,
            &[
                b("timestamp", flags[0]),
                b("metadata_missing", flags[1]),
                b("holes_incomplete", flags[2]),
                b("voluntary", flags[3]),
                s("status", name),
                int("status_code", code),
                int("session", 0x5a5a_0001),
            ],
        );
        if let Some([p, r, h]) = offsets {
            f.extend([
                int("progress", p),
                int("in_response_to", r),
                int("holes", h),
            ]);
        }
        f
    }

    #[test]
    fn draft_frames_classify_as_expected() {
        for (name, _) in FRAMES {
            assert_eq!(classify(&frame(name)), Some(expected(name)), "{name}");
        }
    }

    #[test]
    fn descriptors_above_64_bits_saturate() {
        let mut m = frame("data128_dir");
        m[8] = 1; // offset 2^120 + 512
        let f = classify(&m).unwrap();
        assert!(f.contains(&("offset", Value::Int(u64::MAX))));
    }

    #[test]
    fn malformed_frames_are_rejected() {
        let edit = |name: &str, e: &dyn Fn(&mut Vec<u8>)| {
            let mut m = frame(name);
            e(&mut m);
            classify(&m)
        };
        assert!(edit("data16", &|m| m[0] = 0x03).is_none(), "version 0");
        assert!(edit("data16", &|m| m[0] = 0x43).is_none(), "version 2");
        assert!(edit("data16", &|m| m[0] = 0x25).is_none(), "type 5");
        assert!(
            edit("beacon_min", &|m| m[1] = 0x04).is_none(),
            "send bits 01"
        );
        assert!(
            edit("beacon_min", &|m| m[1] = 0x09).is_none(),
            "receive bits 01"
        );
        assert!(edit("beacon_min", &|m| m.truncate(4)).is_none(), "no EID");
        assert!(
            edit("beacon_min", &|m| m[4] = 0xff).is_none(),
            "EID not UTF-8"
        );
        assert!(
            edit("beacon_full", &|m| m.truncate(7)).is_none(),
            "short free space"
        );
        assert!(
            edit("request_getdir", &|m| m.truncate(13)).is_none(),
            "no null"
        );
        assert!(
            edit("request_get", &|m| m[8] = 0xc3).is_none(),
            "path not UTF-8"
        );
        assert!(
            edit("metadata_md5", &|m| m[24] = 0x00).is_none(),
            "entry bit 0"
        );
        assert!(edit("metadata_md5", &|m| m.truncate(m.len() - 1)).is_none());
        assert!(
            edit("data64_eod", &|m| m.truncate(15)).is_none(),
            "short offset"
        );
        assert!(
            edit("status_holes", &|m| m.push(0)).is_none(),
            "odd hole list"
        );
        assert!(edit("status_holes", &|m| m.truncate(m.len() - 4)).is_none());
        // A failure STATUS is not checked past the session Id (§4.5.1).
        assert!(edit("status_error", &|m| m.truncate(8)).is_some());
        // Unknown request types and checksum types are still REQUEST and
        // METADATA packets.
        let f = edit("request_get", &|m| m[3] = 0x40).unwrap();
        assert!(f.contains(&("request", Value::Str("unknown"))));
    }

    #[test]
    fn truncated_prefixes_never_panic() {
        for (name, h) in FRAMES {
            let m = hex(h);
            for n in 0..m.len() {
                let r = classify(&m[..n]);
                if n < 5 {
                    assert!(r.is_none(), "{name}: {n}-octet prefix classified");
                }
            }
        }
    }

    #[test]
    fn random_and_mutated_bytes_never_panic() {
        never_panics(
            classify,
            &samples(),
            (200_000, 64),
            (100_000, 4),
            |buf, i| {
                if i % 2 == 0 && !buf.is_empty() {
                    buf[0] = 0x20 | (buf[0] % 5);
                }
            },
        );
    }
}
