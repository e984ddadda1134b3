--[[--------------------------------------------------------------------------
  wslua_stub.lua -- a small stand-in for the Wireshark Lua API, to load and
  run our dissectors under a stand-alone Lua 5.4 (Wireshark 4.4 and later
  embed Lua 5.4; the tshark we test with embeds Lua 5.2).

  It is no Wireshark: it gives the globals the dissectors touch (Proto,
  ProtoField, ProtoExpert, expert, base, frametype, Pref, DissectorTable,
  UInt64, NSTime, bit) with the argument checks Wireshark 4.4 makes (an
  integer argument takes an integer or a float with an integral value and
  nothing else), and records what a dissector adds to its tree, so that
  dissectors/tests/test_lua_versions.py can compare the result with what
  the real tshark decodes from the same datagrams.

  The global table is strict: reading or writing an undefined global is an
  error (bit32, which Lua 5.4 no longer has, is one).

  `bit` is the BitOp library as Wireshark builds it for Lua 5.3+
  (epan/wslua/lua_bitop.c): arguments taken modulo 2^32 (floats rounded to
  the nearest integer), results signed 32-bit integers.

  Where Wireshark's choice between a float and an integer is uncertain or
  differs between versions, the stand-in picks the float: pinfo.number and
  pinfo.abs_ts are floats (as lua_pushnumber gives them), UInt64:tonumber()
  returns a float (it does in every version).  tvb:len(), TvbRange:uint()
  and uint preferences are integers (lua_pushinteger in 4.4).

  Usage (Lua 5.3 or later):
    lua5.4 wslua_stub.lua PACKETS SCRIPT.lua [SCRIPT.lua ...]
  PACKETS: a file of lines "<frame number> <udp port> <payload hex>", or "-"
  for none.  Each SCRIPT is loaded as Wireshark loads a plugin; then every
  datagram goes to the dissector registered in "udp.port" for its port.
  Output: one JSON object per line, {"loaded": ...} first, then one
  {"frame": ...} per datagram.
    lua5.4 wslua_stub.lua --exec SCRIPT.lua
  runs SCRIPT in the stand-in's environment (print goes to stdout).
----------------------------------------------------------------------------]]

assert(math.type, "the stand-in needs Lua 5.3 or later")

local mtype, tointeger = math.type, math.tointeger
local sformat = string.format

local function fail(msg, level)
    error(msg, (level or 1) + 1)
end

-- an integer argument as Wireshark 4.4 reads it (luaL_checkinteger): an
-- integer, or a float with an integral value; anything else is an error
local function checkint(x, what)
    if mtype(x) == "integer" then return x end
    if mtype(x) == "float" then
        local i = tointeger(x)
        if i == nil then
            fail(sformat("bad argument (%s): number %s has no integer representation",
                what, tostring(x)), 3)
        end
        return i
    end
    fail(sformat("bad argument (%s): number expected, got %s", what, type(x)), 3)
end

local function optint(x, what, default)
    if x == nil then return default end
    return checkint(x, what)
end

local function checkstring(x, what)
    if type(x) == "string" then return x end
    if type(x) == "number" then return tostring(x) end -- luaL_checkstring converts
    fail(sformat("bad argument (%s): string expected, got %s", what, type(x)), 3)
end

-- a table that errors on unknown keys (Wireshark's constants are C tables;
-- a misspelt one would be nil there and fail later)
local function strict(name, t)
    return setmetatable(t, {
        __index = function(_, k) fail(sformat("%s.%s does not exist", name, tostring(k)), 2) end,
        __newindex = function(_, k) fail(sformat("%s.%s is read-only", name, tostring(k)), 2) end,
    })
end

---------------------------------------------------------------------------
-- bit: Lua BitOp, as epan/wslua/lua_bitop.c builds it for Lua 5.3+
---------------------------------------------------------------------------
local function barg(x, i)
    if mtype(x) == "integer" then return x & 0xFFFFFFFF end
    if mtype(x) == "float" then
        if x ~= x or x == math.huge or x == -math.huge then
            fail(sformat("bit: argument %d is not finite", i), 3)
        end
        -- BitOp adds 2^52+2^51 and keeps the low 32 bits: round to nearest
        local r = tointeger((x + 6755399441055744.0) - 6755399441055744.0)
            or tointeger(x % 4294967296.0)
        return r & 0xFFFFFFFF
    end
    fail(sformat("bad argument #%d to bit function (number expected, got %s)", i, type(x)), 3)
