--[[--------------------------------------------------------------------------
  cfdp.lua -- CCSDS File Delivery Protocol (CCSDS 727.0-B-5) for Wireshark/tshark.

  Protocol "dtncfdp", field prefix "dtncfdp.": it coexists with Wireshark's
  built-in "cfdp" dissector (which follows 727.0-B-4).  Runs on the Lua 5.2
  that Wireshark 4.0-4.2 embed and on the Lua 5.4 of Wireshark 4.4 and
  later (see "Lua versions" below; dissectors/tests/test_lua_versions.py
  loads it under lua5.4).

  The book is not reachable here: every section and table number below is
  one that specs/cfdp/wire.json, specs/cfdp/README.md or the Scapy layer
  (dissectors/cfdp/layer.py) already carries, as the implementations' sources
  cite it for 727.0-B-5; a rule for which none is known says "no § cited".

  Covered:
    §5.1, Table 5-1   fixed PDU header: version 1 (727.0-B-5) and 0 (727.0-B-4,
                      whose layout is the same but for bits B-4 reserved),
                      entity-ID and sequence-number widths of 1-8 octets, the
                      large-file flag (64-bit FSS fields), the CRC-16 trailer
                      (CRC-16/CCITT-FALSE: polynomial 0x1021, preset 0xFFFF)
                      verified -> dtncfdp.crc_ok
    §5.2, Table 5-4   file directives: EOF (§5.2.2, Table 5-6), Finished
                      (§5.2.3, Table 5-7), ACK (§5.2.4, Table 5-8), Metadata
                      (§5.2.5, Table 5-9: closure requested, checksum type,
                      file-name LVs of Table 5-2, options), NAK (§5.2.6,
                      Tables 5-10, 5-11: scope and every segment request),
                      Prompt (§5.2.7), Keep Alive (§5.2.8)
    §5.3, Table 5-14  file data, with segment metadata (record continuation
                      state, length, octets)
    §5.4, Table 5-3   every TLV type: filestore request and response (action
                      code, status code, file names, message), message to
                      user, fault handler override, flow label, entity ID
                      (an EOF's or Finished's fault location)
  Transaction analysis (preference dtncfdp.analysis, on by default): each
    transaction, keyed by (source entity ID, transaction sequence number):
    the file data seen (offsets, gaps, retransmissions), the Metadata's and
    the EOF's file size, the modular checksum of the data seen, and the
    checks they allow: data beyond the EOF's file size and an EOF whose file
    size is below the data seen (File Size Error, §4.6.1.2.7 c), §4.6.1.2.9),
    an EOF's size differing from the Metadata's, an EOF's modular checksum
    against the data seen (when every octet was seen), NAK segment requests
    for data never sent or already declared delivered, ACK(EOF)/ACK(Finished)
    linked to what they acknowledge (frames, response times, condition
    codes), a Finished linked to the EOF it answers, a Finished(data
    complete) while gaps remain; with a second pass (Wireshark, tshark -2)
    also the links to later frames and the EOFs and Finisheds never
    acknowledged in acknowledged mode.
  Left out on purpose:
    one datagram = one PDU (as cfdp-py and cfdp-rs send over UDP); no file
    reassembly, no proxy/directory messages inside messages to user (shown
    as octets), no checksum algorithm but the modular one (type 0).

  Field leaf names are the emulator classifier's field names ("fields" of
  specs/cfdp/wire.json, the shared vocabulary), with its string values
  (dtncfdp.directive == "eof", dtncfdp.condition == "no_error", ...); the
  numeric codes beside them are *_code fields (directive_code,
  condition_code, ack_of_code).  Other leaf names are those of the Scapy
  layer (dissectors/cfdp/layer.py) where it has one.  The classifier reports
  the header's segmentation control and segment metadata bits for file data
  only; on a file directive they are dtncfdp.header.segmentation_control and
  dtncfdp.header.segment_metadata.

  Anomalies are ProtoExperts named dtncfdp.expert.<slug>; MALFORMED (bytes
  that cannot be parsed as §5 lays them out) is kept apart from PROTOCOL
  (well-formed but against a rule), CHECKSUM (the CRC) and SEQUENCE (the
  transaction analysis's observations).  Nothing is signalled through the
  Info column.  The field the first malformation (in wire order) lies in is
  dtncfdp.malformed.field, named as the Scapy layer names it
  (CfdpDecodeError.field); dissectors/tests/test_fuzz_agreement.py checks
  that the two, and the emulator's classifier, agree on fuzzed PDUs.

  Preferences: dtncfdp.udp_ports (range, default 5111: neither IANA nor
  CCSDS assigns CFDP a port, wire.json's udp_port is null; 5111 is the
  cfdp-py/cfdp-rs example convention that dtnconform runs use),
  dtncfdp.heuristic (boolean, default false: the UDP heuristic is registered
  but disabled), dtncfdp.analysis (boolean, default true).

  The fact tables (directive, condition, file status, transaction status
  and TLV type codes, and their sections) are generated from
  specs/cfdp/wire.json into the block marked below: edit wire.json, then run
  `python -m dissectors.luagen cfdp`.

  Lua versions: bit operations use the BitOp library (global `bit`), which
  every Wireshark with Lua ships; `bit32` is gone from Lua 5.4.  BitOp's
  results are signed 32-bit numbers, so it only sees octets, masks and the
  16-bit CRC here, never a value of 31 bits or more.  Lua 5.3+ tells
  integers from floats ("frame " .. 5.0 reads "frame 5.0") and wraps integer
  arithmetic at 2^63: wide fields become Lua numbers through be_uint (exact
  integers below 2^53, floats above, as in Lua 5.2), and every Lua number
  taken from the Wireshark API that is shown goes through int().

  Use:  tshark -X lua_script:dissectors/cfdp/cfdp.lua -r capture.pcap -Y dtncfdp
----------------------------------------------------------------------------]]

local band, bxor = bit.band, bit.bxor
local lshift, rshift = bit.lshift, bit.rshift
local sbyte = string.byte
local floor, min, max = math.floor, math.min, math.max

-- A Lua number as an integer where it is exact (below 2^53): a no-op in Lua
-- 5.2, and in Lua 5.3+ the integer subtype (math.floor returns one there),
-- so that it prints without ".0".
local TWO53 = 9007199254740992
local function int(x)
    if x > -TWO53 and x < TWO53 then return floor(x) end
    return x
end

-- Every code table (directives, condition codes, file statuses, transaction
-- statuses, TLV types, and the 727.0-B-5 section of each) comes from
-- specs/cfdp/wire.json; dissectors/tests/test_luagen.py fails when this block
-- differs from what the generator gives.
-- BEGIN GENERATED from specs/cfdp/wire.json (python -m dissectors.luagen cfdp); do not edit
-- cfdp (CCSDS 727.0-B-5)
local SPEC = "CCSDS 727.0-B-5"
local CONDITION_CODES = {
    [0] = "no_error",
    [1] = "positive_ack_limit_reached",
    [2] = "keep_alive_limit_reached",
    [3] = "invalid_transmission_mode",
    [4] = "filestore_rejection",
    [5] = "file_checksum_failure",
    [6] = "file_size_error",
    [7] = "nak_limit_reached",
    [8] = "inactivity_detected",
    [9] = "invalid_file_structure",
    [10] = "check_limit_reached",
    [11] = "unsupported_checksum_type",
    [12] = "reserved_12",
    [13] = "reserved_13",
    [14] = "suspend_request_received",
    [15] = "cancel_request_received",
}
local CONDITION_CODES_SOURCE = "CCSDS 727.0-B-5 is not reachable here: the codes are those the classifier has used since it was written, checked against spacepackets 0.32.0 (cfdp-py 0.7.0) PDUs and tshark 4.0.17's cfdp dissector by conformance/tests/test_emulator_classify.py; 12 and 13 are reserved"
local DIRECTIVES = {
    [4] = "eof",
    [5] = "finished",
    [6] = "ack",
    [7] = "metadata",
    [8] = "nak",
    [9] = "prompt",
    [12] = "keep_alive",
}
local DIRECTIVES_SOURCE = "as for condition_codes"
local FILE_STATUSES = {
    [0] = "discarded_deliberately",
    [1] = "discarded_filestore_rejection",
    [2] = "retained",
    [3] = "unreported",
}
local TLV_TYPES = {
    [0] = "filestore_request",
    [1] = "filestore_response",
    [2] = "message_to_user",
    [4] = "fault_handler_override",
    [5] = "flow_label",
    [6] = "entity_id",
}
local TLV_TYPES_SOURCE = "CCSDS 727.0-B-5 is not reachable here: the codes are those the classifier (conformance/channel/emulator/core/src/classify/cfdp.rs, which now reads this table) had as constants, and agree with nasa/CF (fsw/src/cf_cfdp_pdu.h, CF_CFDP_TlvType_t, which cites section 5.4 of 727.0-B-5) and spacepackets 0.32.0 (spacepackets/cfdp/tlv/defs.py, TlvType); neither assigns 3"
local TRANSACTION_STATUSES = {
    [0] = "undefined",
    [1] = "active",
    [2] = "terminated",
    [3] = "unrecognized",
}
local UDP_PORT = nil
local SECTION = {
    condition_codes = "CCSDS 727.0-B-5 §Table 5-5",
    directives = "CCSDS 727.0-B-5 §5.2, Table 5-4",
    file_statuses = "CCSDS 727.0-B-5 §5.2.3",
    tlv_types = "CCSDS 727.0-B-5 §5.4",
    transaction_statuses = "CCSDS 727.0-B-5 §5.2.4",
}
-- END GENERATED

