--[[--------------------------------------------------------------------------
  ltp.lua -- Licklider Transmission Protocol (RFC 5326) for Wireshark/tshark.

  Protocol "dtnltp", field prefix "dtnltp.": it coexists with Wireshark's
  built-in "ltp" dissector.  Runs on the Lua 5.2 that Wireshark 4.0-4.2
  embed and on the Lua 5.4 of Wireshark 4.4 and later (see "Lua versions"
  below; dissectors/tests/test_lua_versions.py loads it under lua5.4).

  Covered:
    RFC 5326 §3.1    segment header (version, type, session ID, extension counts)
    RFC 5326 §3.1.2  all 16 segment type codes (0-3 red data, 4-7 green data,
                     8 RS, 9 RA, 10/11 undefined control, 12 CS, 13 CAS,
                     14 CR, 15 CAR)
    RFC 5326 §3.1.4  header extensions, §3.3 trailer extensions
    RFC 5326 §3.2.1  data segment, §3.2.2 report segment, §3.2.3 report ack,
                     §3.2.4 cancel segments and reason codes
  Session analysis (preference dtnltp.analysis, on by default): block and
    red-part sizes, copies (retransmissions), checkpoint -> report -> RA and
    cancel -> acknowledgment links with response times, and the checks they
    allow: miscolored data (§6.21), data beyond the end of block, a changed
    block size, segments sent beyond a retransmission limit (preference
    dtnltp.rtx_limit), acknowledgments of nothing seen, and (second pass
    only: Wireshark, tshark -2) checkpoints, reports and cancels never
    answered.
  Left out on purpose:
    no reassembly (one datagram = one segment, as ION's udplso/udplsi and
    licklider-udp send), no hand-off of block data to the bundle dissector.

  Field leaf names are the emulator classifier's field names ("fields" of
  specs/ltp/wire.json, the shared field vocabulary) and those of the Scapy
  layer (dissectors/ltp/layer.py), except that dtnltp.type is the numeric
  code (with the names as value_string) and dtnltp.type_name carries the name.

  Anomalies are ProtoExperts named dtnltp.expert.<slug>; MALFORMED (bytes that
  cannot be parsed) is kept apart from PROTOCOL (well-formed but violating an
  RFC rule).  Nothing is signalled through the Info column.  The field the
  first malformation lies in is dtnltp.malformed.field, named as the Scapy
  layer names it (LtpDecodeError.field).

  Preferences: dtnltp.udp_ports (range, default 1113) and dtnltp.heuristic
  (boolean, default false: the UDP heuristic is registered but disabled).

  The fact tables (segment types with their kind and flags, cancel reasons,
  extension tags, UDP port, version, SDNV width, RFC sections) are generated
  from specs/ltp/wire.json into the block marked below: edit wire.json, then
  run `python -m dissectors.luagen ltp`.

  Lua versions: bit operations use the BitOp library (global `bit`), which
  every Wireshark with Lua ships; `bit32` is gone from Lua 5.4.  BitOp's
  results are signed 32-bit numbers, so it only ever sees octets here.  Lua
  5.3+ tells integers from floats ("at byte " .. 5.0 reads "at byte 5.0"),
  and UInt64:tonumber() returns a float: every Lua number taken from the
  Wireshark API that is shown or used as a position goes through int().

  Use:  tshark -X lua_script:dissectors/ltp/ltp.lua -r capture.pcap -Y dtnltp
----------------------------------------------------------------------------]]

local band, rshift = bit.band, bit.rshift
local sbyte = string.byte
local floor = math.floor

-- A Lua number as an integer where it is exact (below 2^53): a no-op in Lua
-- 5.2, and in Lua 5.3+ the integer subtype (math.floor returns one there),
-- so that it prints without ".0" and indexes strings and tvbs as one.
local TWO53 = 9007199254740992
local function int(x)
    if x > -TWO53 and x < TWO53 then return floor(x) end
    return x
end
-- a UInt64 as a Lua number (exact below 2^53)
local function num(v)
    return int(v:tonumber())
end

-- Every wire fact (type codes and their flags, reason codes, extension tags,
-- UDP port, version, SDNV width, and the RFC 5326 section of each) comes from
-- specs/ltp/wire.json; dissectors/tests/test_luagen.py fails when this block
-- differs from what the generator gives.
-- BEGIN GENERATED from specs/ltp/wire.json (python -m dissectors.luagen ltp); do not edit
-- Licklider Transmission Protocol (RFC 5326)
local SPEC = "RFC 5326"
local AUTH_CIPHERSUITES = {
    [0] = "HMAC-SHA1-80",
    [1] = "RSA-SHA256",
    [255] = "NULL",
}
local AUTH_CIPHERSUITES_INFO = {
    [0] = { authval_len = 10 },
    [1] = {},
    [255] = { authval_len = 10 },
}
local AUTH_CIPHERSUITES_PRIVATE_FROM = 192
local AUTH_CIPHERSUITES_RESERVED_FROM = 128
local AUTH_CIPHERSUITES_UNASSIGNED_FROM = 2
local CANCEL_REASONS = {
    [0] = "USR_CNCLD",
    [1] = "UNREACH",
    [2] = "RLEXC",
    [3] = "MISCOLORED",
    [4] = "SYS_CNCLD",
    [5] = "RXMTCYCEXC",
}
local CANCEL_REASONS_RESERVED_FROM = 6
local EXTENSION_TAGS = {
    [0] = "LTP authentication extension (RFC 5327)",
    [1] = "LTP cookie extension (RFC 5327)",
}
local KINDS = {
    cancel = { section = "RFC 5326 §3.2.4" },
    cancel_ack = { section = "RFC 5326 §3.2.4" },
    green_data = { section = "RFC 5326 §3.1.1" },
    red_data = { section = "RFC 5326 §3.1.1" },
    report = { section = "RFC 5326 §3.2.2" },
    report_ack = { section = "RFC 5326 §3.2.3" },
    undefined = { section = "RFC 5326 §3.1.2" },
}
local SDNV_MAX_BYTES = 10
local SEGMENT_TYPES = {
    [0] = "RD",
    [1] = "RD-CP",
    [2] = "RD-CP-EORP",
    [3] = "RD-CP-EORP-EOB",
    [4] = "GD",
    [5] = "GD-U5",
    [6] = "GD-U6",
    [7] = "GD-EOB",
    [8] = "RS",
    [9] = "RA",
    [10] = "CTRL-U10",
    [11] = "CTRL-U11",
    [12] = "CS",
    [13] = "CAS",
    [14] = "CR",
    [15] = "CAR",
}
local SEGMENT_TYPES_INFO = {
    [0] = { checkpoint = false, defined = true, eob = false, eorp = false, kind = "red_data", red = true },
    [1] = { checkpoint = true, defined = true, eob = false, eorp = false, kind = "red_data", red = true },
    [2] = { checkpoint = true, defined = true, eob = false, eorp = true, kind = "red_data", red = true },
    [3] = { checkpoint = true, defined = true, eob = true, eorp = true, kind = "red_data", red = true },
    [4] = { checkpoint = false, defined = true, eob = false, eorp = false, kind = "green_data", red = false },
    [5] = { checkpoint = false, defined = false, eob = false, eorp = false, kind = "green_data", red = false },
    [6] = { checkpoint = false, defined = false, eob = false, eorp = false, kind = "green_data", red = false },
    [7] = { checkpoint = false, defined = true, eob = true, eorp = false, kind = "green_data", red = false },
    [8] = { checkpoint = false, defined = true, eob = false, eorp = false, kind = "report", red = false },
    [9] = { checkpoint = false, defined = true, eob = false, eorp = false, kind = "report_ack", red = false },
    [10] = { checkpoint = false, defined = false, eob = false, eorp = false, kind = "undefined", red = false },
    [11] = { checkpoint = false, defined = false, eob = false, eorp = false, kind = "undefined", red = false },
    [12] = { checkpoint = false, defined = true, eob = false, eorp = false, kind = "cancel", red = false },
    [13] = { checkpoint = false, defined = true, eob = false, eorp = false, kind = "cancel_ack", red = false },
    [14] = { checkpoint = false, defined = true, eob = false, eorp = false, kind = "cancel", red = false },
    [15] = { checkpoint = false, defined = true, eob = false, eorp = false, kind = "cancel_ack", red = false },
}
local UDP_PORT = 1113
local VERSION = 0
local SECTION = {
    auth_ciphersuites = "RFC 5327 §2.1",
    cancel_reasons = "RFC 5326 §3.2.4",
    extension_tags = "RFC 5326 §3.1.4",
    sdnv = "RFC 5326 §2",
    segment_types = "RFC 5326 §3.1.2",
    udp_port = "RFC 5326 §10.1",
    version = "RFC 5326 §3.1",
}
-- END GENERATED