end
local function bret(b)
    b = b & 0xFFFFFFFF
    if b >= 0x80000000 then b = b - 0x100000000 end
    return b
end
local function fold(op)
    return function(...)
        local n = select("#", ...)
        local b = barg((...), 1)
        for i = 2, n do b = op(b, barg((select(i, ...)), i)) end
        return bret(b)
    end
end
local bit_lib = strict("bit", {
    tobit = function(x) return bret(barg(x, 1)) end,
    bnot = function(x) return bret(~barg(x, 1)) end,
    band = fold(function(a, b) return a & b end),
    bor = fold(function(a, b) return a | b end),
    bxor = fold(function(a, b) return a ~ b end),
    lshift = function(x, n) return bret(barg(x, 1) << (barg(n, 2) & 31)) end,
    rshift = function(x, n) return bret(barg(x, 1) >> (barg(n, 2) & 31)) end,
    arshift = function(x, n)
        local b, s = bret(barg(x, 1)), barg(n, 2) & 31
        return bret(b // (1 << s)) -- floor division: an arithmetic shift
    end,
    rol = function(x, n)
        local b, s = barg(x, 1), barg(n, 2) & 31
        return bret((b << s) | (b >> (32 - s)))
    end,
    ror = function(x, n)
        local b, s = barg(x, 1), barg(n, 2) & 31
        return bret((b >> s) | (b << (32 - s)))
    end,
    bswap = function(x)
        local b = barg(x, 1)
        return bret((b >> 24) | ((b >> 8) & 0xFF00) | ((b & 0xFF00) << 8) | (b << 24))
    end,
    tohex = function(x, n)
        local b = barg(x, 1)
        n = n == nil and 8 or bret(barg(n, 2))
        local m = math.min(math.abs(n), 8)
        return sformat(n < 0 and "%08X" or "%08x", b):sub(9 - m)
    end,
})

---------------------------------------------------------------------------
-- UInt64: 64-bit unsigned integers held in Lua 5.4's 64-bit integers
---------------------------------------------------------------------------
local UInt64_mt = {}
local UInt64_methods = {}
local function is_u64(x) return getmetatable(x) == UInt64_mt end
local function mk64(v) return setmetatable({ v = v }, UInt64_mt) end

-- a Lua number as the 64-bit pattern of a guint64: Wireshark casts the
-- double, (guint64) x, which on x86-64 truncates toward zero, wraps negative
-- values and gives 0 from 2^64 on (tshark 4.0 shows UInt64(2^64) as 0)
local function num_to_u64(x, what)
    if mtype(x) == "integer" then return x end
    if mtype(x) ~= "float" then fail(what .. ": number expected", 3) end
    if x ~= x or x >= 18446744073709551616.0 then return 0 end
    if x >= 9223372036854775808.0 then
        return tointeger(math.floor(x - 9223372036854775808.0)) ~ math.mininteger
    end
    if x <= -9223372036854775808.0 then return math.mininteger end
    if x >= 0 then return tointeger(math.floor(x)) end
    return tointeger(math.ceil(x))
end
local function get64(x, what)
    if is_u64(x) then return x.v end
    if type(x) == "number" then return num_to_u64(x, what) end
    if type(x) == "string" then return math.tointeger(tonumber(x)) or fail(what .. ": bad string", 3) end
    fail(sformat("%s: UInt64 or number expected, got %s", what, type(x)), 3)
end
local function u64_tostring(v)
    if v >= 0 then return sformat("%d", v) end
    local q = (v >> 1) // 5 -- v / 10, unsigned
    return sformat("%d%d", q, v - q * 10)
end

UInt64_mt.__index = UInt64_methods
UInt64_mt.__tostring = function(a) return u64_tostring(a.v) end
UInt64_mt.__eq = function(a, b) return get64(a, "==") == get64(b, "==") end
UInt64_mt.__lt = function(a, b) return math.ult(get64(a, "<"), get64(b, "<")) end
UInt64_mt.__le = function(a, b)
    local x, y = get64(a, "<="), get64(b, "<=")
    return x == y or math.ult(x, y)
end
UInt64_mt.__add = function(a, b) return mk64(get64(a, "+") + get64(b, "+")) end
UInt64_mt.__sub = function(a, b) return mk64(get64(a, "-") - get64(b, "-")) end
UInt64_mt.__mul = function(a, b) return mk64(get64(a, "*") * get64(b, "*")) end
-- (no __div, __mod, __concat: the dissectors do not use them, and a use
-- fails here as "arithmetic on a table value")

function UInt64_methods.tonumber(a)
    local v = get64(a, "UInt64:tonumber")
    if v >= 0 then return v + 0.0 end
    return (v + 0.0) + 18446744073709551616.0
end
function UInt64_methods.lshift(a, n)
    n = checkint(n, "UInt64:lshift")
    return mk64(n >= 64 and 0 or (get64(a, "lshift") << n))
end
function UInt64_methods.rshift(a, n)
    n = checkint(n, "UInt64:rshift")
    return mk64(n >= 64 and 0 or (get64(a, "rshift") >> n))
end
function UInt64_methods.band(a, ...)
    local v = get64(a, "band")
    for i = 1, select("#", ...) do v = v & get64((select(i, ...)), "band") end
    return mk64(v)
end
function UInt64_methods.bor(a, ...)
    local v = get64(a, "bor")
    for i = 1, select("#", ...) do v = v | get64((select(i, ...)), "bor") end
    return mk64(v)
end
function UInt64_methods.bxor(a, ...)
    local v = get64(a, "bxor")
    for i = 1, select("#", ...) do v = v ~ get64((select(i, ...)), "bxor") end
    return mk64(v)
end
function UInt64_methods.higher(a) return ((get64(a, "higher") >> 32) & 0xFFFFFFFF) + 0.0 end
function UInt64_methods.lower(a) return (get64(a, "lower") & 0xFFFFFFFF) + 0.0 end

local function UInt64_new(value, high)
    if value == nil then return mk64(0) end
    if type(value) == "number" then
        local v = num_to_u64(value, "UInt64")
        if type(high) == "number" then
            v = (v & 0xFFFFFFFF) | ((num_to_u64(high, "UInt64 high") & 0xFFFFFFFF) << 32)
        end
        return mk64(v)
    end
    return mk64(get64(value, "UInt64"))
end
local UInt64 = setmetatable({
    new = UInt64_new,
    max = function() return mk64(-1) end,
    min = function() return mk64(0) end,
}, {
    __call = function(_, ...) return UInt64_new(...) end,
    __index = function(_, k) fail("UInt64." .. tostring(k) .. " does not exist", 2) end,
})

---------------------------------------------------------------------------
-- NSTime
---------------------------------------------------------------------------
local NSTime_mt = {}
NSTime_mt.__tostring = function(t) return sformat("%d.%09d", t.secs, t.nsecs) end
local function NSTime(secs, nsecs)
    return setmetatable({ secs = optint(secs, "NSTime secs", 0),
        nsecs = optint(nsecs, "NSTime nsecs", 0) }, NSTime_mt)
end

---------------------------------------------------------------------------
-- base, frametype, expert
---------------------------------------------------------------------------
local base = strict("base", {
    NONE = 0, DEC = 1, HEX = 2, OCT = 3, DEC_HEX = 4, HEX_DEC = 5, CUSTOM = 6,
    FLOAT = 0, ASCII = 0, UNICODE = 7, DOT = 8, DASH = 9, COLON = 10, SPACE = 11,
    RANGE_STRING = 0x100, UNIT_STRING = 0x1000,
})
local frametype = strict("frametype", {
    NONE = 0, REQUEST = 1, RESPONSE = 2, ACK = 3, DUP_ACK = 4, RETRANS_PREV = 5,
    RETRANS_NEXT = 6,
})
local expert = strict("expert", {
    group = strict("expert.group", {
        CHECKSUM = 0x01000000, SEQUENCE = 0x02000000, RESPONSE_CODE = 0x03000000,
        REQUEST_CODE = 0x04000000, UNDECODED = 0x05000000, REASSEMBLE = 0x06000000,
        MALFORMED = 0x07000000, DEBUG = 0x08000000, PROTOCOL = 0x09000000,
        SECURITY = 0x0a000000, COMMENTS_GROUP = 0x0b000000, DECRYPTION = 0x0c000000,
        ASSUMPTION = 0x0d000000, DEPRECATED = 0x0e000000,
    }),
    severity = strict("expert.severity", {
        COMMENT = 0x00100000, CHAT = 0x00200000, NOTE = 0x00400000, WARN = 0x00600000,
        ERROR = 0x00800000,
    }),
})

local ProtoExpert_mt = { __name = "ProtoExpert" }
local ProtoExpert = strict("ProtoExpert", {
    new = function(abbr, text, group, severity)
        return setmetatable({
            abbr = checkstring(abbr, "ProtoExpert.new abbr"),
            text = checkstring(text, "ProtoExpert.new text"),
            group = checkint(group, "ProtoExpert.new group"),
            severity = checkint(severity, "ProtoExpert.new severity"),
        }, ProtoExpert_mt)
    end,
})

---------------------------------------------------------------------------
-- ProtoField
---------------------------------------------------------------------------
local ProtoField_mt = { __name = "ProtoField" }
local INT_BYTES = { uint8 = 1, uint16 = 2, uint24 = 3, uint32 = 4, uint64 = 8, framenum = 4 }
local function valuestring(vs, what)
    if vs == nil then return nil end
    if type(vs) ~= "table" then fail(what .. ": value string must be a table", 3) end
    for k, v in pairs(vs) do
        checkint(k, what .. " value string key")
        checkstring(v, what .. " value string")
    end
    return vs
end
local function new_field(ftype, abbr, name, fbase, vs, mask, desc)
    return setmetatable({
        ftype = ftype, abbr = checkstring(abbr, ftype .. " abbr"),
        name = name and checkstring(name, ftype .. " name") or abbr,
        base = fbase, vs = vs, mask = mask, desc = desc,
    }, ProtoField_mt)
end
local function integer_field(ftype)
    return function(abbr, name, fbase, vs, mask, desc)
        fbase = optint(fbase, ftype .. " base", base.DEC)
        if fbase ~= base.DEC and fbase ~= base.HEX and fbase ~= base.OCT
            and fbase ~= base.DEC_HEX and fbase ~= base.HEX_DEC then
            fail(ftype .. ": base must be DEC, HEX, OCT, DEC_HEX or HEX_DEC", 2)
        end
        if is_u64(mask) then mask = mask.v else mask = optint(mask, ftype .. " mask", 0) end
        if desc ~= nil then checkstring(desc, ftype .. " description") end
        return new_field(ftype, abbr, name, fbase, valuestring(vs, ftype), mask, desc)
    end
end
local ProtoField = strict("ProtoField", {
    uint8 = integer_field("uint8"),
    uint16 = integer_field("uint16"),
    uint24 = integer_field("uint24"),
    uint32 = integer_field("uint32"),
    uint64 = integer_field("uint64"),
    framenum = function(abbr, name, fbase, ftype_, desc)
        if fbase ~= nil and checkint(fbase, "framenum base") ~= base.NONE then
            fail("framenum: base must be base.NONE", 2)
        end
        optint(ftype_, "framenum frametype", 0)
        if desc ~= nil then checkstring(desc, "framenum description") end
        return new_field("framenum", abbr, name, base.NONE, nil, 0, desc)
    end,
    bool = function(abbr, name, display, vs, mask, desc)
        display = optint(display, "bool display", base.NONE)
        if vs ~= nil and type(vs) ~= "table" then fail("bool: true/false strings must be a table", 2) end
        mask = optint(mask, "bool mask", 0)
        if mask ~= 0 and display == base.NONE then
            fail("bool: a mask needs the bit width as display", 2)
        end
        if desc ~= nil then checkstring(desc, "bool description") end
        return new_field("bool", abbr, name, display, vs, mask, desc)
    end,
    string = function(abbr, name, display, desc)
        if display ~= nil then checkint(display, "string display") end
        if desc ~= nil then checkstring(desc, "string description") end
        return new_field("string", abbr, name, base.NONE, nil, 0, desc)
    end,
    bytes = function(abbr, name, display, desc)
        if display ~= nil then checkint(display, "bytes display") end
        if desc ~= nil then checkstring(desc, "bytes description") end
        return new_field("bytes", abbr, name, base.NONE, nil, 0, desc)
    end,
    relative_time = function(abbr, name, desc)
        if desc ~= nil then checkstring(desc, "relative_time description") end
        return new_field("relative_time", abbr, name, base.NONE, nil, 0, desc)
    end,
})

---------------------------------------------------------------------------
-- Pref, Proto, DissectorTable
---------------------------------------------------------------------------
local Pref_mt = { __name = "Pref" }
local function new_pref(kind, label, default, desc, check)
    checkstring(label, "Pref." .. kind .. " label")
    if desc ~= nil then checkstring(desc, "Pref." .. kind .. " description") end
    return setmetatable({ kind = kind, default = check(default) }, Pref_mt)
end
local Pref = strict("Pref", {
    bool = function(label, default, desc)
        return new_pref("bool", label, default, desc, function(v)
            if type(v) ~= "boolean" then fail("Pref.bool: default must be a boolean", 4) end
            return v
        end)
    end,
    uint = function(label, default, desc)
        return new_pref("uint", label, default, desc, function(v)
            return checkint(v, "Pref.uint default")
        end)
    end,
    string = function(label, default, desc)
        return new_pref("string", label, default, desc, function(v)
            return checkstring(v, "Pref.string default")
        end)
    end,
    range = function(label, default, desc, max)
        checkint(max, "Pref.range max")
        return new_pref("range", label, default, desc, function(v)
            v = checkstring(v, "Pref.range default")
            if not v:match("^[%d,%- ]*$") then fail("Pref.range: bad range " .. v, 4) end
            return v
        end)
    end,
})

local protos = {}       -- name -> proto, in registration order below
local proto_order = {}
local udp_ports = {}    -- port -> proto
local heuristics = {}   -- list of {proto, function}

local function ports_of(range)
    local out = {}
    for part in tostring(range):gmatch("[^,%s]+") do
        local lo, hi = part:match("^(%d+)%-(%d+)$")
        lo, hi = tointeger(tonumber(lo or part)), tointeger(tonumber(hi or part))
        if lo == nil or hi == nil then fail("bad port range " .. tostring(range), 3) end
        for p = lo, hi do out[#out + 1] = p end
    end
    return out
end

local Proto_mt = { __name = "Proto" }
local PROTO_SETTABLE = { fields = true, experts = true, dissector = true, init = true,
    prefs_changed = true }
function Proto_mt.__index(p, k)
    if k == "register_heuristic" then
        return function(self, list, fn)
            if checkstring(list, "register_heuristic list") ~= "udp" then
                fail("the stand-in knows only the udp heuristic list", 2)
            end
            if type(fn) ~= "function" then fail("register_heuristic: function expected", 2) end
            heuristics[#heuristics + 1] = { self, fn }
        end
    end
    local raw = rawget(p, "_")
    if k == "prefs" or k == "name" or k == "description" or PROTO_SETTABLE[k] then
        return raw[k]
    end
    fail("Proto has no attribute " .. tostring(k), 2)
end
function Proto_mt.__newindex(p, k, v)
    if not PROTO_SETTABLE[k] then fail("Proto attribute " .. tostring(k) .. " is not settable", 2) end
    local raw = rawget(p, "_")
    if k == "fields" or k == "experts" then
        local want = (k == "fields") and ProtoField_mt or ProtoExpert_mt
        if type(v) ~= "table" then fail("Proto." .. k .. " must be a table", 2) end
        local n = 0
        for i, x in pairs(v) do
            if getmetatable(x) ~= want then
                fail(sformat("Proto.%s[%s] is not a %s", k, tostring(i), want.__name), 2)
            end
            n = n + 1
        end
        if n ~= #v then fail("Proto." .. k .. " must be a list", 2) end
    elseif type(v) ~= "function" then
        fail("Proto." .. k .. " must be a function", 2)
    end
    raw[k] = v
end

local function Proto(name, desc)
    name = checkstring(name, "Proto name")
    if protos[name] then fail("Proto " .. name .. " registered twice", 2) end
    local prefs = {}
    local values = {}
    setmetatable(prefs, {
        __newindex = function(_, k, pref)
            if getmetatable(pref) ~= Pref_mt then fail("a preference must be a Pref", 2) end
            values[k] = pref.default
        end,
        __index = function(_, k)
            local v = values[k]
            if v == nil then fail("no preference " .. name .. "." .. tostring(k), 2) end
            return v
        end,
    })
    local p = setmetatable({ _ = { name = name, description = checkstring(desc, "Proto desc"),
        prefs = prefs } }, Proto_mt)
    protos[name] = p
    proto_order[#proto_order + 1] = p
    return p
end

local udp_table = {
    add = function(self, ports, proto)
        if getmetatable(proto) ~= Proto_mt then fail("DissectorTable:add: Proto expected", 2) end
        local range = type(ports) == "number" and tostring(checkint(ports, "port")) or ports
        for _, port in ipairs(ports_of(checkstring(range, "ports"))) do udp_ports[port] = proto end
    end,
    remove = function(self, ports, proto)
        local range = type(ports) == "number" and tostring(checkint(ports, "port")) or ports
        for _, port in ipairs(ports_of(checkstring(range, "ports"))) do
            if udp_ports[port] == proto then udp_ports[port] = nil end
        end
    end,
}
local DissectorTable = strict("DissectorTable", {
    get = function(name)
        if checkstring(name, "DissectorTable.get") ~= "udp.port" then
            fail("the stand-in knows only the udp.port table", 2)
        end
        return udp_table
    end,
})

---------------------------------------------------------------------------
-- Tvb, TvbRange, TreeItem, Pinfo: what a dissector call sees
---------------------------------------------------------------------------
local TvbRange_mt = { __name = "TvbRange" }
TvbRange_mt.__index = {
    uint = function(r)
        if r.len < 1 or r.len > 4 then fail("TvbRange:uint() takes 1-4 octets", 2) end
        local v = 0
        for i = 1, r.len do v = v * 256 + r._raw:byte(r.offset + i) end
        return v
    end,
    len = function(r) return r.len end,
    raw = function(r) return r._raw:sub(r.offset + 1, r.offset + r.len) end,
}
local Tvb_mt = { __name = "Tvb" }
local function tvb_range(tvb, offset, len)
    local size = #tvb._raw
    offset = optint(offset, "Tvb range offset", 0)
    len = optint(len, "Tvb range length", -1)
    if offset < 0 or offset > size then fail("Range is out of bounds", 2) end
    if len == -1 then len = size - offset end
    if len < -1 then fail("negative length in tvb range", 2) end
    if offset + len > size then fail("Range is out of bounds", 2) end
    return setmetatable({ _raw = tvb._raw, offset = offset, len = len }, TvbRange_mt)
end
Tvb_mt.__call = tvb_range
Tvb_mt.__index = {
    len = function(t) return #t._raw end,
    captured_len = function(t) return #t._raw end,
    reported_len = function(t) return #t._raw end,
    raw = function(t, offset, len)
        local r = tvb_range(t, offset, len)
        return r._raw:sub(r.offset + 1, r.offset + r.len)
    end,
    range = tvb_range,
}

-- what PDML's "show" gives for a field added with a value
local function shown(field, v)
    local t = field.ftype
    if t == "uint64" then
        return is_u64(v) and tostring(v) or u64_tostring(num_to_u64(v, "uint64 value"))
    elseif INT_BYTES[t] then
        local n = checkint(v, t .. " value") & 0xFFFFFFFF
        if field.base == base.HEX then return sformat("0x%0" .. (2 * INT_BYTES[t]) .. "x", n) end
        return sformat("%d", n)
    elseif t == "string" then
        return v
    elseif t == "bool" then
        return v and "1" or "0"
    end
    return nil -- bytes, relative_time: not compared
end

local function check_value(field, v)
    local t = field.ftype
    if t == "uint64" then
        if not is_u64(v) then checkint(v, "uint64 value") end
    elseif INT_BYTES[t] then
        checkint(v, t .. " value")
    elseif t == "string" then
        return checkstring(v, "string value")
    elseif t == "bool" then
        if type(v) ~= "boolean" then fail("bool value must be a boolean", 4) end
    elseif t == "relative_time" then
        if getmetatable(v) ~= NSTime_mt then fail("relative_time value must be an NSTime", 4) end
    elseif t == "bytes" then
        checkstring(v, "bytes value")
    end
    return v
end

local TreeItem_mt = { __name = "TreeItem" }
local TreeItem = {}
TreeItem_mt.__index = function(_, k)
    local m = TreeItem[k]
    if m == nil then fail("TreeItem has no method " .. tostring(k), 2) end
    return m
end
local function new_item(parent, node)
    node.kids = {}
    node.appended = ""
    parent.kids[#parent.kids + 1] = node
    return setmetatable({ node = node }, TreeItem_mt)
end
local function labels(first, ...)
    local parts = {}
    for i = first, select("#", ...) do
        parts[#parts + 1] = checkstring((select(i, ...)), "label")
    end
    return table.concat(parts)
end
function TreeItem.add(item, what, ...)
    local node = { }
    local args = table.pack(...)
    local i = 1
    local range
    if getmetatable(args[1]) == TvbRange_mt then
        range = args[1]
        i = 2
    end
    if getmetatable(what) == Proto_mt then
        node.k = "proto"
        node.name = what.name
        node.show = labels(i, ...)
    elseif getmetatable(what) == ProtoField_mt then
        node.k = "field"
        node.name = what.abbr
        if args.n >= i and args[i] ~= nil then
            local v = check_value(what, args[i])
            node.show = shown(what, v)
            if args.n > i then node.text = labels(i + 1, ...) end
        elseif range == nil and what.ftype ~= "bytes" then
            fail("TreeItem:add: a field without a range needs a value", 2)
        elseif range ~= nil and INT_BYTES[what.ftype] and what.ftype ~= "uint64"
            and (range.len < 1 or range.len > INT_BYTES[what.ftype]) then
            fail(sformat("TreeItem:add: %s over %d octets", what.abbr, range.len), 2)
        end
    elseif getmetatable(what) == TvbRange_mt then
        node.k = "text"
        range = what
        node.show = labels(1, ...)
    else
        fail("TreeItem:add: Proto, ProtoField or TvbRange expected, got " .. type(what), 2)
    end
    node.pos = range and range.offset or 0
    node.size = range and range.len or 0
    return new_item(item.node, node)
end
function TreeItem.add_proto_expert_info(item, ex, msg)
    if getmetatable(ex) ~= ProtoExpert_mt then fail("add_proto_expert_info: ProtoExpert expected", 2) end
    local node = item.node
    node.kids[#node.kids + 1] = { k = "expert", name = ex.abbr,
        msg = msg ~= nil and checkstring(msg, "expert message") or ex.text, kids = {} }
    return item
end
function TreeItem.set_generated(item) item.node.generated = true return item end
function TreeItem.set_hidden(item) item.node.hidden = true return item end
function TreeItem.set_text(item, text)
    item.node.text = checkstring(text, "set_text")
    item.node.appended = ""
    return item
end
function TreeItem.append_text(item, text)
    item.node.appended = item.node.appended .. checkstring(text, "append_text")
    return item
end

local function new_pinfo(number, ts)
    local cols = {}
    local cols_proxy = setmetatable({}, {
        __newindex = function(_, k, v)
            if k ~= "protocol" and k ~= "info" then fail("no column " .. tostring(k), 2) end
            cols[k] = checkstring(v, "column text")
        end,
        __index = function(_, k) fail("the stand-in does not read columns back", 2) end,
    })
    local pinfo = setmetatable({}, {
        __index = function(_, k)
            if k == "number" then return number + 0.0 end
            if k == "abs_ts" then return ts end
            if k == "visited" then return false end
            if k == "cols" then return cols_proxy end
            fail("the stand-in's pinfo has no " .. tostring(k), 2)
        end,
        __newindex = function(_, k) fail("pinfo." .. tostring(k) .. " is read-only here", 2) end,
    })
    return pinfo, cols
end

---------------------------------------------------------------------------
-- JSON output
---------------------------------------------------------------------------
local function json(v)
    local t = type(v)
    if t == "nil" then return "null" end
    if t == "boolean" then return tostring(v) end
    if t == "number" then
        if mtype(v) == "integer" then return sformat("%d", v) end
        return sformat("%.17g", v)
    end
    if t == "string" then
        return '"' .. v:gsub('[%c"\\]', function(c)
            return sformat("\\u%04x", c:byte())
        end) .. '"'
    end
    if v[1] ~= nil or next(v) == nil then
        local out = {}
        for i = 1, #v do out[i] = json(v[i]) end
        return "[" .. table.concat(out, ",") .. "]"
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys)
    local out = {}
    for _, k in ipairs(keys) do out[#out + 1] = json(k) .. ":" .. json(v[k]) end
    return "{" .. table.concat(out, ",") .. "}"
end

-- the tree in document order, as PDML lists it
local function flatten(node, out)
    for _, kid in ipairs(node.kids) do
        local e = { k = kid.k, name = kid.name, pos = kid.pos, size = kid.size }
        if kid.k == "expert" then
            e.msg = kid.msg
        else
            e.show = kid.show
            if kid.k ~= "field" then
                e.show = (kid.show or "") .. kid.appended
            elseif kid.text then
                e.text = kid.text .. kid.appended
            end
        end
        out[#out + 1] = e
        flatten(kid, out)
    end
    return out
end

---------------------------------------------------------------------------
-- The environment the dissectors run in: standard Lua plus the stand-in
---------------------------------------------------------------------------
local env_names = {
    Proto = Proto, ProtoField = ProtoField, ProtoExpert = ProtoExpert, expert = expert,
    base = base, frametype = frametype, Pref = Pref, DissectorTable = DissectorTable,
    UInt64 = UInt64, NSTime = NSTime, bit = bit_lib,
}
for k, v in pairs(env_names) do rawset(_G, k, v) end
setmetatable(_G, {
    __index = function(_, k) error("undefined global '" .. tostring(k) .. "'", 2) end,
    __newindex = function(_, k) error("assignment to undefined global '" .. tostring(k) .. "'", 2) end,
})

local function load_script(path)
    local chunk, err = loadfile(path, "t", _G)
    if not chunk then error(err, 0) end
    chunk()
end

local function main(argv)
    if argv[1] == "--exec" then
        load_script(argv[2])
        return
    end
    local packets = argv[1]
    local loaded = {}
    for i = 2, #argv do
        load_script(argv[i])
        loaded[#loaded + 1] = argv[i]
    end
    local summary = { loaded = loaded, protos = {} }
    for _, p in ipairs(proto_order) do
        local raw = rawget(p, "_")
        local ports = {}
        for port, q in pairs(udp_ports) do if q == p then ports[#ports + 1] = port end end
        table.sort(ports)
        local heur = false
        for _, h in ipairs(heuristics) do if h[1] == p then heur = true end end
        summary.protos[raw.name] = {
            fields = raw.fields and #raw.fields or 0,
            experts = raw.experts and #raw.experts or 0,
            dissector = raw.dissector ~= nil, init = raw.init ~= nil,
            prefs_changed = raw.prefs_changed ~= nil, udp_ports = ports, heuristic = heur,
        }
        -- as Wireshark does before reading a capture
        if raw.prefs_changed then raw.prefs_changed() end
        if raw.init then raw.init() end
    end
    print(json(summary))
    if packets == "-" then return end
    for line in io.lines(packets) do
        local number, port, hex = line:match("^(%d+) (%d+) (%x*)$")
        if number then
            local proto = udp_ports[tointeger(tonumber(port))]
            if proto == nil then error("no dissector on UDP port " .. port) end
            local raw = hex:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end)
            local tvb = setmetatable({ _raw = raw }, Tvb_mt)
            local pinfo, cols = new_pinfo(tointeger(tonumber(number)),
                1700000000.0 + tonumber(number) / 1000)
            local root = { kids = {} }
            local tree = setmetatable({ node = root }, TreeItem_mt)
            local ok, ret = pcall(rawget(proto, "_").dissector, tvb, pinfo, tree)
            local out = { frame = tointeger(tonumber(number)), proto = proto.name,
                info = cols.info, protocol = cols.protocol, items = flatten(root, {}) }
            if ok then
                out.returned = ret
            else
                out.error = tostring(ret)
            end
            print(json(out))
        end
    end
end

main(arg)