---------------------------------------------------------------------------
-- Facts wire.json does not generate (yet)
---------------------------------------------------------------------------
-- The names of the one- and two-bit codes, in code order: wire.json
-- "values" (pdu_type, direction, mode, delivery_code, response_required,
-- record_continuation), which luagen leaves out with the field vocabulary;
-- dissectors/cfdp/tests/test_dissector.py checks them against the layer.
local PDU_TYPES = { [0] = "file_directive", [1] = "file_data" }
local DIRECTIONS = { [0] = "toward_receiver", [1] = "toward_sender" }
local MODES = { [0] = "acknowledged", [1] = "unacknowledged" }
local DELIVERY_CODES = { [0] = "data_complete", [1] = "data_incomplete" }
local RESPONSES_REQUIRED = { [0] = "nak", [1] = "keep_alive" }
local RECORD_CONTINUATIONS = { [0] = "neither", [1] = "start", [2] = "end", [3] = "start_and_end" }
-- wire.json values.version.one_of, with fields.version's meaning
local VERSIONS = { [0] = "727.0-B-4 and earlier", [1] = "727.0-B-5" }
-- Checksum types: wire.json fields.checksum_type ("SANA checksum
-- identifiers: 0 modular, 1 CRC-32 Proximity-1, 2 CRC-32C, 3 CRC-32, 15 null").
local CHECKSUM_TYPES = {
    [0] = "modular", [1] = "crc32_proximity1", [2] = "crc32c", [3] = "crc32", [15] = "null",
}
local MODULAR = 0
-- Fault handler codes (specs/cfdp/README.md "Codes": spacepackets defs.py,
-- yamcs HandlerCode.java; no § cited).
local HANDLER_CODES = {
    [1] = "notice_of_cancellation", [2] = "notice_of_suspension", [3] = "ignore",
    [4] = "abandon",
}
-- Filestore action codes (spacepackets 0.32.0 tlv/defs.py FilestoreActionCode,
-- which cites "727.0-B-5 p.86"; no § cited): 2-4 carry a second file name.
local FILESTORE_ACTIONS = {
    [0] = "create_file", [1] = "delete_file", [2] = "rename_file", [3] = "append_file",
    [4] = "replace_file", [5] = "create_directory", [6] = "remove_directory",
    [7] = "deny_file", [8] = "deny_directory",
}
-- The value of a filestore request/response TLV (§5.4) holds its LVs: the
-- action code octet, the first file name, a second file name for actions 2-4
-- only, and (response) the filestore message; an LV past the value is
-- malformed. As decoded by spacepackets-py (src/spacepackets/cfdp/tlv/tlv.py),
-- spacepackets-rs (src/cfdp/tlv/mod.rs) and Yamcs (yamcs-core/src/main/java/
-- org/yamcs/cfdp/pdu/FileStoreResponse.java, ActionCode.java); dariol83/ccsds
-- (FilestoreResponseTLV.java, "Table 5-17") always has a second name LV,
-- which here is octets after the LVs: a PROTOCOL warning, not MALFORMED.
local SECOND_NAME = { [2] = true, [3] = true, [4] = true }
-- The UDP port: wire.json has none (udp_port is null, see its note).
local DEFAULT_PORTS = UDP_PORT and tostring(UDP_PORT) or "5111"

-- name -> code
local function codes(names)
    local out = {}
    for code, name in pairs(names) do out[name] = code end
    return out
end
local DIRECTIVE = codes(DIRECTIVES)
local TLV = codes(TLV_TYPES)
local NO_ERROR = codes(CONDITION_CODES).no_error

---------------------------------------------------------------------------
-- Citations
---------------------------------------------------------------------------
-- a generated citation reads "CCSDS 727.0-B-5 §Table 5-5" for a table
local function cite(s)
    return (s:gsub("§Table", "Table"))
end
local C = {
    header = SPEC .. " §5.1, Table 5-1",
    lv = SPEC .. " Table 5-2",
    tlv = cite(SECTION.tlv_types) .. ", Table 5-3",
    directives = cite(SECTION.directives),
    conditions = cite(SECTION.condition_codes),
    eof = SPEC .. " §5.2.2, Table 5-6",
    finished = SPEC .. " §5.2.3, Table 5-7",
    ack = SPEC .. " §5.2.4, Table 5-8",
    metadata = SPEC .. " §5.2.5, Table 5-9",
    nak = SPEC .. " §5.2.6, Tables 5-10, 5-11",
    prompt = SPEC .. " §5.2.7",
    keep_alive = SPEC .. " §5.2.8",
    file_data = SPEC .. " §5.3, Table 5-14",
    file_statuses = cite(SECTION.file_statuses),
    transaction_statuses = cite(SECTION.transaction_statuses),
    delivery = SPEC .. " §4.6.1.2",
    size_error_data = SPEC .. " §4.6.1.2.7 c)",
    size_error_eof = SPEC .. " §4.6.1.2.9",
    positive_ack = SPEC .. " §4.7",
    eof_ack = SPEC .. " §4.7, §4.7.2",
}

-- what each directive is: its label, its section, the way it travels
local KIND = {
    eof = { label = "EOF", cite = C.eof, toward = 0 },
    finished = { label = "Finished", cite = C.finished, toward = 1 },
    ack = { label = "ACK", cite = C.ack },
    metadata = { label = "Metadata", cite = C.metadata, toward = 0 },
    nak = { label = "NAK", cite = C.nak, toward = 1 },
    prompt = { label = "Prompt", cite = C.prompt, toward = 0 },
    keep_alive = { label = "Keep Alive", cite = C.keep_alive, toward = 1 },
    file_data = { label = "File Data", cite = C.file_data, toward = 0 },
}

local proto = Proto("dtncfdp", "CCSDS File Delivery Protocol (dtnconform)")
local LABEL = "CCSDS File Delivery Protocol (dtnconform)"

---------------------------------------------------------------------------
-- Fields
---------------------------------------------------------------------------
local function str(name, label, blurb)
    return ProtoField.string("dtncfdp." .. name, label, base.ASCII, blurb)
end
local F = {
    -- fixed header (§5.1, Table 5-1)
    version = ProtoField.uint8("dtncfdp.version", "Version", base.DEC, VERSIONS, 0xE0,
        C.header .. ": 1 for 727.0-B-5, 0 for 727.0-B-4 and earlier"),
    pdu_type = str("pdu_type", "PDU type", "file_directive or file_data (" .. C.header .. ")"),
    direction = str("direction", "Direction", "toward_receiver or toward_sender (" .. C.header .. ")"),
    mode = str("mode", "Transmission mode", "acknowledged or unacknowledged (" .. C.header .. ")"),
    crc = ProtoField.bool("dtncfdp.crc", "CRC flag", 8, nil, 0x02,
        "the data field ends with a CRC-16 (" .. C.header .. ")"),
    large_file = ProtoField.bool("dtncfdp.large_file", "Large file flag", 8, nil, 0x01,
        "FSS fields are 64 bits (" .. C.header .. ")"),
    data_field_length = ProtoField.uint16("dtncfdp.data_field_length", "PDU data field length",
        base.DEC, nil, nil, "octets, the CRC included (" .. C.header .. ")"),
    segmentation_control = ProtoField.bool("dtncfdp.segmentation_control",
        "Segmentation control", 8, nil, 0x80, C.header .. ": record boundaries preserved"),
    entity_id_length = ProtoField.uint8("dtncfdp.entity_id_length", "Length of entity IDs",
        base.DEC, nil, nil, "octets, 1-8 (the wire carries the length less one; " .. C.header .. ")"),
    segment_metadata = ProtoField.bool("dtncfdp.segment_metadata", "Segment metadata flag", 8,
        nil, 0x08, C.header .. ", " .. C.file_data),
    sequence_number_length = ProtoField.uint8("dtncfdp.sequence_number_length",
        "Length of transaction sequence number", base.DEC, nil, nil,
        "octets, 1-8 (the wire carries the length less one; " .. C.header .. ")"),
    hdr_segmentation_control = ProtoField.bool("dtncfdp.header.segmentation_control",
        "Segmentation control", 8, nil, 0x80, "the header bit on a file directive (" .. C.header .. ")"),
    hdr_segment_metadata = ProtoField.bool("dtncfdp.header.segment_metadata",
        "Segment metadata flag", 8, nil, 0x08, "the header bit on a file directive (" .. C.header .. ")"),
    source_entity = ProtoField.uint64("dtncfdp.source_entity", "Source entity ID", base.DEC),
    transaction = ProtoField.uint64("dtncfdp.transaction", "Transaction sequence number", base.DEC),
    dest_entity = ProtoField.uint64("dtncfdp.dest_entity", "Destination entity ID", base.DEC),
    crc_value = ProtoField.uint16("dtncfdp.crc_value", "CRC", base.HEX, nil, nil,
        "CRC-16/CCITT-FALSE over the PDU before it (" .. C.header .. ")"),
    crc_ok = ProtoField.bool("dtncfdp.crc_ok", "CRC correct"),
    -- file directives (§5.2)
    directive = str("directive", "Directive", C.directives),
    directive_code = ProtoField.uint8("dtncfdp.directive_code", "Directive code", base.HEX,
        DIRECTIVES, nil, C.directives),
    parameters = ProtoField.bytes("dtncfdp.parameters", "Parameters of an undefined directive"),
    excess = ProtoField.bytes("dtncfdp.excess", "Octets after the parameters"),
    spare = ProtoField.uint8("dtncfdp.spare", "Spare", base.HEX),
    condition = str("condition", "Condition code", C.conditions),
    condition_code = ProtoField.uint8("dtncfdp.condition_code", "Condition code", base.DEC,
        CONDITION_CODES, 0xF0, C.conditions),
    checksum = ProtoField.uint32("dtncfdp.checksum", "File checksum", base.HEX, nil, nil, C.eof),
    file_size = ProtoField.uint64("dtncfdp.file_size", "File size", base.DEC),
    fault_location = ProtoField.uint64("dtncfdp.fault_location", "Fault location (entity ID)",
        base.DEC),
    end_system_status = ProtoField.bool("dtncfdp.end_system_status", "End system status", 8,
        nil, 0x08,
        "727.0-B-4 Finished (version 0); 727.0-B-5 made it spare"),
    delivery_code = str("delivery_code", "Delivery code", C.finished),
    file_status = str("file_status", "File status", C.file_statuses),
    ack_of = str("ack_of", "Directive acknowledged", C.ack),
    ack_of_code = ProtoField.uint8("dtncfdp.ack_of_code", "Directive code acknowledged",
        base.DEC, DIRECTIVES, 0xF0, C.ack),
    ack_subtype = ProtoField.uint8("dtncfdp.ack_subtype", "Directive subtype code", base.DEC,
        nil, 0x0F, C.ack .. ": 1 for the ACK of a Finished, else 0"),
    transaction_status = str("transaction_status", "Transaction status", C.transaction_statuses),
    closure_requested = ProtoField.bool("dtncfdp.closure_requested", "Closure requested", 8,
        nil, 0x40, C.metadata),
    metadata_segmentation_control = ProtoField.bool("dtncfdp.metadata_segmentation_control",
        "Segmentation control (727.0-B-4)", 8, nil, 0x80,
        "the 727.0-B-4 Metadata bit (version 0); 727.0-B-5 made it reserved"),
    checksum_type = ProtoField.uint8("dtncfdp.checksum_type", "Checksum type", base.DEC,
        CHECKSUM_TYPES, 0x0F, C.metadata .. "; SANA checksum identifiers"),
    source_file_name_len = ProtoField.uint8("dtncfdp.source_file_name_len",
        "Source file name length", base.DEC, nil, nil, C.lv),
    source_file_name = str("source_file_name", "Source file name", C.metadata),
    dest_file_name_len = ProtoField.uint8("dtncfdp.dest_file_name_len",
        "Destination file name length", base.DEC, nil, nil, C.lv),
    dest_file_name = str("dest_file_name", "Destination file name", C.metadata),
    start_of_scope = ProtoField.uint64("dtncfdp.start_of_scope", "Start of scope", base.DEC),
    end_of_scope = ProtoField.uint64("dtncfdp.end_of_scope", "End of scope", base.DEC),
    segment_requests = ProtoField.uint32("dtncfdp.segment_requests", "Segment requests",
        base.DEC, nil, nil, "how many (" .. C.nak .. ")"),
    segment_start = ProtoField.uint64("dtncfdp.segment.start", "Start offset", base.DEC),
    segment_end = ProtoField.uint64("dtncfdp.segment.end", "End offset", base.DEC),
    response_required = str("response_required", "Response required", C.prompt),
    progress = ProtoField.uint64("dtncfdp.progress", "Progress", base.DEC),
    -- file data (§5.3, Table 5-14)
    record_continuation = str("record_continuation", "Record continuation state", C.file_data),
    segment_metadata_length = ProtoField.uint8("dtncfdp.segment_metadata_length",
        "Segment metadata length", base.DEC, nil, 0x3F, C.file_data),
    metadata = ProtoField.bytes("dtncfdp.metadata", "Segment metadata"),
    offset = ProtoField.uint64("dtncfdp.offset", "Offset", base.DEC),
    length = ProtoField.uint64("dtncfdp.length", "Length", base.DEC, nil, nil,
        "file data octets in the PDU"),
    data = ProtoField.bytes("dtncfdp.data", "File data"),
    -- TLVs (§5.4, Table 5-3)
    tlv_type = ProtoField.uint8("dtncfdp.tlv.type", "Type", base.DEC, TLV_TYPES, nil, C.tlv),
    tlv_length = ProtoField.uint8("dtncfdp.tlv.length", "Length", base.DEC),
    tlv_value = ProtoField.bytes("dtncfdp.tlv.value", "Value"),
    tlv_entity_id = ProtoField.uint64("dtncfdp.tlv.entity_id", "Entity ID", base.DEC),
    fs_action = ProtoField.uint8("dtncfdp.fs.action", "Action code", base.DEC, FILESTORE_ACTIONS,
        0xF0, "filestore request/response (no § cited for the codes)"),
    fs_spare = ProtoField.uint8("dtncfdp.fs.spare", "Spare", base.HEX, nil, 0x0F),
    fs_status = ProtoField.uint8("dtncfdp.fs.status", "Status code", base.DEC, nil, 0x0F),
    fs_first_len = ProtoField.uint8("dtncfdp.fs.first_file_name_len", "First file name length"),
    fs_first = str("fs.first_file_name", "First file name"),
    fs_second_len = ProtoField.uint8("dtncfdp.fs.second_file_name_len",
        "Second file name length"),
    fs_second = str("fs.second_file_name", "Second file name"),
    fs_message_len = ProtoField.uint8("dtncfdp.fs.message_len", "Filestore message length"),
    fs_message = str("fs.message", "Filestore message"),
    message_to_user = ProtoField.bytes("dtncfdp.message_to_user", "Message to user"),
    fho_condition = ProtoField.uint8("dtncfdp.fho.condition", "Condition code", base.DEC,
        CONDITION_CODES, 0xF0, C.conditions),
    fho_handler = ProtoField.uint8("dtncfdp.fho.handler", "Handler code", base.DEC,
        HANDLER_CODES, 0x0F, "no § cited for the codes"),
    flow_label = ProtoField.bytes("dtncfdp.flow_label", "Flow label"),
    -- the first malformation's field, under the Scapy layer's name
    -- (dissectors/cfdp/layer.py, CfdpDecodeError.field)
    malformed_field = str("malformed.field", "Field at fault",
        "the field the first malformation (in wire order) lies in: version, header, "
        .. "data_field_length, crc_value, directive_code, a parameter (condition, file_size, "
        .. "source_file_name_len, ...), a TLV list (fault_location, filestore_responses, "
        .. "options), an LV of a filestore TLV (first_file_name, ...), segment_requests or "
        .. "excess"),
    -- transaction analysis (preference dtncfdp.analysis): generated fields
    a_file_size = ProtoField.uint64("dtncfdp.analysis.file_size", "File size", base.DEC, nil,
        nil, "the latest EOF(no error)'s file size, else the Metadata's"),
    a_seen = ProtoField.uint64("dtncfdp.analysis.seen", "File data seen", base.DEC, nil, nil,
        "distinct octets of file data seen in the transaction so far"),
    a_gaps = ProtoField.uint32("dtncfdp.analysis.gaps", "Gaps", base.DEC, nil, nil,
        "ranges of the file not seen so far (below the file size, or the highest offset seen)"),
    a_retransmission = ProtoField.bool("dtncfdp.analysis.retransmission", "Retransmission"),
    a_checksum = ProtoField.uint32("dtncfdp.analysis.checksum", "Modular checksum of the data seen",
        base.HEX),
    a_metadata_frame = ProtoField.framenum("dtncfdp.analysis.metadata_frame",
        "Metadata in frame", base.NONE),
    a_eof_frame = ProtoField.framenum("dtncfdp.analysis.eof_frame", "Answers the EOF in frame",
        base.NONE, frametype.REQUEST),
    a_finished_frame = ProtoField.framenum("dtncfdp.analysis.finished_frame",
        "Finished in frame", base.NONE, frametype.RESPONSE),
    a_acks_frame = ProtoField.framenum("dtncfdp.analysis.acks_frame",
        "Acknowledges the PDU in frame", base.NONE, frametype.REQUEST),
    a_ack_frame = ProtoField.framenum("dtncfdp.analysis.ack_frame", "Acknowledged in frame",
        base.NONE, frametype.ACK),
    a_response_time = ProtoField.relative_time("dtncfdp.analysis.response_time",
        "Response time", "time since the PDU this one answers"),
    a_requested_seen = ProtoField.uint64("dtncfdp.analysis.requested_seen",
        "Requested octets seen before", base.DEC, nil, nil,
        "octets of the NAK's segment requests this capture saw as file data before it"),
}
do
    local list = {}
    for _, f in pairs(F) do list[#list + 1] = f end
    proto.fields = list
end

---------------------------------------------------------------------------
-- Expert infos
---------------------------------------------------------------------------
local function new_expert(slug, text, group, severity)
    return ProtoExpert.new("dtncfdp.expert." .. slug, text, group, severity)
end
local MAL, PROTO, SEQ = expert.group.MALFORMED, expert.group.PROTOCOL, expert.group.SEQUENCE
local CHECKSUM = expert.group.CHECKSUM
local ERR, WARN = expert.severity.ERROR, expert.severity.WARN
local NOTE, CHAT = expert.severity.NOTE, expert.severity.CHAT

local E = {
    -- malformed: the octets cannot be parsed as §5 lays them out
    truncated_header = new_expert("truncated_header",
        "PDU ends inside its fixed header (" .. C.header .. ")", MAL, ERR),
    bad_version = new_expert("bad_version",
        "Version is neither 1 (727.0-B-5) nor 0 (727.0-B-4) (" .. C.header .. ")", MAL, ERR),
    data_field_overrun = new_expert("data_field_overrun",
        "PDU data field length runs past the datagram (" .. C.header .. ")", MAL, ERR),
    trailing_bytes = new_expert("trailing_bytes",
        "Octets after the PDU's data field (" .. C.header .. "; one PDU per datagram)", MAL, ERR),
    crc_missing = new_expert("crc_missing",
        "CRC flag set, but the data field cannot hold the CRC (" .. C.header .. ")", MAL, ERR),
    field_truncated = new_expert("field_truncated",
        "Data field ends inside a fixed field (" .. SPEC .. " §5.2, §5.3)", MAL, ERR),
    lv_overrun = new_expert("lv_overrun",
        "LV runs past the end of the data field or of its TLV (" .. C.lv .. ")", MAL, ERR),
    tlv_overrun = new_expert("tlv_overrun",
        "TLV runs past the end of the data field (" .. C.tlv .. ")", MAL, ERR),
    segment_metadata_overrun = new_expert("segment_metadata_overrun",
        "Segment metadata runs past the end of the data field (" .. C.file_data .. ")", MAL, ERR),
    nak_partial_request = new_expert("nak_partial_request",
        "NAK data field ends inside a segment request (" .. C.nak .. ")", MAL, ERR),
    excess_octets = new_expert("excess_octets",
        "Octets after the directive's parameters inside the data field (" .. SPEC .. " §5.2)",
        MAL, ERR),
    -- checksum
    crc_bad = new_expert("crc_bad",
        "CRC-16 does not match the PDU (" .. C.header .. ")", CHECKSUM, ERR),
    -- protocol: well-formed, but against a rule of §5
    directive_undefined = new_expert("directive_undefined",
        "Directive code not defined (" .. C.directives .. ")", PROTO, WARN),
    condition_reserved = new_expert("condition_reserved",
        "Condition code reserved (" .. C.conditions .. ")", PROTO, WARN),
    reserved_bits = new_expert("reserved_bits",
        "Spare or reserved bits set (" .. SPEC .. " §5)", PROTO, WARN),
    direction_unexpected = new_expert("direction_unexpected",
        "Direction bit against the way this PDU travels (" .. C.header
        .. " defines the bit; no § cited for which way each PDU travels)", PROTO, WARN),
    ack_of_invalid = new_expert("ack_of_invalid",
        "ACK of a directive other than EOF or Finished (" .. C.ack .. ")", PROTO, WARN),
    ack_of_undefined = new_expert("ack_of_undefined",
        "ACK of a directive code not defined (" .. C.ack .. "; " .. C.directives .. ")",
        PROTO, WARN),
    ack_subtype = new_expert("ack_subtype",
        "ACK directive subtype code is not 1 for a Finished, 0 for an EOF (" .. C.ack .. ")",
        PROTO, WARN),
    fault_location_unexpected = new_expert("fault_location_unexpected",
        "Fault location with condition no_error (" .. C.eof .. "; " .. C.finished .. ")",
        PROTO, WARN),
    tlv_type_undefined = new_expert("tlv_type_undefined",
        "TLV type not defined (" .. C.tlv .. ")", PROTO, WARN),
    tlv_type_unexpected = new_expert("tlv_type_unexpected",
        "TLV of a type this PDU does not carry there (" .. C.eof .. "; " .. C.finished .. "; "
        .. C.metadata .. ")", PROTO, WARN),
    tlv_value_length = new_expert("tlv_value_length",
        "TLV value length does not fit its type (" .. C.tlv .. ")", PROTO, WARN),
    entity_id_length = new_expert("entity_id_length",
        "Entity ID TLV value is not 1-8 octets (" .. C.tlv .. ")", PROTO, WARN),
    checksum_type_unassigned = new_expert("checksum_type_unassigned",
        "Checksum type is not a SANA checksum identifier (" .. C.metadata .. ")", PROTO, NOTE),
    nak_scope_inverted = new_expert("nak_scope_inverted",
        "NAK start of scope beyond its end of scope (" .. C.nak .. ")", PROTO, ERR),
    nak_request_inverted = new_expert("nak_request_inverted",
        "NAK segment request starts beyond its end (" .. C.nak .. ")", PROTO, ERR),
    nak_request_outside_scope = new_expert("nak_request_outside_scope",
        "NAK segment request outside the NAK's scope (" .. C.nak .. ")", PROTO, WARN),
    -- transaction analysis (preference dtncfdp.analysis; the ones that look
    -- ahead need the whole capture: Wireshark's second pass, tshark -2)
    file_size_error = new_expert("file_size_error",
        "File data beyond the EOF's file size (File Size Error: " .. C.size_error_data .. ", "
        .. C.size_error_eof .. ")", PROTO, ERR),
    size_mismatch = new_expert("size_mismatch",
        "EOF file size differs from the Metadata's (" .. C.eof .. "; " .. C.metadata
        .. "; no § cited for the rule)", PROTO, WARN),
    checksum_mismatch = new_expert("checksum_mismatch",
        "EOF file checksum differs from the modular checksum of the file data seen (" .. C.eof
        .. "; no § cited for the algorithm)", PROTO, ERR),
    finished_with_gaps = new_expert("finished_with_gaps",
        "Finished(data complete) while parts of the file were never seen (" .. C.delivery
        .. "; or the capture missed them)", PROTO, WARN),
    nak_never_sent = new_expert("nak_never_sent",
        "NAK asks for file data never sent (beyond the EOF's file size or any data seen; "
        .. C.nak .. ")", PROTO, WARN),
    nak_after_complete = new_expert("nak_after_complete",
        "NAK asks for file data after its receiver declared the data complete (Finished; "
        .. C.finished .. ", " .. C.nak .. ")", PROTO, WARN),
    ack_condition_mismatch = new_expert("ack_condition_mismatch",
        "ACK condition code differs from the acknowledged PDU's (" .. C.ack .. ")", PROTO, WARN),
    ack_unmatched = new_expert("ack_unmatched",
        "ACK of an EOF or Finished not seen earlier in the transaction", SEQ, WARN),
    retransmission = new_expert("retransmission",
        "File data already seen in the transaction (retransmission)", SEQ, CHAT),
    eof_no_ack = new_expert("eof_no_ack",
        "EOF in acknowledged mode never acknowledged in this capture (" .. C.eof_ack .. ")",
        SEQ, WARN),
    finished_no_ack = new_expert("finished_no_ack",
        "Finished in acknowledged mode never acknowledged in this capture (" .. C.positive_ack
        .. ")", SEQ, WARN),
}
do
    local list = {}
    for _, e in pairs(E) do list[#list + 1] = e end
    proto.experts = list
end

---------------------------------------------------------------------------
-- Preferences
---------------------------------------------------------------------------
proto.prefs.udp_ports = Pref.range("UDP ports", DEFAULT_PORTS,
    "UDP ports decoded as CFDP (no port is assigned by IANA or CCSDS; 5111 is the "
    .. "cfdp-py/cfdp-rs example convention)", 65535)
proto.prefs.heuristic = Pref.bool("Heuristic on other UDP ports", false,
    "Try every UDP datagram; claim it only if it is exactly one CFDP PDU of version 0 or 1 "
    .. "with a defined directive code and, when flagged, a correct CRC")
proto.prefs.analysis = Pref.bool("Analyze transactions", true,
    "Track each transaction (source entity ID, sequence number): file data seen, file "
    .. "sizes, checksums, NAK, ACK and Finished links, response times, and the checks that "
    .. "need them (links to later frames need a second pass: tshark -2)")

---------------------------------------------------------------------------
-- CRC-16/CCITT-FALSE (§5.1): polynomial 0x1021, preset 0xFFFF
---------------------------------------------------------------------------
local CRC_TABLE = {}
for i = 0, 255 do
    local c = lshift(i, 8)
    for _ = 1, 8 do
        if band(c, 0x8000) ~= 0 then
            c = band(bxor(lshift(c, 1), 0x1021), 0xFFFF)
        else
            c = band(lshift(c, 1), 0xFFFF)
        end
    end
    CRC_TABLE[i] = c
end

-- the CRC of the first n octets of raw
local function crc16(raw, n)
    local crc = 0xFFFF
    for i = 1, n do
        crc = bxor(band(lshift(crc, 8), 0xFFFF), CRC_TABLE[bxor(rshift(crc, 8), sbyte(raw, i))])
    end
    return crc
end

---------------------------------------------------------------------------
-- Parsing (no tree): a table of values and a tree of nodes to render.
--
-- A node is {f = field, pos =, len =, v = value, text =, label =, gen =,
-- ex = {{expert, message}, ...}, kids = {...}}: a field item when f is set,
-- else a text item.  The heuristic parses without rendering.
---------------------------------------------------------------------------

-- an unsigned big-endian integer of w (1-8) octets at 0-based pos of raw:
-- UInt64, and a Lua number (exact below 2^53)
local function be_uint(raw, pos, w)
    if w <= 6 then
        local n = 0
        for i = 1, w do n = n * 256 + sbyte(raw, pos + i) end
        return UInt64(n), n
    end
    local hi, lo = 0, 0
    for i = 1, w - 4 do hi = hi * 256 + sbyte(raw, pos + i) end
    for i = w - 3, w do lo = lo * 256 + sbyte(raw, pos + i) end
    -- below 2^53 (hi < 2^21) an exact integer; above, a float as Lua 5.2 gives
    -- (Lua 5.3+ integer arithmetic would wrap to negative from 2^63)
    if hi < 2097152 then return UInt64(lo, hi), hi * 4294967296 + lo end
    return UInt64(lo, hi), hi * 4294967296.0 + lo
end

-- "..1. ...." for the bits of mask in octet
local function bitpattern(octet, mask)
    local s = {}
    for i = 7, 0, -1 do
        local b = lshift(1, i)
        if band(mask, b) == 0 then
            s[#s + 1] = "."
        else
            s[#s + 1] = band(octet, b) ~= 0 and "1" or "0"
        end
        if i == 4 then s[#s + 1] = " " end
    end
    return table.concat(s)
end

local function shift_of(mask)
    local s = 0
    while band(mask, 1) == 0 do
        mask = rshift(mask, 1)
        s = s + 1
    end
    return s
end

local function hex32(n)
    return string.format("0x%08x", n)
end

local function plural(n, one, many)
    return n .. " " .. (n == 1 and one or (many or one .. "s"))
end

local function parse(raw)
    local P = { raw = raw, nodes = {}, ok = true }
    local size = #raw
    local pos, limit = 0, size

    local function N(parent, t)
        t.kids = {}
        local list = parent and parent.kids or P.nodes
        list[#list + 1] = t
        return t
    end
    local function X(node, ex, msg)
        node.ex = node.ex or {}
        node.ex[#node.ex + 1] = { ex, msg }
    end
    -- a malformation: an item of its own at the end of the tree
    -- field: the field it lies in (P.fault keeps the first: F.malformed_field)
    local function mal(ex, at, len, msg, field)
        P.ok = false
        P.err = P.err or msg
        P.fault = P.fault or field
        at = max(0, min(at, size))
        len = max(0, min(len, size - at))
        local node = N(nil, { pos = at, len = len, label = "[Malformed: " .. msg .. "]" })
        X(node, ex, msg)
        return false
    end
    local function u8(at)
        return sbyte(raw, at + 1)
    end
    -- a bit field shown as a string value: "1111 .... = Condition code: cancel (15)"
    local function named_bits(parent, f, at, mask, label, names)
        local octet = u8(at)
        local code = rshift(band(octet, mask), shift_of(mask))
        local name = names[code]
        local shown = name or ("undefined (" .. code .. ")")
        local node = N(parent, { f = f, pos = at, len = 1, v = name or tostring(code),
            text = bitpattern(octet, mask) .. " = " .. label .. ": " .. shown
                .. (name and (" (" .. code .. ")") or "") })
        return code, node
    end
    -- spare/reserved bits: shown, and flagged when set
    local function spare(parent, at, mask, what, cite_)
        local octet = u8(at)
        local value = rshift(band(octet, mask), shift_of(mask))
        local node = N(parent, { f = F.spare, pos = at, len = 1, v = value,
            text = bitpattern(octet, mask) .. " = " .. what .. ": " .. value })
        if value ~= 0 then
            X(node, E.reserved_bits, what .. " is " .. value .. ", not 0 (" .. cite_ .. ")")
        end
        return node
    end

    -- ---------------------------------------------------------------- header
    if size == 0 then
        mal(E.truncated_header, 0, 0, "empty datagram: no fixed header (" .. C.header .. ")",
            "header")
        return P
    end
    local hdr = N(nil, { pos = 0, len = min(size, 4), label = "PDU header" })
    local b0 = u8(0)
    P.version = rshift(b0, 5)
    P.pdu_type = band(rshift(b0, 4), 1)
    P.direction = band(rshift(b0, 3), 1)
    P.mode = band(rshift(b0, 2), 1)
    P.crc = band(b0, 0x02) ~= 0
    P.large = band(b0, 0x01) ~= 0
    P.fss = P.large and 8 or 4
    P.file_data = P.pdu_type == 1
    local vnode = N(hdr, { f = F.version, pos = 0, len = 1 })
    if VERSIONS[P.version] == nil then
        X(vnode, E.bad_version, "version " .. P.version .. " is undefined (" .. C.header
            .. ": 1 for 727.0-B-5, 0 for 727.0-B-4); decoded with the 727.0-B-5 layout")
        P.ok = false
        P.err = P.err or "bad version"
        P.fault = P.fault or "version"
    end
    named_bits(hdr, F.pdu_type, 0, 0x10, "PDU type", PDU_TYPES)
    named_bits(hdr, F.direction, 0, 0x08, "Direction", DIRECTIONS)
    named_bits(hdr, F.mode, 0, 0x04, "Transmission mode", MODES)
    N(hdr, { f = F.crc, pos = 0, len = 1 })
    local lnode = N(hdr, { f = F.large_file, pos = 0, len = 1 })
    if P.version == 0 and P.large then
        X(lnode, E.reserved_bits, "version 0 (727.0-B-4) reserves this bit, which 727.0-B-5 made "
            .. "the large file flag; decoded as large file (" .. C.header .. ")")
    end
    if size < 4 then
        if size >= 3 then N(hdr, { f = F.data_field_length, pos = 1, len = 2 }) end
        mal(E.truncated_header, 0, size, "the datagram's " .. plural(size, "octet")
            .. " end inside the 4 fixed octets of the header (" .. C.header .. ")", "header")
        return P
    end
    P.data_field_length = u8(1) * 256 + u8(2)
    N(hdr, { f = F.data_field_length, pos = 1, len = 2 })
    local b3 = u8(3)
    P.segmentation_control = band(b3, 0x80) ~= 0
    P.segment_metadata = band(b3, 0x08) ~= 0
    P.eid_len = band(rshift(b3, 4), 7) + 1
    P.seq_len = band(b3, 7) + 1
    N(hdr, { f = P.file_data and F.segmentation_control or F.hdr_segmentation_control,
        pos = 3, len = 1 })
    N(hdr, { f = F.entity_id_length, pos = 3, len = 1, v = P.eid_len,
        text = bitpattern(b3, 0x70) .. " = Length of entity IDs: " .. plural(P.eid_len, "octet") })
    local snode = N(hdr, { f = P.file_data and F.segment_metadata or F.hdr_segment_metadata,
        pos = 3, len = 1 })
    if P.version == 0 and P.segment_metadata then
        X(snode, E.reserved_bits, "version 0 (727.0-B-4) reserves this bit, which 727.0-B-5 "
            .. "made the segment metadata flag; decoded as 727.0-B-5 (" .. C.header .. ")")
    end
    N(hdr, { f = F.sequence_number_length, pos = 3, len = 1, v = P.seq_len,
        text = bitpattern(b3, 0x07) .. " = Length of transaction sequence number: "
            .. plural(P.seq_len, "octet") })
    local hl = 4 + 2 * P.eid_len + P.seq_len
    P.header_length = hl
    hdr.len = min(hl, size)
    if size < hl then
        mal(E.truncated_header, 4, size - 4, "the datagram's " .. plural(size, "octet")
            .. " end inside the " .. hl .. "-octet header (" .. C.header .. ")", "header")
        return P
    end
    local v, n
    v, n = be_uint(raw, 4, P.eid_len)
    P.source = { v = v, n = n }
    N(hdr, { f = F.source_entity, pos = 4, len = P.eid_len, v = v })
    v, n = be_uint(raw, 4 + P.eid_len, P.seq_len)
    P.transaction = { v = v, n = n }
    N(hdr, { f = F.transaction, pos = 4 + P.eid_len, len = P.seq_len, v = v })
    v, n = be_uint(raw, 4 + P.eid_len + P.seq_len, P.eid_len)
    P.dest = { v = v, n = n }
    N(hdr, { f = F.dest_entity, pos = 4 + P.eid_len + P.seq_len, len = P.eid_len, v = v })

    -- ----------------------------------------------- data field, CRC, trailer
    local pdu_end = hl + P.data_field_length
    local have_crc = false
    if pdu_end > size then
        mal(E.data_field_overrun, 1, 2, "data field length " .. P.data_field_length
            .. " runs past the datagram: " .. plural(size - hl, "octet") .. " follow the "
            .. hl .. "-octet header (" .. C.header .. ")", "data_field_length")
        limit = size -- decode what is there; no CRC to check
    else
        limit = pdu_end
        -- octets after the PDU: flagged at the end (E.trailing_bytes), but the
        -- data field length that leaves them over is the first fault
        if pdu_end < size then P.fault = P.fault or "data_field_length" end
        if P.crc then
            if P.data_field_length < 2 then
                mal(E.crc_missing, hl, P.data_field_length, "CRC flag set, but the data field of "
                    .. plural(P.data_field_length, "octet") .. " cannot hold the CRC ("
                    .. C.header .. ")", "crc_value")
            else
                limit = pdu_end - 2
                have_crc = true
            end
        end
    end
    P.pdu_end = pdu_end
    P.limit = limit
    pos = hl

    local kind
    local label_ = P.file_data and "File Data" or "file directive"
    local body
    -- field: the Scapy layer's name of the field that must fit
    local function need(n_, what, field)
        if pos + n_ > limit then
            return mal(E.field_truncated, pos, limit - pos, "the " .. label_ .. " data field ends "
                .. "inside the " .. what .. " (" .. plural(n_, "octet") .. ", " .. max(limit - pos, 0)
                .. " left; " .. (kind and kind.cite or C.directives) .. ")", field)
        end
        return true
    end
    local function excess(what)
        if pos < limit then
            local node = N(body, { f = F.excess, pos = pos, len = limit - pos })
            local msg = plural(limit - pos, "octet") .. " after the " .. what
                .. " parameters inside the data field (" .. kind.cite .. ")"
            X(node, E.excess_octets, msg)
            P.ok = false
            P.err = P.err or msg
            P.fault = P.fault or "excess"
            pos = limit
        end
    end
    local function uint_field(parent, f, w, what, field)
        if not need(w, what, field) then return nil end
        local val, num = be_uint(raw, pos, w)
        -- (a 32-bit field takes a Lua number)
        local node = N(parent, { f = f, pos = pos, len = w, v = (f == F.checksum) and num or val })
        pos = pos + w
        return { v = val, n = num, node = node }
    end
    local function fss(parent, f, what, field)
        return uint_field(parent, f, P.fss, what, field)
    end
    local function condition(parent, at)
        local code, node = named_bits(parent, F.condition, at, 0xF0, "Condition code",
            CONDITION_CODES)
        N(parent, { f = F.condition_code, pos = at, len = 1, hide = true })
        if CONDITION_CODES[code]:match("^reserved") then
            X(node, E.condition_reserved, "condition code " .. code .. " is reserved ("
                .. C.conditions .. ")")
        end
        return code
    end
    -- an LV (Table 5-2) at pos, bounded by bound: the value, or nil (malformed);
    -- field: the Scapy layer's name of its value (of its length octet: with "_len")
    local function lv(parent, f_len, f_val, what, bound, field)
        if pos >= bound then
            mal(E.lv_overrun, pos, 0, "the " .. what .. " LV's length octet lies past the end ("
                .. C.lv .. ")", field .. "_len")
            return nil
        end
        local len = u8(pos)
        N(parent, { f = f_len, pos = pos, len = 1 })
        if pos + 1 + len > bound then
            N(parent, { f = f_val, pos = pos + 1, len = bound - pos - 1 })
            mal(E.lv_overrun, pos, bound - pos, "the " .. what .. " LV (length " .. len
                .. ") at octet " .. pos .. " runs past the end: " .. plural(bound - pos - 1, "octet")
                .. " left (" .. C.lv .. ")", field)
            pos = bound
            return nil
        end
        N(parent, { f = f_val, pos = pos + 1, len = len, v = len == 0 and "" or nil })
        local s = raw:sub(pos + 2, pos + 1 + len)
        pos = pos + 1 + len
        return s
    end

    -- the value of one well-delimited TLV
    local function tlv_value(tlv)
        local node, vpos, len = tlv.node, tlv.vpos, tlv.len
        local t = tlv.type
        if t == TLV.entity_id then
            if len >= 1 and len <= 8 then
                local val, num = be_uint(raw, vpos, len)
                tlv.entity = { v = val, n = num }
                tlv.entity_node = N(node, { f = F.tlv_entity_id, pos = vpos, len = len, v = val })
            else
                X(node, E.entity_id_length, "entity ID TLV of " .. plural(len, "octet")
                    .. " (1-8; " .. C.tlv .. ")")
            end
        elseif t == TLV.filestore_request or t == TLV.filestore_response then
            local stop = vpos + len
            if len < 1 then
                X(node, E.tlv_value_length, "filestore TLV without its action code octet ("
                    .. C.tlv .. ")")
                return
            end
            local action = rshift(u8(vpos), 4)
            tlv.action = action
            N(node, { f = F.fs_action, pos = vpos, len = 1 })
            if t == TLV.filestore_request then
                local sp = N(node, { f = F.fs_spare, pos = vpos, len = 1 })
                if band(u8(vpos), 0x0F) ~= 0 then
                    X(sp, E.reserved_bits, "filestore request spare bits are "
                        .. band(u8(vpos), 0x0F) .. ", not 0 (" .. C.tlv .. ")")
                end
            else
                N(node, { f = F.fs_status, pos = vpos, len = 1 })
            end
            local saved = pos
            pos = vpos + 1
            local ok = lv(node, F.fs_first_len, F.fs_first, "first file name", stop,
                "first_file_name") ~= nil
            if ok and SECOND_NAME[action] then
                ok = lv(node, F.fs_second_len, F.fs_second, "second file name", stop,
                    "second_file_name") ~= nil
            end
            if ok and t == TLV.filestore_response then
                ok = lv(node, F.fs_message_len, F.fs_message, "filestore message", stop,
                    "filestore_message") ~= nil
            end
            if ok and pos < stop then
                X(node, E.tlv_value_length, plural(stop - pos, "octet") .. " after the filestore "
                    .. (t == TLV.filestore_request and "request" or "response") .. "'s LVs ("
                    .. C.tlv .. "; a second file name only for actions 2-4)")
            end
            pos = saved
        elseif t == TLV.message_to_user then
            N(node, { f = F.message_to_user, pos = vpos, len = len, v = len == 0 and "" or nil })
        elseif t == TLV.fault_handler_override then
            if len == 1 then
                N(node, { f = F.fho_condition, pos = vpos, len = 1 })
                N(node, { f = F.fho_handler, pos = vpos, len = 1 })
            else
                X(node, E.tlv_value_length, "fault handler override TLV of "
                    .. plural(len, "octet") .. " (1: condition code and handler code; "
                    .. C.tlv .. ")")
            end
        elseif t == TLV.flow_label then
            N(node, { f = F.flow_label, pos = vpos, len = len, v = len == 0 and "" or nil })
        else
            X(node, E.tlv_type_undefined, "TLV type " .. t .. " is not defined (" .. C.tlv .. ")")
        end
    end
    -- TLVs back to back up to the end of the data field; field_of(type): the
    -- Scapy layer's name of the list the TLV of that type belongs to, called
    -- once per TLV in wire order
    local function tlvs(parent, what, field_of)
        local list = {}
        while pos < limit do
            local tpos = pos
            local t = u8(tpos)
            local field = field_of(t)
            local tname = TLV_TYPES[t] or "undefined"
            local i = #list + 1
            local title = what .. " " .. i .. ": " .. tname .. " TLV (type " .. t .. ")"
            if limit - tpos < 2 then
                local node = N(parent, { pos = tpos, len = limit - tpos, label = title })
                N(node, { f = F.tlv_type, pos = tpos, len = 1 })
                mal(E.tlv_overrun, tpos, limit - tpos, "the " .. tname .. " TLV (type " .. t
                    .. ") at octet " .. tpos .. " has no length octet: the data field ends ("
                    .. C.tlv .. ")", field)
                pos = limit
                return list
            end
            local len = u8(tpos + 1)
            local vlen = min(len, limit - tpos - 2)
            local node = N(parent, { pos = tpos, len = 2 + vlen, label = title .. ", length " .. len })
            N(node, { f = F.tlv_type, pos = tpos, len = 1 })
            N(node, { f = F.tlv_length, pos = tpos + 1, len = 1 })
            N(node, { f = F.tlv_value, pos = tpos + 2, len = vlen, v = vlen == 0 and "" or nil })
            local tlv = { type = t, len = len, vpos = tpos + 2, node = node, index = i }
            list[i] = tlv
            if vlen < len then
                tlv.bad = true
                mal(E.tlv_overrun, tpos, 2 + vlen, "the " .. tname .. " TLV (type " .. t
                    .. ", length " .. len .. ") at octet " .. tpos .. " runs past the end of the "
                    .. "data field: " .. plural(vlen, "octet") .. " left for its value (" .. C.tlv .. ")",
                    field)
                pos = limit
                return list
            end
            pos = tpos + 2 + len
            tlv_value(tlv)
        end
        return list
    end
    local function unexpected(tlv, why)
        X(tlv.node, E.tlv_type_unexpected, (TLV_TYPES[tlv.type] or "undefined") .. " TLV (type "
            .. tlv.type .. ") " .. why)
    end
    -- the fault location of an EOF or Finished: one entity ID TLV, last
    local function fault_location(tlv)
        if tlv.entity then
            P.fault_location = tlv.entity
            N(tlv.node, { f = F.fault_location, pos = tlv.vpos, len = tlv.len, v = tlv.entity.v })
        end
        if P.condition == NO_ERROR then
            X(tlv.node, E.fault_location_unexpected, "a fault location with condition "
                .. "no_error (it is omitted when there is no error; " .. kind.cite .. ")")
        end
    end

    -- ------------------------------------------------------------ directives
    local function eof()
        if not need(1, "condition code", "condition") then return end
        P.condition = condition(body, pos)
        spare(body, pos, 0x0F, "Spare", C.eof)
        pos = pos + 1
        local ck = uint_field(body, F.checksum, 4, "file checksum", "checksum")
        if not ck then return end
        P.checksum = ck.n
        P.file_size = fss(body, F.file_size, "file size", "file_size")
        if not P.file_size then return end
        local list = tlvs(body, "Fault location", function() return "fault_location" end)
        for i, tlv in ipairs(list) do
            if not tlv.bad then
                if i == 1 and tlv.type == TLV.entity_id then
                    fault_location(tlv)
                else
                    unexpected(tlv, i == 1 and "where the EOF carries only a fault location "
                        .. "entity ID TLV (" .. C.eof .. ")" or "after the fault location, "
                        .. "which ends the EOF (" .. C.eof .. ")")
                end
            end
        end
    end

    local function finished()
        if not need(1, "condition code", "condition") then return end
        local at = pos
        P.condition = condition(body, at)
        if P.version == 0 then
            N(body, { f = F.end_system_status, pos = at, len = 1 })
        else
            spare(body, at, 0x08, "Spare", C.finished)
        end
        P.delivery_code = named_bits(body, F.delivery_code, at, 0x04, "Delivery code",
            DELIVERY_CODES)
        P.file_status = named_bits(body, F.file_status, at, 0x03, "File status", FILE_STATUSES)
        pos = pos + 1
        -- the Scapy layer's lists: filestore_responses while the TLVs are filestore
        -- responses, fault_location from the first that is not
        local responses = true
        local list = tlvs(body, "TLV", function(t)
            responses = responses and t == TLV.filestore_response
            return responses and "filestore_responses" or "fault_location"
        end)
        local seen_fault = false
        for _, tlv in ipairs(list) do
            if not tlv.bad then
                if seen_fault then
                    unexpected(tlv, "after the fault location, which ends the Finished ("
                        .. C.finished .. ")")
                elseif tlv.type == TLV.entity_id then
                    seen_fault = true
                    fault_location(tlv)
                elseif tlv.type ~= TLV.filestore_response then
                    unexpected(tlv, "in a Finished, which carries filestore responses and a fault "
                        .. "location (" .. C.finished .. ")")
                end
            end
        end
    end

    local function ack()
        if not need(1, "acknowledged directive code", "ack_of") then return end
        local at = pos
        local code = rshift(u8(at), 4)
        P.ack_of = code
        local node
        if DIRECTIVES[code] then
            local _
            _, node = named_bits(body, F.ack_of, at, 0xF0, "Directive acknowledged", DIRECTIVES)
        end
        local cnode = N(body, { f = F.ack_of_code, pos = at, len = 1, hide = node ~= nil })
        node = node or cnode
        if DIRECTIVES[code] == nil then
            X(node, E.ack_of_undefined, "ACK of directive code " .. code .. ", which "
                .. cite(SECTION.directives) .. " does not define (" .. C.ack .. ")")
        elseif code ~= DIRECTIVE.eof and code ~= DIRECTIVE.finished then
            X(node, E.ack_of_invalid, "ACK of directive code " .. code .. " ("
                .. DIRECTIVES[code] .. "): only EOF and Finished are acknowledged ("
                .. C.ack .. ")")
        end
        P.ack_subtype = band(u8(at), 0x0F)
        local snode = N(body, { f = F.ack_subtype, pos = at, len = 1 })
        local want = (code == DIRECTIVE.finished) and 1 or 0
        if (code == DIRECTIVE.finished or code == DIRECTIVE.eof) and P.ack_subtype ~= want then
            X(snode, E.ack_subtype, "directive subtype code " .. P.ack_subtype .. " in the ACK of "
                .. DIRECTIVES[code] .. ": " .. want .. " expected (" .. C.ack .. ")")
        end
        pos = pos + 1
        if not need(1, "condition code", "condition") then return end
        P.condition = condition(body, pos)
        spare(body, pos, 0x0C, "Spare", C.ack)
        P.transaction_status = named_bits(body, F.transaction_status, pos, 0x03,
            "Transaction status", TRANSACTION_STATUSES)
        pos = pos + 1
        excess("ACK")
    end

    local function metadata()
        -- (reserved1: the Scapy layer's first field of the octet)
        if not need(1, "closure requested and checksum type octet", "reserved1") then return end
        local at = pos
        local octet = u8(at)
        if P.version == 0 then
            N(body, { f = F.metadata_segmentation_control, pos = at, len = 1 })
            local node = N(body, { f = F.closure_requested, pos = at, len = 1 })
            if band(octet, 0x7F) ~= 0 then
                X(node, E.reserved_bits, "version 0 (727.0-B-4) reserves the 7 bits after "
                    .. "segmentation control, which 727.0-B-5 uses for closure requested and "
                    .. "the checksum type; decoded as 727.0-B-5 (" .. C.metadata .. ")")
            end
        else
            spare(body, at, 0x80, "Reserved", C.metadata)
            N(body, { f = F.closure_requested, pos = at, len = 1 })
            spare(body, at, 0x30, "Reserved", C.metadata)
        end
        P.closure_requested = band(octet, 0x40) ~= 0
        P.checksum_type = band(octet, 0x0F)
        local cnode = N(body, { f = F.checksum_type, pos = at, len = 1 })
        if CHECKSUM_TYPES[P.checksum_type] == nil then
            X(cnode, E.checksum_type_unassigned, "checksum type " .. P.checksum_type
                .. " is not one of 0 modular, 1 CRC-32 Proximity-1, 2 CRC-32C, 3 CRC-32, 15 null ("
                .. C.metadata .. "; SANA checksum identifiers)")
        end
        pos = pos + 1
        P.file_size = fss(body, F.file_size, "file size", "file_size")
        if not P.file_size then return end
        P.source_file_name = lv(body, F.source_file_name_len, F.source_file_name,
            "source file name", limit, "source_file_name")
        if not P.source_file_name then return end
        P.dest_file_name = lv(body, F.dest_file_name_len, F.dest_file_name,
            "destination file name", limit, "dest_file_name")
        if not P.dest_file_name then return end
        local list = tlvs(body, "Option", function() return "options" end)
        for _, tlv in ipairs(list) do
            local t = tlv.type
            if not tlv.bad and TLV_TYPES[t] and t ~= TLV.filestore_request
                and t ~= TLV.message_to_user and t ~= TLV.fault_handler_override
                and t ~= TLV.flow_label then
                unexpected(tlv, "as a Metadata option, which is a filestore request, message to "
                    .. "user, fault handler override or flow label (" .. C.metadata .. ")")
            end
        end
    end

    local function nak()
        P.start_of_scope = fss(body, F.start_of_scope, "start of scope", "start_of_scope")
        if not P.start_of_scope then return end
        P.end_of_scope = fss(body, F.end_of_scope, "end of scope", "end_of_scope")
        if not P.end_of_scope then return end
        local s0, e0 = P.start_of_scope, P.end_of_scope
        if s0.v > e0.v then
            X(e0.node, E.nak_scope_inverted, "start of scope " .. tostring(s0.v)
                .. " > end of scope " .. tostring(e0.v) .. " (" .. C.nak .. ")")
        end
        local w = 2 * P.fss
        local count = floor((limit - pos) / w)
        P.requests = {}
        N(body, { f = F.segment_requests, v = count, gen = true })
        for i = 1, count do
            local sv, sn = be_uint(raw, pos, P.fss)
            local ev, en = be_uint(raw, pos + P.fss, P.fss)
            local node = N(body, { pos = pos, len = w, label = "Segment request " .. i .. ": ["
                .. tostring(sv) .. ", " .. tostring(ev) .. ")" })
            N(node, { f = F.segment_start, pos = pos, len = P.fss, v = sv })
            N(node, { f = F.segment_end, pos = pos + P.fss, len = P.fss, v = ev })
            P.requests[i] = { s = sn, e = en, sv = sv, ev = ev, node = node }
            if sv > ev then
                X(node, E.nak_request_inverted, "segment request " .. i .. " starts at "
                    .. tostring(sv) .. ", beyond its end " .. tostring(ev) .. " (" .. C.nak .. ")")
            elseif s0.v <= e0.v and (sv < s0.v or ev > e0.v) then
                X(node, E.nak_request_outside_scope, "segment request " .. i .. " ["
                    .. tostring(sv) .. ", " .. tostring(ev) .. ") lies outside the scope ["
                    .. tostring(s0.v) .. ", " .. tostring(e0.v) .. ") (" .. C.nak .. ")")
            end
            pos = pos + w
        end
        if pos < limit then
            local node = N(body, { f = F.excess, pos = pos, len = limit - pos })
            local msg = plural(limit - pos, "octet") .. " after " .. plural(count, "segment request")
                .. ": not a whole (start, end) pair of " .. w .. " octets (" .. C.nak .. ")"
            X(node, E.nak_partial_request, msg)
            P.ok = false
            P.err = P.err or msg
            P.fault = P.fault or "segment_requests"
            pos = limit
        end
    end

    local function prompt()
        if not need(1, "response required octet", "response_required") then return end
        P.response_required = named_bits(body, F.response_required, pos, 0x80,
            "Response required", RESPONSES_REQUIRED)
        spare(body, pos, 0x7F, "Spare", C.prompt)
        pos = pos + 1
        excess("Prompt")
    end

    local function keep_alive()
        P.progress = fss(body, F.progress, "progress", "progress")
        if not P.progress then return end
        excess("Keep Alive")
    end

    local function file_data()
        if P.segment_metadata then
            if not need(1, "record continuation state and segment metadata length",
                "record_continuation") then
                return
            end
            P.record_continuation = named_bits(body, F.record_continuation, pos, 0xC0,
                "Record continuation state", RECORD_CONTINUATIONS)
            local mlen = band(u8(pos), 0x3F)
            P.segment_metadata_length = mlen
            N(body, { f = F.segment_metadata_length, pos = pos, len = 1 })
            pos = pos + 1
            if pos + mlen > limit then
                N(body, { f = F.metadata, pos = pos, len = limit - pos })
                return mal(E.segment_metadata_overrun, pos - 1, limit - pos + 1, "segment metadata "
                    .. "of " .. plural(mlen, "octet") .. " runs past the data field ("
                    .. max(limit - pos, 0) .. " left; " .. C.file_data .. ")", "metadata")
            end
            N(body, { f = F.metadata, pos = pos, len = mlen, v = mlen == 0 and "" or nil })
            pos = pos + mlen
        end
        P.offset = fss(body, F.offset, "offset", "offset")
        if not P.offset then return end
        P.data_pos = pos
        P.length = limit - pos
        N(body, { f = F.length, pos = pos, len = limit - pos, v = UInt64(limit - pos), gen = true })
        N(body, { f = F.data, pos = pos, len = limit - pos, v = limit == pos and "" or nil })
        pos = limit
    end

    local LAYOUT = {
        eof = eof, finished = finished, ack = ack, metadata = metadata, nak = nak,
        prompt = prompt, keep_alive = keep_alive,
    }

    if P.file_data then
        P.name = "file_data"
        kind = KIND.file_data
        label_ = kind.label
        body = N(nil, { pos = hl, len = max(limit - hl, 0), label = "File Data PDU" })
        file_data()
    elseif not need(1, "directive code", "directive_code") then
        -- (need() reported it; label_ is nil there)
    else
        local code = u8(pos)
        P.directive_code = code
        P.name = DIRECTIVES[code]
        kind = KIND[P.name or ""]
        label_ = kind and kind.label or ("directive " .. code)
        body = N(nil, { pos = hl, len = max(limit - hl, 0),
            label = (kind and kind.label or "Undefined directive") .. " PDU" })
        local dnode
        if P.name then
            dnode = N(body, { f = F.directive, pos = pos, len = 1, v = P.name,
                text = "Directive: " .. P.name .. " (" .. code .. ")" })
        end
        local cnode = N(body, { f = F.directive_code, pos = pos, len = 1, hide = P.name ~= nil })
        pos = pos + 1
        if P.name then
            LAYOUT[P.name]()
        else
            X(dnode or cnode, E.directive_undefined, "directive code " .. code .. " (0x"
                .. string.format("%02x", code) .. ") is not defined (" .. C.directives .. ")")
            if pos < limit then
                N(body, { f = F.parameters, pos = pos, len = limit - pos })
            end
            pos = limit
        end
    end

    -- the direction the PDU travels
    if kind then
        local want = kind.toward
        if P.name == "ack" and (P.ack_of == DIRECTIVE.eof or P.ack_of == DIRECTIVE.finished) then
            want = (P.ack_of == DIRECTIVE.eof) and 1 or 0
        end
        if want ~= nil and P.direction ~= want then
            local what = kind.label
            if P.name == "ack" then what = "ACK of a " .. KIND[DIRECTIVES[P.ack_of]].label end
            X(hdr.kids[3], E.direction_unexpected, "a " .. what .. " travels "
                .. DIRECTIONS[want] .. ", but its direction bit says " .. DIRECTIONS[P.direction]
                .. " (" .. C.header .. " defines the bit; no § cited for which way each PDU "
                .. "travels)")
        end
    end

    -- the CRC (§5.1)
    if have_crc then
        P.crc_value = u8(pdu_end - 2) * 256 + u8(pdu_end - 1)
        P.crc_computed = crc16(raw, pdu_end - 2)
        P.crc_ok = P.crc_value == P.crc_computed
        local node = N(nil, { f = F.crc_value, pos = pdu_end - 2, len = 2 })
        N(node, { f = F.crc_ok, v = P.crc_ok, gen = true })
        if not P.crc_ok then
            X(node, E.crc_bad, string.format("CRC 0x%04x on the wire, 0x%04x computed over the "
                .. "%d octets before it (CRC-16/CCITT-FALSE; %s)", P.crc_value, P.crc_computed,
                pdu_end - 2, C.header))
        end
    end
    if pdu_end < size then
        mal(E.trailing_bytes, pdu_end, size - pdu_end, plural(size - pdu_end, "octet") .. " after"
            .. " the PDU: its data field length " .. P.data_field_length .. " ends it at octet "
            .. pdu_end .. " (" .. C.header .. "; one PDU per datagram)", "data_field_length")
    end
    return P
end

---------------------------------------------------------------------------
-- Rendering
---------------------------------------------------------------------------
local function render(tree, tvb, node)
    local item
    local range
    if node.pos ~= nil then
        local total = tvb:len()
        local at = min(node.pos, total)
        local len = max(0, min(node.len or 0, total - at))
        range = tvb(at, len)
    end
    if node.f then
        if node.v ~= nil then
            item = range and tree:add(node.f, range, node.v) or tree:add(node.f, node.v)
        else
            item = tree:add(node.f, range)
        end
    else
        item = range and tree:add(range, node.label) or tree:add(proto, node.label)
    end
    if node.text then item:set_text(node.text) end
    if node.gen then item:set_generated() end
    if node.hide then item:set_hidden() end
    if node.ex then
        for _, x in ipairs(node.ex) do item:add_proto_expert_info(x[1], x[2]) end
    end
    for _, kid in ipairs(node.kids) do render(item, tvb, kid) end
    return item
end

---------------------------------------------------------------------------
-- Transaction analysis (preference dtncfdp.analysis)
--
-- The first time a frame is seen (not pinfo.visited) it is recorded in its
-- transaction, keyed by (source entity ID, transaction sequence number), and
-- what it can know from earlier frames is kept in frames[n]: the data seen so
-- far, the links to the PDU it answers, response times, the checks that look
-- back.  Links to later frames (the ACK an EOF got, the Finished answering
-- it), the checksum of data completed after the EOF and the "never
-- acknowledged" checks read the transaction's final state, so they appear
-- only when the frame is dissected again after the whole capture was read:
-- in Wireshark, and in tshark with -2.
--
-- File offsets are Lua numbers: exact below 2^53 octets.
---------------------------------------------------------------------------
local transactions, frames = {}, {}
local prefs_analysis = true

function proto.init()
    transactions, frames = {}, {}
    prefs_analysis = proto.prefs.analysis
end

local function seconds(d)
    if d < 0 then d = 0 end
    local whole = floor(d)
    return NSTime(whole, floor((d - whole) * 1e9 + 0.5))
end

-- the parts of [s, e) not in cov (sorted disjoint {s, e} intervals)
local function gaps_in(cov, s, e)
    local out, at = {}, s
    for _, iv in ipairs(cov) do
        if iv[1] >= e then break end
        if iv[2] > at then
            if iv[1] > at then out[#out + 1] = { at, min(iv[1], e) } end
            at = iv[2]
            if at >= e then break end
        end
    end
    if at < e then out[#out + 1] = { at, e } end
    return out
end

-- cov with [s, e) added (touching intervals merge)
local function add_interval(cov, s, e)
    if s >= e then return cov end
    local out, placed = {}, false
    for _, iv in ipairs(cov) do
        if iv[2] < s then
            out[#out + 1] = iv
        elseif iv[1] > e then
            if not placed then
                out[#out + 1] = { s, e }
                placed = true
            end
            out[#out + 1] = iv
        else
            s, e = min(s, iv[1]), max(e, iv[2])
        end
    end
    if not placed then out[#out + 1] = { s, e } end
    return out
end

local function octets_in(list)
    local n = 0
    for _, iv in ipairs(list) do n = n + iv[2] - iv[1] end
    return n
end

local function ranges_text(list, most)
    local parts = {}
    for i, iv in ipairs(list) do
        if i > most then
            parts[#parts + 1] = "... (" .. #list .. " in all)"
            break
        end
        parts[#parts + 1] = "[" .. string.format("%.0f", iv[1]) .. ", "
            .. string.format("%.0f", iv[2]) .. ")"
    end
    return table.concat(parts, " ")
end

-- The modular checksum (file checksum type 0): the sum, mod 2^32, of the
-- file's 32-bit big-endian words, each octet at its offset mod 4.  lanes[k+1]
-- sums the octets at offsets = k mod 4 (exact in a Lua number up to 2^45
-- octets of file).
local function modular(lanes)
    local v = (lanes[1] % 256) * 16777216 + (lanes[2] % 65536) * 65536
        + (lanes[3] % 16777216) * 256 + lanes[4] % 4294967296
    return v % 4294967296
end

-- a Lua number as UInt64 (approximate above 2^53, clamped to 0 .. 2^64-1);
-- TWO32 is a float so that hi * TWO32 cannot wrap as a Lua 5.3+ integer
local TWO32 = 4294967296.0
local function u64(n)
    if n ~= n or n <= 0 then return UInt64(0) end
    if n < TWO53 then return UInt64(n) end
    local hi = floor(n / TWO32)
    if hi >= TWO32 then return UInt64.max() end
    return UInt64(n - hi * TWO32, hi)
end

local function transaction_of(P)
    local key = tostring(P.source.v) .. "/" .. tostring(P.transaction.v)
    local t = transactions[key]
    if t == nil then
        t = { cov = {}, seen = 0, lanes = { 0, 0, 0, 0 }, max_end = 0, eofs = {}, finisheds = {},
            data_frames = {} }
        transactions[key] = t
    end
    return t
end

local NO_NOTES = {}
local function add_note(notes, ex, msg)
    if notes == NO_NOTES then notes = {} end
    notes[#notes + 1] = { ex, msg }
    return notes
end

-- the file size the transaction is known to have: the latest EOF(no error)'s,
-- else the Metadata's (nil when neither was seen)
local function known_size(t)
    if t.eof_size ~= nil then return t.eof_size end
    if t.md ~= nil then return t.md.size end
    return nil
end

local function record(P, pinfo)
    local t = transaction_of(P)
    local n, now = int(pinfo.number), pinfo.abs_ts
    local a = { t = t, notes = NO_NOTES }
    local name = P.name

    if name == "file_data" then
        local s = P.offset.n
        local e = s + P.length
        local new = gaps_in(t.cov, s, e)
        local fresh = max(0, min(octets_in(new), P.length))
        if fresh < P.length then
            a.retransmission = true
            local first = nil
            for _, d in ipairs(t.data_frames) do
                if d[2] < e and d[3] > s then
                    first = d[1]
                    break
                end
            end
            a.notes = add_note(a.notes, E.retransmission, "file data [" .. string.format("%.0f", s)
                .. ", " .. string.format("%.0f", e) .. "): " .. plural(P.length - fresh, "octet")
                .. " already seen" .. (first and (", first in frame " .. first) or ""))
        end
        if e > TWO53 then
            t.inexact = true -- offsets no longer exact: no checksum
        else
            local raw, base = P.raw, P.data_pos + 1 - s
            local lanes = t.lanes
            for _, iv in ipairs(new) do
                local a0 = iv[1]
                for k = 0, iv[2] - a0 - 1 do
                    local x = a0 + k
                    local lane = x % 4 + 1
                    lanes[lane] = lanes[lane] + sbyte(raw, base + x)
                end
            end
        end
        t.cov = add_interval(t.cov, s, e)
        t.seen = t.seen + fresh
        if e > t.max_end then t.max_end = e end
        t.data_frames[#t.data_frames + 1] = { n, s, e }
        if t.first_eof_size ~= nil and e > t.first_eof_size then
            a.notes = add_note(a.notes, E.file_size_error, "file data ends at "
                .. string.format("%.0f", e) .. ", beyond the file size "
                .. string.format("%.0f", t.first_eof_size) .. " of the EOF(no error) in frame "
                .. t.first_eof_frame .. " (File Size Error, " .. C.size_error_data .. ")")
        end
    elseif name == "metadata" then
        t.md = { frame = n, size = P.file_size.n, checksum_type = P.checksum_type }
    elseif name == "eof" then
        local ent = { frame = n, time = now, condition = P.condition, acks = {}, finisheds = {},
            size = P.file_size.n, checksum = P.checksum }
        t.eofs[#t.eofs + 1] = ent
        a.eof = ent
        if P.condition == NO_ERROR then
            local size = P.file_size.n
            t.eof_size, t.eof_size_frame = size, n
            if t.first_eof_size == nil then
                t.first_eof_size, t.first_eof_frame = size, n
            end
            if t.max_end > size then
                a.notes = add_note(a.notes, E.file_size_error, "file size "
                    .. string.format("%.0f", size) .. ", but file data up to "
                    .. string.format("%.0f", t.max_end) .. " was seen before it (File Size Error, "
                    .. C.size_error_eof .. ")")
            end
            if t.md ~= nil and t.md.size ~= 0 and t.md.size ~= size then
                a.notes = add_note(a.notes, E.size_mismatch, "file size "
                    .. string.format("%.0f", size) .. ", the Metadata in frame " .. t.md.frame
                    .. " said " .. string.format("%.0f", t.md.size))
            end
            local gaps = gaps_in(t.cov, 0, size)
            if #gaps == 0 and t.max_end <= size and not t.inexact then
                a.computed = modular(t.lanes)
                if t.md ~= nil and t.md.checksum_type == MODULAR then
                    a.checked = true
                    if a.computed ~= P.checksum then
                        a.notes = add_note(a.notes, E.checksum_mismatch, "file checksum "
                            .. hex32(P.checksum) .. ", but the modular checksum of the "
                            .. string.format("%.0f", size) .. " octets seen is " .. hex32(a.computed)
                            .. " (checksum type 0 in the Metadata in frame " .. t.md.frame .. ")")
                    end
                end
            end
        end
    elseif name == "finished" then
        local ent = { frame = n, time = now, condition = P.condition, acks = {} }
        t.finisheds[#t.finisheds + 1] = ent
        a.finished = ent
        local eof = t.eofs[#t.eofs]
        if eof ~= nil then
            a.eof_frame = eof.frame
            a.response_time = now - eof.time
            eof.finisheds[#eof.finisheds + 1] = n
        end
        if P.delivery_code == 0 then
            if t.complete_frame == nil then t.complete_frame = n end
            local size = known_size(t)
            if size ~= nil then
                local gaps = gaps_in(t.cov, 0, size)
                if #gaps > 0 then
                    a.notes = add_note(a.notes, E.finished_with_gaps, "delivery code data_complete, "
                        .. "but " .. plural(octets_in(gaps), "octet") .. " of the "
                        .. string.format("%.0f", size) .. "-octet file were never seen: "
                        .. ranges_text(gaps, 4) .. " (" .. C.delivery .. ")")
                end
            end
        end
    elseif name == "ack" then
        local list, what
        if P.ack_of == DIRECTIVE.eof then
            list, what = t.eofs, "EOF"
        elseif P.ack_of == DIRECTIVE.finished then
            list, what = t.finisheds, "Finished"
        end
        if list ~= nil then
            local target = list[#list]
            if target == nil then
                a.notes = add_note(a.notes, E.ack_unmatched, "ACK of " .. what .. ", but no "
                    .. what .. " of transaction " .. tostring(P.source.v) .. "/"
                    .. tostring(P.transaction.v) .. " was seen before it")
            else
                a.acks_frame = target.frame
                a.response_time = now - target.time
                target.acks[#target.acks + 1] = n
                if target.condition ~= P.condition then
                    a.notes = add_note(a.notes, E.ack_condition_mismatch, "condition code "
                        .. CONDITION_CODES[P.condition] .. ", but the " .. what .. " in frame "
                        .. target.frame .. " has " .. CONDITION_CODES[target.condition] .. " ("
                        .. C.ack .. ")")
                end
                if what == "EOF" then t.last_eof_ack = n else t.last_finished_ack = n end
            end
        end
    elseif name == "nak" then
        -- what can have been sent: the EOF's file size, else the data seen
        -- and the Metadata's file size
        local size = t.eof_size
        local sent = max(t.max_end, t.md and t.md.size or 0)
        local asked, seen_before = {}, 0
        for i, r in ipairs(P.requests) do
            if r.e > r.s then
                asked[#asked + 1] = { r.s, r.e }
                seen_before = seen_before + (r.e - r.s) - octets_in(gaps_in(t.cov, r.s, r.e))
                local beyond
                if size ~= nil and r.e > size then
                    beyond = "beyond the file size " .. string.format("%.0f", size)
                        .. " of the EOF in frame " .. t.eof_size_frame
                elseif size == nil and r.e > sent then
                    beyond = "beyond any file data seen (up to "
                        .. string.format("%.0f", t.max_end) .. ") and the Metadata's file size"
                end
                if beyond then
                    a.notes = add_note(a.notes, E.nak_never_sent, "segment request " .. i .. " ["
                        .. string.format("%.0f", r.s) .. ", " .. string.format("%.0f", r.e)
                        .. ") asks for data " .. beyond)
                end
            end
        end
        a.requested_seen = seen_before
        if #asked > 0 and t.complete_frame ~= nil then
            a.notes = add_note(a.notes, E.nak_after_complete, "asks for "
                .. ranges_text(asked, 4) .. " after the Finished(data complete) in frame "
                .. t.complete_frame)
        end
    end
    if t.md ~= nil and name ~= "metadata" then a.metadata_frame = t.md.frame end
    a.file_size = known_size(t)
    a.seen = t.seen
    local top = a.file_size or t.max_end
    if top ~= nil then a.gaps = #gaps_in(t.cov, 0, max(top, t.max_end)) end
    return a
end

local function analyze(tvb, pinfo, root, P)
    local a = frames[pinfo.number]
    if a == nil then
        if pinfo.visited then return end -- analysis was off when the capture was read
        a = record(P, pinfo)
        frames[pinfo.number] = a
    end
    local t = a.t
    local sub
    local function tree()
        if sub == nil then
            sub = root:add(tvb(0, 0), "[Transaction analysis]")
            sub:set_generated()
        end
        return sub
    end
    local function gen(f, v)
        tree():add(f, v):set_generated()
    end
    local name = P.name
    if a.file_size ~= nil then gen(F.a_file_size, u64(a.file_size)) end
    if name == "file_data" or name == "eof" or name == "finished" or name == "nak" then
        gen(F.a_seen, u64(a.seen))
        if a.gaps ~= nil then gen(F.a_gaps, a.gaps) end
    end
    if a.metadata_frame ~= nil then gen(F.a_metadata_frame, a.metadata_frame) end
    if name == "file_data" then gen(F.a_retransmission, a.retransmission == true) end
    if a.computed ~= nil then gen(F.a_checksum, a.computed) end
    if a.eof_frame ~= nil then gen(F.a_eof_frame, a.eof_frame) end
    if a.acks_frame ~= nil then gen(F.a_acks_frame, a.acks_frame) end
    if a.response_time ~= nil then gen(F.a_response_time, seconds(a.response_time)) end
    if a.requested_seen ~= nil then gen(F.a_requested_seen, u64(a.requested_seen)) end
    for _, x in ipairs(a.notes) do tree():add_proto_expert_info(x[1], x[2]) end
    -- what came later: only once the whole capture has been read
    if not pinfo.visited then return end
    local acked = P.mode == 0
    if a.eof ~= nil then
        for _, f in ipairs(a.eof.acks) do gen(F.a_ack_frame, f) end
        for _, f in ipairs(a.eof.finisheds) do gen(F.a_finished_frame, f) end
        if acked and (t.last_eof_ack == nil or t.last_eof_ack < pinfo.number) then
            tree():add_proto_expert_info(E.eof_no_ack, "no ACK(EOF) of transaction "
                .. tostring(P.source.v) .. "/" .. tostring(P.transaction.v)
                .. " after this EOF in this capture (" .. C.eof_ack .. ")")
        end
        -- the checksum, once the data completed after this EOF
        if not a.checked and P.condition == NO_ERROR and t.md ~= nil
            and t.md.checksum_type == MODULAR and not t.inexact then
            local size = a.eof.size
            if #gaps_in(t.cov, 0, size) == 0 and t.max_end <= size then
                local sum = modular(t.lanes)
                gen(F.a_checksum, sum)
                if sum ~= P.checksum then
                    tree():add_proto_expert_info(E.checksum_mismatch, "file checksum "
                        .. hex32(P.checksum) .. ", but the modular checksum of the "
                        .. string.format("%.0f", size) .. " octets seen in the capture is "
                        .. hex32(sum) .. " (checksum type 0 in the Metadata in frame "
                        .. t.md.frame .. "; the last octets arrived after this EOF)")
                end
            end
        end
    end
    if a.finished ~= nil then
        for _, f in ipairs(a.finished.acks) do gen(F.a_ack_frame, f) end
        if acked and (t.last_finished_ack == nil or t.last_finished_ack < pinfo.number) then
            tree():add_proto_expert_info(E.finished_no_ack, "no ACK(Finished) of transaction "
                .. tostring(P.source.v) .. "/" .. tostring(P.transaction.v)
                .. " after this Finished in this capture (" .. C.positive_ack .. ")")
        end
    end
end

---------------------------------------------------------------------------
-- Dissection
---------------------------------------------------------------------------
-- octets as text for the Info column: printable ASCII, the rest as \xHH
local function printable(octets)
    return (octets:gsub("[^\32-\126]", function(c)
        return string.format("\\x%02x", sbyte(c))
    end))
end

local function summary(P)
    local info = {}
    local kind = KIND[P.name or ""]
    if P.directive_code ~= nil and not P.name then
        info[#info + 1] = "directive " .. P.directive_code
    elseif kind then
        info[#info + 1] = kind.label
    elseif P.version ~= nil then
        info[#info + 1] = P.file_data and "File Data" or "File directive"
    end
    if P.source and P.dest then
        info[#info + 1] = tostring(P.source.v) .. "->" .. tostring(P.dest.v) .. " tx "
            .. tostring(P.transaction.v)
    end
    local name = P.name
    if P.condition ~= nil then info[#info + 1] = CONDITION_CODES[P.condition] end
    if name == "eof" then
        if P.file_size then info[#info + 1] = "size " .. tostring(P.file_size.v) end
        if P.checksum then info[#info + 1] = "checksum " .. hex32(P.checksum) end
    elseif name == "finished" then
        if P.delivery_code then info[#info + 1] = DELIVERY_CODES[P.delivery_code] end
        if P.file_status then info[#info + 1] = FILE_STATUSES[P.file_status] end
    elseif name == "ack" and P.ack_of ~= nil then
        table.insert(info, 2, "of " .. (DIRECTIVES[P.ack_of] or ("directive " .. P.ack_of)))
        if P.transaction_status then
            info[#info + 1] = TRANSACTION_STATUSES[P.transaction_status]
        end
    elseif name == "metadata" then
        if P.file_size then info[#info + 1] = "size " .. tostring(P.file_size.v) end
        if P.dest_file_name then
            info[#info + 1] = printable(P.source_file_name) .. " -> " .. printable(P.dest_file_name)
        end
    elseif name == "nak" then
        if P.end_of_scope then
            info[#info + 1] = "scope [" .. tostring(P.start_of_scope.v) .. ", "
                .. tostring(P.end_of_scope.v) .. ")"
        end
        if P.requests then info[#info + 1] = plural(#P.requests, "request") end
    elseif name == "prompt" and P.response_required then
        info[#info + 1] = RESPONSES_REQUIRED[P.response_required]
    elseif name == "keep_alive" and P.progress then
        info[#info + 1] = "progress " .. tostring(P.progress.v)
    elseif name == "file_data" and P.length then
        info[#info + 1] = "[" .. tostring(P.offset.v) .. ", "
            .. tostring(P.offset.v + UInt64(P.length)) .. ")"
    end
    if P.crc_ok == false then info[#info + 1] = "[bad CRC]" end
    return table.concat(info, " ")
end

local function dissect(tvb, pinfo, tree)
    local P = parse(tvb:raw())
    pinfo.cols.protocol = "DTN-CFDP"
    local root = tree:add(proto, tvb(), LABEL)
    for _, node in ipairs(P.nodes) do render(root, tvb, node) end
    if P.fault then root:add(F.malformed_field, P.fault):set_generated() end
    if P.ok and P.crc_ok ~= false and P.name and prefs_analysis then
        analyze(tvb, pinfo, root, P)
    end
    local text = summary(P)
    pinfo.cols.info = text
    -- the same summary on the protocol item, where tree-based output (PDML) sees it
    root:append_text(", " .. text)
    return tvb:len()
end

function proto.dissector(tvb, pinfo, tree)
    return dissect(tvb, pinfo, tree)
end

-- Heuristic: off unless the preference is set; claims the datagram only if
-- it is exactly one PDU of version 0 or 1 whose data field length accounts
-- for the datagram, with a defined directive code (or file data), a correct
-- CRC when flagged, and nothing malformed.
local function heuristic(tvb, pinfo, tree)
    if not proto.prefs.heuristic then return false end
    if tvb:len() < 8 then return false end
    local P = parse(tvb:raw())
    if not P.ok or P.crc_ok == false or P.name == nil then return false end
    if P.pdu_end ~= tvb:len() then return false end
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
    prefs_analysis = proto.prefs.analysis
    local wanted = proto.prefs.udp_ports
    if wanted ~= registered_ports then
        if registered_ports ~= "" then udp_table:remove(registered_ports, proto) end
        if wanted ~= "" then udp_table:add(wanted, proto) end
        registered_ports = wanted
    end
end