-- the segment type's entry: kind, red, checkpoint, eorp, eob, defined
local function type_info(t)
    return SEGMENT_TYPES_INFO[t]
end
local function kind_of(t)
    return SEGMENT_TYPES_INFO[t].kind
end
local function is_data(t)
    local k = SEGMENT_TYPES_INFO[t].kind
    return k == "red_data" or k == "green_data"
end

-- report segment rules (claims, bounds, serials): the report kind's section
local RS_RULES = KINDS.report.section
local ONE_PER_DATAGRAM = "RFC 5326 §5: a UDP datagram carries whole segments; "
    .. "this dissector decodes one per datagram"

local proto = Proto("dtnltp", "Licklider Transmission Protocol (dtnconform)")

---------------------------------------------------------------------------
-- Fields
---------------------------------------------------------------------------
local F = {
    version = ProtoField.uint8("dtnltp.version", "Version", base.DEC, nil, 0xF0,
        SECTION.version .. ": MUST be " .. VERSION),
    type = ProtoField.uint8("dtnltp.type", "Segment type", base.DEC, SEGMENT_TYPES, 0x0F,
        SECTION.segment_types .. " segment type code"),
    type_name = ProtoField.string("dtnltp.type_name", "Type name"),
    kind = ProtoField.string("dtnltp.kind", "Kind"),
    red = ProtoField.bool("dtnltp.red", "Red data"),
    checkpoint = ProtoField.bool("dtnltp.checkpoint", "Checkpoint"),
    eorp = ProtoField.bool("dtnltp.eorp", "End of red part"),
    eob = ProtoField.bool("dtnltp.eob", "End of block"),
    session_originator = ProtoField.uint64("dtnltp.session_originator",
        "Session originator", base.DEC),
    session_number = ProtoField.uint64("dtnltp.session_number", "Session number", base.DEC),
    hdr_ext_count = ProtoField.uint8("dtnltp.hdr_ext_count", "Header extension count",
        base.DEC, nil, 0xF0),
    trl_ext_count = ProtoField.uint8("dtnltp.trl_ext_count", "Trailer extension count",
        base.DEC, nil, 0x0F),
    ext_tag = ProtoField.uint8("dtnltp.ext.tag", "Extension tag", base.HEX, EXTENSION_TAGS),
    ext_length = ProtoField.uint64("dtnltp.ext.length", "Extension length", base.DEC),
    ext_value = ProtoField.bytes("dtnltp.ext.value", "Extension value"),
    client_service_id = ProtoField.uint64("dtnltp.client_service_id", "Client service ID",
        base.DEC),
    offset = ProtoField.uint64("dtnltp.offset", "Offset", base.DEC),
    length = ProtoField.uint64("dtnltp.length", "Length", base.DEC),
    checkpoint_serial = ProtoField.uint64("dtnltp.checkpoint_serial",
        "Checkpoint serial number", base.DEC),
    report_serial = ProtoField.uint64("dtnltp.report_serial", "Report serial number",
        base.DEC),
    upper_bound = ProtoField.uint64("dtnltp.upper_bound", "Upper bound", base.DEC),
    lower_bound = ProtoField.uint64("dtnltp.lower_bound", "Lower bound", base.DEC),
    claim_count = ProtoField.uint64("dtnltp.claim_count", "Reception claim count", base.DEC),
    claim_offset = ProtoField.uint64("dtnltp.claim.offset", "Claim offset", base.DEC,
        nil, nil, "relative to the lower bound (" .. RS_RULES .. ")"),
    claim_length = ProtoField.uint64("dtnltp.claim.length", "Claim length", base.DEC),
    reason = ProtoField.uint8("dtnltp.reason", "Reason code", base.DEC, CANCEL_REASONS,
        nil, SECTION.cancel_reasons .. " reason code"),
    data = ProtoField.bytes("dtnltp.data", "Client service data"),
    -- the first malformation's field, under the Scapy layer's name
    -- (dissectors/ltp/layer.py, LtpDecodeError.field)
    malformed_field = ProtoField.string("dtnltp.malformed.field", "Field at fault", base.ASCII,
        "the field the first malformation lies in: version, session_originator, "
        .. "session_number, hdr_ext_count, header_extensions, client_service_id, offset, "
        .. "length, checkpoint_serial, report_serial, data, upper_bound, lower_bound, "
        .. "claim_count, claims, reason, trailer_extensions or trailing_bytes"),
    -- RFC 5327 extensions
    auth_suite = ProtoField.uint8("dtnltp.ext.auth.ciphersuite", "Ciphersuite", base.DEC,
        AUTH_CIPHERSUITES, nil, SECTION.auth_ciphersuites),
    auth_key_id = ProtoField.bytes("dtnltp.ext.auth.key_id", "KeyID"),
    auth_value = ProtoField.bytes("dtnltp.ext.auth.value", "AuthVal"),
    cookie = ProtoField.bytes("dtnltp.ext.cookie", "Cookie"),
    -- session analysis (preference dtnltp.analysis): generated fields
    a_block_size = ProtoField.uint64("dtnltp.analysis.block_size", "Block size", base.DEC,
        nil, nil, "offset + length of the session's end-of-block segment"),
    a_red_size = ProtoField.uint64("dtnltp.analysis.red_part_size", "Red-part size", base.DEC,
        nil, nil, "offset + length of the session's end-of-red-part checkpoint"),
    a_copy = ProtoField.uint32("dtnltp.analysis.copy", "Transmission", base.DEC, nil, nil,
        "1 for the first copy of this segment seen in the session, 2 for the first "
        .. "retransmission, ..."),
    a_copy_of = ProtoField.framenum("dtnltp.analysis.copy_of", "Copy of frame", base.NONE,
        frametype.DUP_ACK),
    a_cp_frame = ProtoField.framenum("dtnltp.analysis.checkpoint_frame",
        "Answers the checkpoint in frame", base.NONE, frametype.REQUEST),
    a_rs_frame = ProtoField.framenum("dtnltp.analysis.report_frame",
        "Report in frame", base.NONE, frametype.RESPONSE),
    a_ra_frame = ProtoField.framenum("dtnltp.analysis.ack_frame",
        "Acknowledged in frame", base.NONE, frametype.ACK),
    a_acked_frame = ProtoField.framenum("dtnltp.analysis.acks_frame",
        "Acknowledges the segment in frame", base.NONE, frametype.REQUEST),
    a_response_time = ProtoField.relative_time("dtnltp.analysis.response_time",
        "Response time", "time since the last copy of the segment this one answers"),
}
proto.fields = {
    F.version, F.type, F.type_name, F.kind, F.red, F.checkpoint, F.eorp, F.eob,
    F.session_originator, F.session_number, F.hdr_ext_count, F.trl_ext_count,
    F.ext_tag, F.ext_length, F.ext_value, F.client_service_id, F.offset, F.length,
    F.checkpoint_serial, F.report_serial, F.upper_bound, F.lower_bound, F.claim_count,
    F.claim_offset, F.claim_length, F.reason, F.data, F.malformed_field,
    F.auth_suite, F.auth_key_id, F.auth_value, F.cookie,
    F.a_block_size, F.a_red_size, F.a_copy, F.a_copy_of, F.a_cp_frame, F.a_rs_frame,
    F.a_ra_frame, F.a_acked_frame, F.a_response_time,
}

---------------------------------------------------------------------------
-- Expert infos
---------------------------------------------------------------------------
local function new_expert(slug, text, group, severity)
    return ProtoExpert.new("dtnltp.expert." .. slug, text, group, severity)
end
local MAL, PROTO, SEQ = expert.group.MALFORMED, expert.group.PROTOCOL, expert.group.SEQUENCE
local ERR, WARN = expert.severity.ERROR, expert.severity.WARN
local NOTE, CHAT = expert.severity.NOTE, expert.severity.CHAT

-- Citations: those of a wire fact come from the generated SECTION/KINDS
-- tables; the rest (data segment §3.2.1, trailer §3.3, ...) are written here.
local SDNV_CITE = SECTION.sdnv .. ", SDNV"
local DS_RULES = "RFC 5326 §3.2.1"
local EXT_CITE = SECTION.extension_tags .. "/§3.3"
local E = {
    -- malformed: the bytes cannot be parsed as RFC 5326 §3 says
    sdnv_truncated = new_expert("sdnv_truncated",
        "SDNV runs past the end of the datagram (" .. SDNV_CITE .. ")", MAL, ERR),
    sdnv_too_long = new_expert("sdnv_too_long",
        "SDNV longer than " .. SDNV_MAX_BYTES .. " bytes (" .. SDNV_CITE .. "; 64-bit limit)",
        MAL, ERR),
    sdnv_overflow = new_expert("sdnv_overflow",
        "SDNV value exceeds 64 bits (" .. SDNV_CITE .. ")", MAL, ERR),
    truncated = new_expert("truncated",
        "Segment ends before a mandatory field (RFC 5326 §3.1/§3.2)", MAL, ERR),
    bad_version = new_expert("bad_version",
        "Version number is not " .. VERSION .. " (" .. SECTION.version .. ")", MAL, ERR),
    ext_overrun = new_expert("ext_overrun",
        "Extension value runs past the datagram (" .. EXT_CITE .. ")", MAL, ERR),
    data_overrun = new_expert("data_overrun",
        "Data length runs past the datagram (" .. DS_RULES .. ")", MAL, ERR),
    claim_count_too_large = new_expert("claim_count_too_large",
        "Reception claim count impossibly large (" .. RS_RULES .. ")", MAL, ERR),
    trailing_bytes = new_expert("trailing_bytes",
        "Trailing bytes after the segment (" .. ONE_PER_DATAGRAM .. ")", MAL, ERR),
    -- protocol: well-formed, but against an RFC 5326 rule
    undefined_type = new_expert("undefined_type",
        "Undefined segment type code (" .. SECTION.segment_types .. ")", PROTO, WARN),
    bounds_inverted = new_expert("bounds_inverted",
        "Report lower bound exceeds upper bound (" .. RS_RULES .. ")", PROTO, ERR),
    claim_beyond_bound = new_expert("claim_beyond_bound",
        "Reception claim extends beyond the upper bound (" .. RS_RULES .. ")", PROTO, ERR),
    claim_order = new_expert("claim_order",
        "Reception claims not in ascending, non-overlapping order (" .. RS_RULES .. ")",
        PROTO, ERR),
    claim_adjacent = new_expert("claim_adjacent",
        "Reception claim starts exactly where the prior one ends (" .. RS_RULES
        .. " requires the offset to be greater)", PROTO, WARN),
    claim_zero_length = new_expert("claim_zero_length",
        "Reception claim length is 0 (" .. RS_RULES .. ": never less than 1)", PROTO, ERR),
    claim_count_zero = new_expert("claim_count_zero",
        "Report segment has no reception claims (" .. RS_RULES .. ")", PROTO, WARN),
    serial_zero = new_expert("serial_zero",
        "Serial number 0 (RFC 5326 §3.2.1/§3.2.2: checkpoint and report serial numbers "
        .. "MUST NOT be zero; 0 is the 'none' value of the peer's serial field)", PROTO, WARN),
    reason_unknown = new_expert("reason_unknown",
        "Cancel reason code not defined (" .. SECTION.cancel_reasons .. ")", PROTO, WARN),
    data_zero_length = new_expert("data_zero_length",
        "Data segment carries no data (" .. DS_RULES .. ")", PROTO, WARN),
    -- RFC 5327 extensions
    auth_empty = new_expert("auth_empty",
        "LTP authentication extension without its ciphersuite octet ("
        .. SECTION.auth_ciphersuites .. ")", PROTO, ERR),
    auth_no_authval = new_expert("auth_no_authval",
        "LTP authentication header extension with no AuthVal trailer extension ("
        .. SECTION.auth_ciphersuites .. ")", PROTO, WARN),
    authval_length = new_expert("authval_length",
        "AuthVal length is not the ciphersuite's (" .. SECTION.auth_ciphersuites
        .. ": 10 octets for HMAC-SHA1-80 and NULL)", PROTO, ERR),
    ciphersuite_unassigned = new_expert("ciphersuite_unassigned",
        "Ciphersuite unassigned or reserved (" .. SECTION.auth_ciphersuites .. ")", PROTO, WARN),
    cookie_empty = new_expert("cookie_empty",
        "Cookie extension with an empty cookie (RFC 5327 §2.2: a sufficiently long random "
        .. "number)", PROTO, WARN),
    cookie_in_trailer = new_expert("cookie_in_trailer",
        "Cookie in a trailer extension (RFC 5327 §2.2: the cookie is a header extension and "
        .. "has no trailer extension)", PROTO, WARN),
    -- session analysis (preference dtnltp.analysis; the ones that look ahead
    -- need the whole capture: Wireshark's second pass, tshark -2)
    miscolored = new_expert("miscolored",
        "Miscolored data: red data above green, or green below red, in one session "
        .. "(RFC 5326 §6.21: the red part is the block's prefix)", PROTO, ERR),
    beyond_eob = new_expert("beyond_eob",
        "Data beyond the end of the block its end-of-block segment gave (RFC 5326 §3.1.1, "
        .. "§3.2.1)", PROTO, ERR),
    size_changed = new_expert("size_changed",
        "A second end-of-block or end-of-red-part segment gives another size (RFC 5326 "
        .. "§3.1.1)", PROTO, ERR),
    copy = new_expert("copy",
        "Retransmission: a copy of an earlier segment of the session", SEQ, CHAT),
    rtx_limit = new_expert("rtx_limit",
        "Sent more often than the retransmission limit allows (preference "
        .. "dtnltp.rtx_limit; RFC 5326 §6.7, §6.8, §6.16)", SEQ, WARN),
    report_unknown_cp = new_expert("report_unknown_cp",
        "Report answers a checkpoint serial not seen in the session", SEQ, NOTE),
    ack_unknown_report = new_expert("ack_unknown_report",
        "Report acknowledgment for a report serial not seen in the session (RFC 5326 §3.2.3)",
        SEQ, NOTE),
    ack_no_cancel = new_expert("ack_no_cancel",
        "Cancel acknowledgment with no cancel segment before it in the session "
        .. "(RFC 5326 §6.17)", SEQ, WARN),
    checkpoint_no_report = new_expert("checkpoint_no_report",
        "Checkpoint never answered by a report in this capture (RFC 5326 §6.11)", SEQ, WARN),
    report_no_ack = new_expert("report_no_ack",
        "Report never acknowledged in this capture (RFC 5326 §6.13)", SEQ, WARN),
    cancel_no_ack = new_expert("cancel_no_ack",
        "Cancel segment never acknowledged in this capture (RFC 5326 §6.17)", SEQ, WARN),
}
-- the RFC reference appended to messages of parse failures
local CITE = {
    [E.sdnv_truncated] = SDNV_CITE, [E.sdnv_too_long] = SDNV_CITE,
    [E.sdnv_overflow] = SDNV_CITE, [E.truncated] = "RFC 5326 §3.1/§3.2",
    [E.ext_overrun] = EXT_CITE, [E.data_overrun] = DS_RULES,
    [E.claim_count_too_large] = RS_RULES,
}
proto.experts = {
    E.sdnv_truncated, E.sdnv_too_long, E.sdnv_overflow, E.truncated, E.bad_version,
    E.ext_overrun, E.data_overrun, E.claim_count_too_large, E.trailing_bytes,
    E.undefined_type, E.bounds_inverted, E.claim_beyond_bound, E.claim_order,
    E.claim_adjacent, E.claim_zero_length, E.claim_count_zero, E.serial_zero,
    E.reason_unknown, E.data_zero_length,
    E.auth_empty, E.auth_no_authval, E.authval_length, E.ciphersuite_unassigned,
    E.cookie_empty, E.cookie_in_trailer,
    E.miscolored, E.beyond_eob, E.size_changed, E.copy, E.rtx_limit, E.report_unknown_cp,
    E.ack_unknown_report, E.ack_no_cancel, E.checkpoint_no_report, E.report_no_ack,
    E.cancel_no_ack,
}

---------------------------------------------------------------------------
-- Preferences
---------------------------------------------------------------------------
local DEFAULT_PORTS = tostring(UDP_PORT)
proto.prefs.udp_ports = Pref.range("UDP ports", DEFAULT_PORTS,
    "UDP ports decoded as LTP (IANA assigned " .. UDP_PORT .. ", " .. SECTION.udp_port .. ")",
    65535)
proto.prefs.heuristic = Pref.bool("Heuristic on other UDP ports", false,
    "Try every UDP datagram; claim it only if it parses as exactly one LTP segment")
proto.prefs.analysis = Pref.bool("Analyze sessions", true,
    "Track each session: block sizes, checkpoint-report-acknowledgment and "
    .. "cancel-acknowledgment links, copies, response times, and the checks that need "
    .. "them (links to later frames need a second pass: tshark -2)")
proto.prefs.rtx_limit = Pref.uint("Retransmission limit", 0,
    "Flag a checkpoint, report or cancel segment sent more than 1 + this many times "
    .. "(0: do not check)")

---------------------------------------------------------------------------
-- Parsing (no tree): returns a table of positions and values.
-- seg.err = {expert=..., pos=..., len=..., msg=..., field=...} on the first
-- malformation; field is the field it lies in (F.malformed_field).
---------------------------------------------------------------------------
local ZERO = UInt64(0)

-- SDNV (RFC 5326 §2, RFC 6256): big-endian base 128, high bit set on all but the last byte.
-- One SDNV (RFC 6256) at byte pos (0-based) of raw, the datagram as a Lua
-- string: its value (UInt64), length and nil; or nil, the bytes examined and
-- the expert of the error. The first 7 bytes (49 bits) are summed in Lua
-- numbers, exact below 2^53; UInt64 arithmetic only takes over after that.
local function read_sdnv(raw, pos)
    local avail = #raw - pos
    local n = 0
    for i = 1, 7 do
        if i > avail then
            return nil, avail, E.sdnv_truncated
        end
        local b = sbyte(raw, pos + i)
        n = n * 128 + band(b, 0x7F)
        if band(b, 0x80) == 0 then
            return UInt64(n), i, nil
        end
    end
    local v = UInt64(n)
    for i = 7, SDNV_MAX_BYTES - 1 do
        if i >= avail then
            return nil, avail, E.sdnv_truncated
        end
        if v:rshift(57) ~= ZERO then
            return nil, i + 1, E.sdnv_overflow
        end
        local b = sbyte(raw, pos + i + 1)
        v = v:lshift(7):bor(UInt64(band(b, 0x7F)))
        if band(b, 0x80) == 0 then
            return v, i + 1, nil
        end
    end
    return nil, SDNV_MAX_BYTES, E.sdnv_too_long
end

local function parse(tvb)
    local seg = { ext = {}, claims = {} }
    local raw = tvb:raw()
    seg.raw = raw
    local size = #raw
    local pos = 0

    local function fail(ex, p, len, msg, field)
        msg = msg .. " (" .. CITE[ex] .. ")"
        seg.err = { expert = ex, pos = p, len = len, msg = msg, field = field }
        seg.consumed = p
        return seg
    end
    -- read one SDNV into seg[name] = {v=UInt64, pos=, len=}; false on error
    local function sdnv(name, what)
        local v, len, ex = read_sdnv(raw, pos)
        if not v then
            local msg = what .. ": SDNV at byte " .. pos
            if ex == E.sdnv_truncated then msg = msg .. " runs past the end" end
            if ex == E.sdnv_too_long then
                msg = msg .. " longer than " .. SDNV_MAX_BYTES .. " bytes"
            end
            if ex == E.sdnv_overflow then msg = msg .. " exceeds 64 bits" end
            fail(ex, pos, math.max(len, 0), msg, name)
            return nil
        end
        local item = { v = v, pos = pos, len = len }
        seg[name] = item
        pos = pos + len
        return item
    end
    local function byte(name, what, field)
        if pos >= size then
            fail(E.truncated, pos, 0, "segment ends before the " .. what, field)
            return nil
        end
        local item = { v = sbyte(raw, pos + 1), pos = pos, len = 1 }
        seg[name] = item
        pos = pos + 1
        return item
    end
    local function extensions(count, where)
        local field = where .. "_extensions"
        for i = 1, count do
            local e = { where = where, index = i }
            if pos >= size then
                fail(E.truncated, pos, 0, "segment ends before " .. where .. " extension " .. i,
                    field)
                return false
            end
            e.tag = { v = sbyte(raw, pos + 1), pos = pos, len = 1 }
            pos = pos + 1
            seg.ext[#seg.ext + 1] = e
            local v, len, ex = read_sdnv(raw, pos)
            if not v then
                fail(ex, pos, math.max(len, 0),
                    where .. " extension " .. i .. " length: SDNV at byte " .. pos .. " is bad",
                    field)
                return false
            end
            e.length = { v = v, pos = pos, len = len }
            pos = pos + len
            local remaining = size - pos
            if v > UInt64(remaining) then
                e.value = { pos = pos, len = remaining }
                fail(E.ext_overrun, pos, remaining, where .. " extension " .. i .. " value of "
                    .. tostring(v) .. " bytes runs past the datagram (" .. remaining
                    .. " left)", field)
                return false
            end
            e.value = { pos = pos, len = num(v) }
            pos = pos + e.value.len
        end
        return true
    end

    if size == 0 then
        return fail(E.truncated, 0, 0, "empty datagram", "version")
    end
    local control = sbyte(raw, 1)
    seg.version = rshift(control, 4)
    seg.type = band(control, 0x0F)
    pos = 1
    if not sdnv("session_originator", "session originator") then return seg end
    if not sdnv("session_number", "session number") then return seg end
    local counts = byte("ext_counts", "extension counts", "hdr_ext_count")
    if not counts then return seg end
    seg.hdr_ext_count = rshift(counts.v, 4)
    seg.trl_ext_count = band(counts.v, 0x0F)
    if not extensions(seg.hdr_ext_count, "header") then return seg end
    seg.content_pos = pos

    local t = seg.type
    local kind = kind_of(t)
    if is_data(t) then
        if not sdnv("client_service_id", "client service ID") then return seg end
        if not sdnv("offset", "offset") then return seg end
        if not sdnv("length", "length") then return seg end
        if type_info(t).checkpoint then
            if not sdnv("checkpoint_serial", "checkpoint serial number") then return seg end
            if not sdnv("report_serial", "report serial number") then return seg end
        end
        local remaining = size - pos
        if seg.length.v > UInt64(remaining) then
            seg.data = { pos = pos, len = remaining }
            return fail(E.data_overrun, pos, remaining, "data length " .. tostring(seg.length.v)
                .. " runs past the datagram (" .. remaining .. " bytes left)", "data")
        end
        seg.data = { pos = pos, len = num(seg.length.v) }
        pos = pos + seg.data.len
    elseif kind == "report" then
        if not sdnv("report_serial", "report serial number") then return seg end
        if not sdnv("checkpoint_serial", "checkpoint serial number") then return seg end
        if not sdnv("upper_bound", "upper bound") then return seg end
        if not sdnv("lower_bound", "lower bound") then return seg end
        if not sdnv("claim_count", "claim count") then return seg end
        -- each claim takes at least two bytes
        local room = math.floor((size - pos) / 2)
        if seg.claim_count.v > UInt64(room) then
            return fail(E.claim_count_too_large, seg.claim_count.pos, seg.claim_count.len,
                "reception claim count " .. tostring(seg.claim_count.v)
                .. " impossibly large (room for at most " .. room .. ")", "claim_count")
        end
        for i = 1, num(seg.claim_count.v) do
            local c = { index = i }
            seg.claims[i] = c
            local v, len, ex = read_sdnv(raw, pos)
            if not v then
                return fail(ex, pos, math.max(len, 0), "claim " .. i .. " offset: bad SDNV",
                    "claims")
            end
            c.offset = { v = v, pos = pos, len = len }
            pos = pos + len
            v, len, ex = read_sdnv(raw, pos)
            if not v then
                return fail(ex, pos, math.max(len, 0), "claim " .. i .. " length: bad SDNV",
                    "claims")
            end
            c.length = { v = v, pos = pos, len = len }
            pos = pos + len
        end
    elseif kind == "report_ack" then
        if not sdnv("report_serial", "report serial number") then return seg end
    elseif kind == "cancel" then
        if not byte("reason", "cancel reason code", "reason") then return seg end
    end
    -- cancel acknowledgments (CAS, CAR) and undefined control types have no content
    seg.content_end = pos
    seg.trailer_pos = pos
    if not extensions(seg.trl_ext_count, "trailer") then return seg end
    seg.consumed = pos
    seg.ok = true
    return seg
end

---------------------------------------------------------------------------
-- Tree building and checks
---------------------------------------------------------------------------
local function add_sdnv(tree, field, tvb, item)
    local ti = tree:add(field, tvb(item.pos, item.len), item.v)
    ti:append_text(" [SDNV, " .. item.len .. (item.len == 1 and " byte]" or " bytes]"))
    return ti
end

-- The RFC 5327 extensions' own fields: tag 0 (LTP authentication: header
-- value = ciphersuite octet then KeyID, trailer value = AuthVal) and tag 1
-- (cookie, a header extension only).
local function auth_suite_of(seg)
    for _, e in ipairs(seg.ext) do
        if e.where == "header" and e.tag.v == 0 and e.value and e.value.len > 0 then
            return e.suite
        end
    end
    return nil
end

local function rfc5327(esub, tvb, seg, e, where)
    local tag, pos, len = e.tag.v, e.value.pos, e.value.len
    if tag == 0 and where == "header" then
        if len == 0 then
            esub:add_proto_expert_info(E.auth_empty)
            return
        end
        local si = esub:add(F.auth_suite, tvb(pos, 1))
        e.suite = tvb(pos, 1):uint()
        if AUTH_CIPHERSUITES[e.suite] == nil and e.suite < AUTH_CIPHERSUITES_PRIVATE_FROM then
            si:add_proto_expert_info(E.ciphersuite_unassigned, "ciphersuite " .. e.suite
                .. (e.suite >= AUTH_CIPHERSUITES_RESERVED_FROM and " is reserved" or
                    " is unassigned") .. " (" .. SECTION.auth_ciphersuites .. ")")
        end
        if len > 1 then esub:add(F.auth_key_id, tvb(pos + 1, len - 1)) end
        local has_authval = false
        for _, t in ipairs(seg.ext) do
            if t.where == "trailer" and t.tag.v == 0 then has_authval = true end
        end
        if seg.ok and not has_authval then
            esub:add_proto_expert_info(E.auth_no_authval)
        end
    elseif tag == 0 then
        local vi = esub:add(F.auth_value, tvb(pos, len))
        local suite = auth_suite_of(seg)
        local info = suite and AUTH_CIPHERSUITES_INFO[suite]
        if info and info.authval_len and info.authval_len ~= len then
            vi:add_proto_expert_info(E.authval_length, "AuthVal of " .. len .. " octets; "
                .. AUTH_CIPHERSUITES[suite] .. " gives " .. info.authval_len .. " ("
                .. SECTION.auth_ciphersuites .. ")")
        end
    elseif tag == 1 then
        local ci = esub:add(F.cookie, tvb(pos, len))
        if len == 0 then ci:add_proto_expert_info(E.cookie_empty) end
        if where ~= "header" then ci:add_proto_expert_info(E.cookie_in_trailer) end
    end
end

local function add_extensions(tree, tvb, seg, where, first_pos, last_pos)
    local list = {}
    for _, e in ipairs(seg.ext) do
        if e.where == where then list[#list + 1] = e end
    end
    if #list == 0 then return end
    local label = (where == "header") and "Header extensions" or "Trailer extensions"
    local sub = tree:add(tvb(first_pos, math.max(last_pos - first_pos, 0)), label)
    for _, e in ipairs(list) do
        local stop = e.tag.pos + 1
        if e.length then stop = e.length.pos + e.length.len end
        if e.value then stop = e.value.pos + e.value.len end
        local esub = sub:add(tvb(e.tag.pos, stop - e.tag.pos),
            string.format("Extension %d: tag 0x%02x", e.index, e.tag.v))
        esub:add(F.ext_tag, tvb(e.tag.pos, 1))
        if e.length then add_sdnv(esub, F.ext_length, tvb, e.length) end
        if e.value then
            if e.value.len > 0 then
                esub:add(F.ext_value, tvb(e.value.pos, e.value.len))
            else
                esub:add(F.ext_value, tvb(e.value.pos, 0), "")
            end
            -- complete only when the segment parsed past it
            if e.value.len == num(e.length.v) then
                rfc5327(esub, tvb, seg, e, where)
            end
        end
    end
end

local function check_report(tree, seg, items)
    local ub, lb = seg.upper_bound.v, seg.lower_bound.v
    if lb > ub then
        items.lower_bound:add_proto_expert_info(E.bounds_inverted, "lower bound "
            .. tostring(lb) .. " > upper bound " .. tostring(ub) .. " (" .. RS_RULES .. ")")
    end
    if seg.claim_count.v == ZERO then
        items.claim_count:add_proto_expert_info(E.claim_count_zero)
    end
    local span = (lb <= ub) and (ub - lb) or ZERO
    local prev_end = nil
    for i, c in ipairs(seg.claims) do
        local off, len = c.offset.v, c.length.v
        local ci = c.item
        if len == ZERO then
            ci:add_proto_expert_info(E.claim_zero_length, "claim " .. i
                .. " has length 0 (" .. RS_RULES .. ": never less than 1)")
        end
        -- offset + length must not exceed upper - lower (claims are relative to lb)
        if len > span or off > span - len then
            ci:add_proto_expert_info(E.claim_beyond_bound, "claim " .. i .. " ["
                .. tostring(off) .. "+" .. tostring(len) .. ") relative to lower bound "
                .. tostring(lb) .. " ends beyond upper bound " .. tostring(ub)
                .. " (" .. RS_RULES .. ")")
        end
        if prev_end ~= nil then
            if off < prev_end then
                ci:add_proto_expert_info(E.claim_order, "claim " .. i .. " offset "
                    .. tostring(off) .. " < end " .. tostring(prev_end)
                    .. " of the prior claim (" .. RS_RULES .. ")")
            elseif off == prev_end then
                ci:add_proto_expert_info(E.claim_adjacent, "claim " .. i .. " offset "
                    .. tostring(off) .. " = end of the prior claim; " .. RS_RULES .. " says "
                    .. "greater than (adjacent claims should be merged)")
            end
        end
        -- compare against the farthest end seen so far (overflow-safe enough:
        -- off + len only computed when it cannot wrap)
        local max64 = UInt64.max()
        local this_end = (off <= max64 - len) and (off + len) or max64
        if prev_end == nil or this_end > prev_end then prev_end = this_end end
    end
end

---------------------------------------------------------------------------
-- Session analysis (preference dtnltp.analysis)
--
-- The first time a frame is seen (not pinfo.visited) it is recorded in its
-- session and what it can know from earlier frames is kept in frames[n]:
-- block sizes so far, the copy count, the frame of the segment it answers,
-- the response time, the checks that look back. Links to later frames (the
-- report a checkpoint got, the acknowledgment of a report or cancel) and the
-- "never answered" checks read the session's final state, so they appear
-- only when the frame is dissected again after the whole capture was read:
-- in Wireshark, and in tshark with -2.
---------------------------------------------------------------------------
local sessions, frames = {}, {}
-- the preferences, read once per change (a preference read is a C call)
local prefs_analysis, prefs_rtx_limit = true, 0

function proto.init()
    sessions, frames = {}, {}
    prefs_analysis, prefs_rtx_limit = proto.prefs.analysis, int(proto.prefs.rtx_limit)
end

-- the acknowledgment type of each cancel type, and back
local CANCEL_ACK = { CS = "CAS", CR = "CAR" }
local ACKED_CANCEL = { CAS = "CS", CAR = "CR" }

local function seconds(d)
    if d < 0 then d = 0 end
    local whole = math.floor(d)
    return NSTime(whole, math.floor((d - whole) * 1e9 + 0.5))
end

local function session_state(seg, raw)
    -- the session ID's own octets (originator and number SDNVs) as the key
    local sn = seg.session_number
    local key = raw:sub(2, sn.pos + sn.len)
    local st = sessions[key]
    if st == nil then
        st = { copies = {}, counts = {}, cps = {}, rss = {}, cancels = {} }
        sessions[key] = st
    end
    return st
end

-- a serial's entry: every frame that carried it, the frames that answered it
local function entry(list, serial)
    local e = list[serial]
    if e == nil then
        e = { frames = {}, answers = {}, last_time = nil }
        list[serial] = e
    end
    return e
end

local NO_NOTES = {}

-- notes with one more (expert, message); NO_NOTES is never written to
local function add_note(notes, ex, msg)
    if notes == NO_NOTES then notes = {} end
    notes[#notes + 1] = { ex, msg }
    return notes
end

local function record(seg, pinfo, raw)
    local st = session_state(seg, raw)
    -- what this frame knows; a table only if there is more than its session
    local copy_of, answers_frame, response_time, asks, index
    local notes = NO_NOTES
    local n, now = int(pinfo.number), pinfo.abs_ts
    local name = SEGMENT_TYPES[seg.type]

    -- a copy has the same octets; a data segment's header (up to its data)
    -- stands for it, a short key
    -- (numbers, not tables: what a long capture keeps must stay light for
    -- Lua's collector)
    local key = seg.data and raw:sub(1, seg.data.pos) or raw
    local first = st.copies[key]
    local count = 1
    if first == nil then
        st.copies[key] = n
    else
        count = (st.counts[key] or 1) + 1
        st.counts[key] = count
        copy_of = first
        notes = add_note(notes, E.copy, "copy " .. count .. " of the " .. name .. " in frame " .. first)
    end
    local limit = prefs_rtx_limit
    local guarded = seg.type == 8 or type_info(seg.type).checkpoint or CANCEL_ACK[name]
    if limit > 0 and guarded and count > limit + 1 then
        notes = add_note(notes, E.rtx_limit, name .. " sent " .. count .. " times, more than 1 + the "
            .. "retransmission limit " .. limit .. " (preference dtnltp.rtx_limit)")
    end

    if is_data(seg.type) then
        -- Lua numbers: exact below 2^53 octets
        local off = num(seg.offset.v)
        local stop = off + num(seg.length.v)
        local ty = type_info(seg.type)
        -- (an end-of-block segment of its own that disagrees is size_changed)
        if st.block_size ~= nil and stop > st.block_size and not ty.eob then
            notes = add_note(notes, E.beyond_eob, "data ends at " .. tostring(stop) .. ", beyond the block size "
                .. tostring(st.block_size) .. " the end-of-block segment gave")
        end
        if ty.red then
            if st.green_min ~= nil and off > st.green_min then
                notes = add_note(notes, E.miscolored, "red data at offset " .. tostring(off) .. " above green "
                    .. "data at offset " .. tostring(st.green_min) .. " (RFC 5326 §6.21)")
            end
            if st.red_max == nil or off > st.red_max then st.red_max = off end
        else
            if st.red_max ~= nil and off < st.red_max then
                notes = add_note(notes, E.miscolored, "green data at offset " .. tostring(off) .. " below red "
                    .. "data at offset " .. tostring(st.red_max) .. " (RFC 5326 §6.21)")
            end
            if st.green_min == nil or off < st.green_min then st.green_min = off end
        end
        if ty.eob then
            if st.block_size ~= nil and st.block_size ~= stop then
                notes = add_note(notes, E.size_changed, "end of block at " .. tostring(stop) .. ", an earlier "
                    .. "end-of-block segment said " .. tostring(st.block_size))
            end
            st.block_size = stop
        end
        if ty.eorp then
            if st.red_size ~= nil and st.red_size ~= stop then
                notes = add_note(notes, E.size_changed, "end of red part at " .. tostring(stop) .. ", an "
                    .. "earlier end-of-red-part segment said " .. tostring(st.red_size))
            end
            st.red_size = stop
        end
        if ty.checkpoint then
            local cp = entry(st.cps, tostring(seg.checkpoint_serial.v))
            cp.frames[#cp.frames + 1] = n
            cp.last_time = now
            asks, index = cp, #cp.frames
        end
    elseif name == "RS" then
        local cps = tostring(seg.checkpoint_serial.v)
        local cp = st.cps[cps]
        if cp ~= nil then
            answers_frame = cp.frames[1]
            response_time = now - cp.last_time
            cp.answers[#cp.answers + 1] = n
        elseif cps ~= "0" then
            notes = add_note(notes, E.report_unknown_cp, "no checkpoint with serial " .. cps .. " earlier in "
                .. "the session (lost before this capture point, or outside the capture)")
        end
        local rs = entry(st.rss, tostring(seg.report_serial.v))
        rs.frames[#rs.frames + 1] = n
        rs.last_time = now
        asks, index = rs, #rs.frames
    elseif name == "RA" then
        local rs = st.rss[tostring(seg.report_serial.v)]
        if rs ~= nil then
            answers_frame = rs.frames[#rs.frames]
            response_time = now - rs.last_time
            rs.answers[#rs.answers + 1] = n
        else
            notes = add_note(notes, E.ack_unknown_report, "no report with serial "
                .. tostring(seg.report_serial.v) .. " earlier in the session")
        end
    elseif CANCEL_ACK[name] then
        local cx = entry(st.cancels, name)
        cx.frames[#cx.frames + 1] = n
        cx.last_time = now
        asks, index = cx, #cx.frames
    elseif ACKED_CANCEL[name] then
        local cx = st.cancels[ACKED_CANCEL[name]]
        if cx ~= nil then
            answers_frame = cx.frames[#cx.frames]
            response_time = now - cx.last_time
            cx.answers[#cx.answers + 1] = n
        else
            notes = add_note(notes, E.ack_no_cancel, name .. " with no " .. ACKED_CANCEL[name]
                .. " earlier in the session (RFC 5326 §6.17)")
        end
    end
    if count == 1 and answers_frame == nil and asks == nil and notes == NO_NOTES then
        return st -- a plain first copy: the session is all there is to show
    end
    return {
        st = st, copy = count, copy_of = copy_of, answers_frame = answers_frame,
        response_time = response_time, asks = asks, index = index, notes = notes,
    }
end

local function analyze(tvb, pinfo, root, seg, raw)
    local a = frames[pinfo.number]
    if a == nil then
        if pinfo.visited then return end -- analysis was off when the capture was read
        a = record(seg, pinfo, raw)
        frames[pinfo.number] = a
    end
    if a.st == nil then -- a plain first copy: frames[n] is its session
        if a.block_size == nil and a.red_size == nil then return end
        a = { st = a, copy = 1, notes = NO_NOTES }
    end
    local name = SEGMENT_TYPES[seg.type]
    local st = a.st
    local look_ahead = pinfo.visited and a.asks ~= nil
    -- nothing to show on a first copy of plain data in a session of unknown size
    if st.block_size == nil and st.red_size == nil and a.copy == 1 and a.answers_frame == nil
        and #a.notes == 0 and not look_ahead then
        return
    end
    local sub = root:add(tvb(0, 0), "[Session analysis]")
    sub:set_generated()
    if st.block_size ~= nil then
        sub:add(F.a_block_size, UInt64(st.block_size)):set_generated()
    end
    if st.red_size ~= nil then sub:add(F.a_red_size, UInt64(st.red_size)):set_generated() end
    sub:add(F.a_copy, a.copy):set_generated()
    if a.copy_of then sub:add(F.a_copy_of, a.copy_of):set_generated() end
    if a.answers_frame then
        local field = (name == "RS") and F.a_cp_frame or F.a_acked_frame
        sub:add(field, a.answers_frame):set_generated()
        sub:add(F.a_response_time, seconds(a.response_time)):set_generated()
    end
    for _, x in ipairs(a.notes) do
        sub:add_proto_expert_info(x[1], x[2])
    end
    -- what came later: only once the whole capture has been read
    if look_ahead then
        -- the answers that came after this copy and before the next one
        local nxt = a.asks.frames[a.index + 1] or math.huge
        local later = {}
        for _, f in ipairs(a.asks.answers) do
            if f > pinfo.number and f < nxt then later[#later + 1] = f end
        end
        local field = (name == "RS" or CANCEL_ACK[name]) and F.a_ra_frame or F.a_rs_frame
        for _, f in ipairs(later) do sub:add(field, f):set_generated() end
        if #a.asks.answers == 0 then
            if name == "RS" then
                sub:add_proto_expert_info(E.report_no_ack, "no RA with report serial "
                    .. tostring(seg.report_serial.v) .. " in this capture")
            elseif CANCEL_ACK[name] then
                sub:add_proto_expert_info(E.cancel_no_ack, "no " .. CANCEL_ACK[name]
                    .. " in this capture")
            else
                sub:add_proto_expert_info(E.checkpoint_no_report, "no RS with checkpoint "
                    .. "serial " .. tostring(seg.checkpoint_serial.v) .. " in this capture")
            end
        end
    end
end

local function dissect(tvb, pinfo, tree)
    local seg = parse(tvb)
    pinfo.cols.protocol = "DTN-LTP"

    local root = tree:add(proto, tvb(), "Licklider Transmission Protocol (dtnconform)")
    local t = seg.type
    local items = {}

    if t ~= nil then
        local hdr_end = seg.content_pos or seg.consumed or 1
        local hdr = root:add(tvb(0, math.max(hdr_end, 1)), "Segment header")
        local vi = hdr:add(F.version, tvb(0, 1))
        if seg.version ~= VERSION then
            vi:add_proto_expert_info(E.bad_version, "version " .. seg.version
                .. " is not " .. VERSION .. " (" .. SECTION.version .. ")")
        end
        local ti = hdr:add(F.type, tvb(0, 1))
        local ty = type_info(t)
        if not ty.defined then
            ti:add_proto_expert_info(E.undefined_type, "segment type " .. t
                .. " (" .. SEGMENT_TYPES[t] .. ") is undefined (" .. SECTION.segment_types .. ")")
        end
        hdr:add(F.type_name, SEGMENT_TYPES[t]):set_generated()
        hdr:add(F.kind, ty.kind):set_generated()
        hdr:add(F.red, ty.red):set_generated()
        hdr:add(F.checkpoint, ty.checkpoint):set_generated()
        hdr:add(F.eorp, ty.eorp):set_generated()
        hdr:add(F.eob, ty.eob):set_generated()
        if seg.session_originator then
            add_sdnv(hdr, F.session_originator, tvb, seg.session_originator)
        end
        if seg.session_number then add_sdnv(hdr, F.session_number, tvb, seg.session_number) end
        if seg.ext_counts then
            hdr:add(F.hdr_ext_count, tvb(seg.ext_counts.pos, 1))
            hdr:add(F.trl_ext_count, tvb(seg.ext_counts.pos, 1))
            local hstart = seg.ext_counts.pos + 1
            add_extensions(hdr, tvb, seg, "header", hstart, seg.content_pos or seg.consumed)
        end
    end

    -- segment content (RFC 5326 §3.2)
    if seg.content_pos ~= nil then
        local stop = seg.content_end or seg.consumed
        local labels = {
            red_data = "Data segment (red)", green_data = "Data segment (green)",
            report = "Report segment", report_ack = "Report-acknowledgment segment",
            cancel = "Cancel segment", cancel_ack = "Cancel-acknowledgment segment",
            undefined = "Undefined control segment",
        }
        local body = root:add(tvb(seg.content_pos, math.max(stop - seg.content_pos, 0)),
            labels[kind_of(t)])
        for _, name in ipairs({ "client_service_id", "offset", "length" }) do
            if seg[name] then items[name] = add_sdnv(body, F[name], tvb, seg[name]) end
        end
        -- data segments: checkpoint, then report serial; RS: report serial first
        local order = (kind_of(t) == "report") and { "report_serial", "checkpoint_serial" }
            or { "checkpoint_serial", "report_serial" }
        for _, name in ipairs(order) do
            if seg[name] then items[name] = add_sdnv(body, F[name], tvb, seg[name]) end
        end
        for _, name in ipairs({ "upper_bound", "lower_bound", "claim_count" }) do
            if seg[name] then items[name] = add_sdnv(body, F[name], tvb, seg[name]) end
        end
        for i, c in ipairs(seg.claims) do
            local cstart = c.offset and c.offset.pos
            if cstart then
                local cend = c.length and (c.length.pos + c.length.len)
                    or (c.offset.pos + c.offset.len)
                local label = "Reception claim " .. i
                if c.length then
                    local lo = seg.lower_bound.v + c.offset.v
                    label = label .. ": offset " .. tostring(c.offset.v) .. ", length "
                        .. tostring(c.length.v) .. " (block [" .. tostring(lo) .. "-"
                        .. tostring(lo + c.length.v) .. "))"
                end
                c.item = body:add(tvb(cstart, cend - cstart), label)
                add_sdnv(c.item, F.claim_offset, tvb, c.offset)
                if c.length then add_sdnv(c.item, F.claim_length, tvb, c.length) end
            end
        end
        if seg.reason then
            items.reason = body:add(F.reason, tvb(seg.reason.pos, 1))
            if CANCEL_REASONS[seg.reason.v] == nil then
                local why = " is not defined (" .. SECTION.cancel_reasons .. ")"
                if seg.reason.v >= CANCEL_REASONS_RESERVED_FROM then
                    why = " is reserved (" .. SECTION.cancel_reasons .. ": codes from "
                        .. CANCEL_REASONS_RESERVED_FROM .. " are reserved)"
                end
                items.reason:add_proto_expert_info(E.reason_unknown, "cancel reason code "
                    .. seg.reason.v .. why)
            end
        end
        if seg.data then
            if seg.data.len > 0 then
                items.data = body:add(F.data, tvb(seg.data.pos, seg.data.len))
            else
                items.data = body:add(F.data, tvb(seg.data.pos, 0), "")
            end
        end

        -- protocol checks on a fully parsed content
        if seg.ok then
            if is_data(t) and seg.length.v == ZERO then
                items.length:add_proto_expert_info(E.data_zero_length,
                    "data segment with length 0 (" .. DS_RULES .. ")")
            end
            if type_info(t).checkpoint and seg.checkpoint_serial.v == ZERO then
                items.checkpoint_serial:add_proto_expert_info(E.serial_zero,
                    "checkpoint serial number 0: RFC 5326 §3.2.1 says it MUST NOT be zero "
                    .. "(the first one is chosen randomly), and an RS with checkpoint serial 0 "
                    .. "means 'asynchronous' (§3.2.2), so it could never be answered")
            end
            if kind_of(t) == "report" then
                if seg.report_serial.v == ZERO then
                    items.report_serial:add_proto_expert_info(E.serial_zero,
                        "report serial number 0: " .. RS_RULES .. " says it MUST NOT be zero "
                        .. "(the first one is chosen randomly), and a data segment with report "
                        .. "serial 0 means 'not a response to an RS' (§3.2.1)")
                end
                check_report(body, seg, items)
            end
        end
    end

    if seg.trl_ext_count and seg.trl_ext_count > 0 and seg.trailer_pos then
        add_extensions(root, tvb, seg, "trailer", seg.trailer_pos, seg.consumed)
    end

    -- malformation found while parsing
    local fault = (t ~= nil and seg.version ~= VERSION) and "version" or nil
    if seg.err then
        local e = seg.err
        local len = math.max(math.min(e.len, tvb:len() - e.pos), 0)
        local anchor = root:add(tvb(math.min(e.pos, tvb:len()), len), "[Malformed: "
            .. e.msg .. "]")
        anchor:add_proto_expert_info(e.expert, e.msg)
        fault = fault or e.field
    elseif seg.consumed < tvb:len() then
        local extra = tvb:len() - seg.consumed
        local ti = root:add(tvb(seg.consumed, extra), "[" .. extra .. " trailing bytes]")
        ti:add_proto_expert_info(E.trailing_bytes, extra .. " trailing bytes after the "
            .. "segment (" .. ONE_PER_DATAGRAM .. ")")
        fault = fault or "trailing_bytes"
    end
    -- the first malformation in wire order (the version's comes first)
    if fault then root:add(F.malformed_field, fault):set_generated() end

    -- Info column, e.g. "RS sess 1/77 rs=3 cp=2 [0-3000) claims 2"
    local info = {}
    if t ~= nil then
        info[#info + 1] = SEGMENT_TYPES[t]
        if seg.session_number then
            info[#info + 1] = "sess " .. tostring(seg.session_originator.v) .. "/"
                .. tostring(seg.session_number.v)
        end
        local kind = kind_of(t)
        if is_data(t) then
            if seg.checkpoint_serial then
                info[#info + 1] = "cp=" .. tostring(seg.checkpoint_serial.v)
            end
            if seg.report_serial then
                info[#info + 1] = "rs=" .. tostring(seg.report_serial.v)
            end
            if seg.length then
                info[#info + 1] = "[" .. tostring(seg.offset.v) .. "-"
                    .. tostring(seg.offset.v + seg.length.v) .. ")"
            end
        elseif kind == "report" then
            if seg.report_serial then info[#info + 1] = "rs=" .. tostring(seg.report_serial.v) end
            if seg.checkpoint_serial then
                info[#info + 1] = "cp=" .. tostring(seg.checkpoint_serial.v)
            end
            if seg.lower_bound then
                info[#info + 1] = "[" .. tostring(seg.lower_bound.v) .. "-"
                    .. tostring(seg.upper_bound.v) .. ")"
            end
            if seg.claim_count then
                info[#info + 1] = "claims " .. tostring(seg.claim_count.v)
            end
        elseif kind == "report_ack" then
            if seg.report_serial then info[#info + 1] = "rs=" .. tostring(seg.report_serial.v) end
        elseif kind == "cancel" and seg.reason then
            info[#info + 1] = CANCEL_REASONS[seg.reason.v] or ("reason " .. seg.reason.v)
        end
    end
    if seg.ok and prefs_analysis then
        analyze(tvb, pinfo, root, seg, seg.raw)
    end
    local summary = table.concat(info, " ")
    pinfo.cols.info = summary
    -- the same summary on the protocol item, where tree-based output (PDML) sees it
    root:append_text(", " .. summary)
    return tvb:len()
end

function proto.dissector(tvb, pinfo, tree)
    return dissect(tvb, pinfo, tree)
end

-- Heuristic: off unless the preference is set; parses without building a
-- tree and claims the datagram only if it is exactly one well-formed segment.
local function heuristic(tvb, pinfo, tree)
    if not proto.prefs.heuristic then return false end
    if tvb:len() < 4 then return false end
    local seg = parse(tvb)
    if not seg.ok or seg.consumed ~= tvb:len() then return false end
    if seg.version ~= VERSION then return false end
    if not type_info(seg.type).defined then return false end
    dissect(tvb, pinfo, tree)
    return true
end

---------------------------------------------------------------------------
-- Registration / hand-off
---------------------------------------------------------------------------
local udp_table = DissectorTable.get("udp.port")
local registered_ports = DEFAULT_PORTS
udp_table:add(registered_ports, proto)
proto:register_heuristic("udp", heuristic)

function proto.prefs_changed()
    prefs_analysis, prefs_rtx_limit = proto.prefs.analysis, int(proto.prefs.rtx_limit)
    local wanted = proto.prefs.udp_ports
    if wanted ~= registered_ports then
        if registered_ports ~= "" then udp_table:remove(registered_ports, proto) end
        if wanted ~= "" then udp_table:add(wanted, proto) end
        registered_ports = wanted
    end
end
