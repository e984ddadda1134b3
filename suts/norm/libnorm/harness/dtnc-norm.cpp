// dtnc-norm: NRL libnorm 1.5.9 (Debian libnorm-dev) in one role of one run.
//
//   dtnc-norm send --addr A --port P --node-id N --object-len L [knobs]
//   dtnc-norm recv --addr A --port P --node-id N --object-len L [knobs]
//
// The sender enqueues one NORM_OBJECT_DATA object of L bytes, byte i being
// (i * m + c) mod n (--payload m,c,n: the pattern of specs/norm/wire.json);
// the receiver checks what it is given against the same pattern. Every
// knob of the protocol is explicit (README.md); none is left to libnorm's
// defaults. Each role prints one JSON line and exits 0; a bad argument
// exits 2, an unsupported setting 127.
//
// The JSON line: outcome ("completed": the receiver got the whole object,
// or the sender's watermark was acknowledged by every acking node; "open":
// no such notice came before the time limit; "incomplete": the receiver's
// object was aborted, or the watermark failed), detail, duration_s,
// payload_ok, object_bytes (bytes of the object delivered), and counts of
// the libnorm events seen (events).
#include <normApi.h>

#include <poll.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

struct Options {
    std::string role;
    std::string addr = "";
    int port = -1;
    long node_id = -1;
    long instance_id = 1;
    std::string iface;
    bool mcast_loopback = false;
    long object_len = -1;
    unsigned payload_mul = 0, payload_inc = 0, payload_mod = 0;
    // sender
    double tx_rate_bps = -1;
    bool cc = false;
    int segment_size = -1;
    int block_size = -1;
    int parity = -1;
    int auto_parity = 0;
    int fec_id = 0;  // 0: libnorm chooses (5 for blocks of up to 255 symbols)
    double grtt_initial = -1;
    double grtt_max = -1;
    std::string grtt_probing = "";
    double backoff = -1;
    long group_size = -1;
    int robust = -1;
    std::vector<long> acking_nodes;  // non-empty: the object is a watermark
    // receiver
    bool unicast_nack = false;
    // both
    long time_limit_ms = -1;
    long linger_ms = 0;
    unsigned long buffer = 4 * 1024 * 1024;
};

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr, "dtnc-norm: %s\n", why);
    std::exit(2);
}

double now_s() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

bool parse_bool(const std::string& v) {
    if (v == "on" || v == "true" || v == "1") return true;
    if (v == "off" || v == "false" || v == "0") return false;
    usage(("not on/off: " + v).c_str());
}

long parse_long(const std::string& v) {
    char* end = nullptr;
    long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0') usage(("not an integer: " + v).c_str());
    return n;
}

double parse_double(const std::string& v) {
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0') usage(("not a number: " + v).c_str());
    return d;
}

// an integer option within [lo, hi]: the field it goes into holds no more
long ranged(const std::string& k, const std::string& v, long lo, long hi) {
    long n = parse_long(v);
    if (n < lo || n > hi)
        usage((k + " " + v + " is outside " + std::to_string(lo) + ".." + std::to_string(hi)).c_str());
    return n;
}

// the options only one role takes
bool sender_only(const std::string& k) {
    return k == "--instance-id" || k == "--tx-rate-bps" || k == "--cc" || k == "--segment-size" ||
           k == "--block-size" || k == "--parity" || k == "--auto-parity" || k == "--fec-id" ||
           k == "--grtt-probing" || k == "--acking-nodes";
}
bool receiver_only(const std::string& k) { return k == "--unicast-nack"; }

Options parse(int argc, char** argv) {
    if (argc < 2) usage("send|recv first");
    Options o;
    o.role = argv[1];
    if (o.role != "send" && o.role != "recv") usage("send|recv first");
    for (int i = 2; i < argc; i++) {
        std::string k = argv[i];
        if ((o.role == "recv" && sender_only(k)) || (o.role == "send" && receiver_only(k)))
            usage((k + " is not an option of " + o.role).c_str());
        if (k == "--mcast-loopback") { o.mcast_loopback = true; continue; }
        if (i + 1 >= argc) usage(("no value for " + k).c_str());
        std::string v = argv[++i];
        if (k == "--addr") o.addr = v;
        else if (k == "--port") o.port = static_cast<int>(ranged(k, v, 1, 65535));
        else if (k == "--node-id") o.node_id = ranged(k, v, 1, 0xFFFFFFFEL);
        else if (k == "--instance-id") o.instance_id = ranged(k, v, 0, 65535);
        else if (k == "--iface") o.iface = v;
        else if (k == "--object-len") o.object_len = ranged(k, v, 1, 0x7FFFFFFFL);
        else if (k == "--payload") {
            unsigned m = 0, c = 0, n = 0;
            if (std::sscanf(v.c_str(), "%u,%u,%u", &m, &c, &n) != 3 || n == 0 || n > 256)
                usage("--payload m,c,n with 1 <= n <= 256");
            o.payload_mul = m; o.payload_inc = c; o.payload_mod = n;
        }
        else if (k == "--tx-rate-bps") o.tx_rate_bps = parse_double(v);
        else if (k == "--cc") o.cc = parse_bool(v);
        else if (k == "--segment-size") o.segment_size = static_cast<int>(ranged(k, v, 1, 65535));
        else if (k == "--block-size") o.block_size = static_cast<int>(ranged(k, v, 1, 65535));
        else if (k == "--parity") o.parity = static_cast<int>(ranged(k, v, 0, 65535));
        else if (k == "--auto-parity") o.auto_parity = static_cast<int>(ranged(k, v, 0, 255));
        else if (k == "--fec-id") o.fec_id = static_cast<int>(ranged(k, v, 0, 255));
        else if (k == "--grtt-initial-s") o.grtt_initial = parse_double(v);
        else if (k == "--grtt-max-s") o.grtt_max = parse_double(v);
        else if (k == "--grtt-probing") o.grtt_probing = v;
        else if (k == "--backoff-factor") o.backoff = parse_double(v);
        else if (k == "--group-size") o.group_size = ranged(k, v, 1, 0x7FFFFFFFL);
        else if (k == "--robust-factor") o.robust = static_cast<int>(ranged(k, v, 1, 0x7FFFFFFFL));
        else if (k == "--acking-nodes") {
            size_t start = 0;
            while (start <= v.size() && !v.empty()) {
                size_t comma = v.find(',', start);
                std::string one = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
                o.acking_nodes.push_back(ranged(k, one, 1, 0xFFFFFFFEL));
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
        }
        else if (k == "--unicast-nack") o.unicast_nack = parse_bool(v);
        else if (k == "--time-limit-ms") o.time_limit_ms = ranged(k, v, 1, 86400000L);
        else if (k == "--linger-ms") o.linger_ms = ranged(k, v, 0, 86400000L);
        else if (k == "--buffer") o.buffer = static_cast<unsigned long>(ranged(k, v, 1, 0xFFFFFFFFL));
        else usage(("unknown option " + k).c_str());
    }
    // every knob explicit: nothing falls back to libnorm's defaults
    if (o.addr.empty() || o.port <= 0 || o.port > 65535) usage("--addr and --port are required");
    if (o.node_id <= 0 || o.object_len <= 0 || o.payload_mod == 0)
        usage("--node-id, --object-len and --payload are required");
    if (o.grtt_initial <= 0 || o.grtt_max <= 0 || o.backoff < 0 || o.group_size <= 0 ||
        o.robust <= 0 || o.time_limit_ms <= 0)
        usage("--grtt-initial-s, --grtt-max-s, --backoff-factor, --group-size, --robust-factor "
              "and --time-limit-ms are required");
    if (o.role == "send" &&
        (o.tx_rate_bps <= 0 || o.segment_size <= 0 || o.block_size <= 0 || o.parity < 0 ||
         o.grtt_probing.empty()))
        usage("the sender needs --tx-rate-bps, --segment-size, --block-size, --parity and "
              "--grtt-probing");
    if (o.fec_id != 0 && o.fec_id != 2 && o.fec_id != 5 && o.fec_id != 129) {
        std::printf("{\"outcome\": \"error\", \"detail\": \"not supported: FEC id %d (libnorm has "
                    "2, 5 and 129)\", \"duration_s\": 0, \"payload_ok\": false, \"object_bytes\": 0, "
                    "\"events\": {}}\n", o.fec_id);
        std::exit(127);
    }
    if (o.role == "send" && o.block_size + o.parity > 255 && o.fec_id != 2) {
        std::printf("{\"outcome\": \"error\", \"detail\": \"not supported: %d + %d symbols per "
                    "block need FEC id 2\", \"duration_s\": 0, \"payload_ok\": false, "
                    "\"object_bytes\": 0, \"events\": {}}\n", o.block_size, o.parity);
        std::exit(127);
    }
    return o;
}

unsigned char pattern(const Options& o, unsigned long i) {
    return static_cast<unsigned char>((i * o.payload_mul + o.payload_inc) % o.payload_mod);
}

const char* event_name(NormEventType t) {
    switch (t) {
        case NORM_TX_QUEUE_VACANCY: return "tx_queue_vacancy";
        case NORM_TX_QUEUE_EMPTY: return "tx_queue_empty";
        case NORM_TX_FLUSH_COMPLETED: return "tx_flush_completed";
        case NORM_TX_WATERMARK_COMPLETED: return "tx_watermark_completed";
        case NORM_TX_CMD_SENT: return "tx_cmd_sent";
        case NORM_TX_OBJECT_SENT: return "tx_object_sent";
        case NORM_TX_OBJECT_PURGED: return "tx_object_purged";
        case NORM_TX_RATE_CHANGED: return "tx_rate_changed";
        case NORM_LOCAL_SENDER_CLOSED: return "local_sender_closed";
        case NORM_REMOTE_SENDER_NEW: return "remote_sender_new";
        case NORM_REMOTE_SENDER_RESET: return "remote_sender_reset";
        case NORM_REMOTE_SENDER_ADDRESS: return "remote_sender_address";
        case NORM_REMOTE_SENDER_ACTIVE: return "remote_sender_active";
        case NORM_REMOTE_SENDER_INACTIVE: return "remote_sender_inactive";
        case NORM_REMOTE_SENDER_PURGED: return "remote_sender_purged";
        case NORM_RX_CMD_NEW: return "rx_cmd_new";
        case NORM_RX_OBJECT_NEW: return "rx_object_new";
        case NORM_RX_OBJECT_INFO: return "rx_object_info";
        case NORM_RX_OBJECT_UPDATED: return "rx_object_updated";
        case NORM_RX_OBJECT_COMPLETED: return "rx_object_completed";
        case NORM_RX_OBJECT_ABORTED: return "rx_object_aborted";
        case NORM_RX_ACK_REQUEST: return "rx_ack_request";
        case NORM_GRTT_UPDATED: return "grtt_updated";
        case NORM_CC_ACTIVE: return "cc_active";
        case NORM_CC_INACTIVE: return "cc_inactive";
        case NORM_ACKING_NODE_NEW: return "acking_node_new";
        case NORM_SEND_ERROR: return "send_error";
        case NORM_USER_TIMEOUT: return "user_timeout";
        default: return "other";
    }
}

std::string json_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') { out += '\\'; out += c; }
        else if (static_cast<unsigned char>(c) < 0x20) out += ' ';
        else out += c;
    }
    return out;
}

// The result line of a role that could not run: our harness or libnorm
// refused (outcome "error"), every field present.
int refused(const std::string& detail) {
    std::printf("{\"outcome\": \"error\", \"detail\": \"%s\", \"duration_s\": 0, "
                "\"payload_ok\": false, \"object_bytes\": 0, \"events\": {}}\n",
                json_escape(detail).c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options o = parse(argc, argv);
    double start = now_s();
    // DTNC_NORM_DEBUG=n: libnorm's own log on stderr, for diagnosis
    const char* debug = std::getenv("DTNC_NORM_DEBUG");
    NormSetDebugLevel(debug != nullptr ? static_cast<unsigned>(std::atoi(debug)) : 0);
    NormInstanceHandle inst = NormCreateInstance(false);
    if (inst == NORM_INSTANCE_INVALID) return refused("libnorm refused: NormCreateInstance");
    NormSessionHandle sess = NormCreateSession(inst, o.addr.c_str(), static_cast<UINT16>(o.port),
                                               static_cast<NormNodeId>(o.node_id));
    if (sess == NORM_SESSION_INVALID) return refused("libnorm refused: NormCreateSession");
    if (!o.iface.empty() && !NormSetMulticastInterface(sess, o.iface.c_str()))
        return refused("libnorm refused: NormSetMulticastInterface " + o.iface);
    NormSetMulticastLoopback(sess, o.mcast_loopback);
    NormSetGrttEstimate(sess, o.grtt_initial);
    NormSetGrttMax(sess, o.grtt_max);
    NormSetBackoffFactor(sess, o.backoff);
    NormSetGroupSize(sess, static_cast<unsigned int>(o.group_size));
    NormSetTxRobustFactor(sess, o.robust);
    NormSetDefaultRxRobustFactor(sess, o.robust);

    std::vector<char> data;
    NormObjectHandle sent = NORM_OBJECT_INVALID;
    bool payload_ok = false;
    if (o.role == "send") {
        NormSetTxRate(sess, o.tx_rate_bps);
        NormSetCongestionControl(sess, o.cc);
        NormSetAutoParity(sess, static_cast<unsigned char>(o.auto_parity));
        NormProbingMode mode = o.grtt_probing == "none" ? NORM_PROBE_NONE
                               : o.grtt_probing == "passive" ? NORM_PROBE_PASSIVE
                               : o.grtt_probing == "active" ? NORM_PROBE_ACTIVE
                               : (usage("--grtt-probing none|passive|active"), NORM_PROBE_NONE);
        NormSetGrttProbingMode(sess, mode);
        bool started = NormStartSender(sess, static_cast<NormSessionId>(o.instance_id),
                                       static_cast<UINT32>(o.buffer),
                                       static_cast<UINT16>(o.segment_size),
                                       static_cast<UINT16>(o.block_size),
                                       static_cast<UINT16>(o.parity), static_cast<UINT8>(o.fec_id));
        const char* failed = started ? nullptr : "NormStartSender";
        if (!failed) {
            data.resize(static_cast<size_t>(o.object_len));
            for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<char>(pattern(o, i));
            sent = NormDataEnqueue(sess, data.data(), static_cast<UINT32>(data.size()));
            if (sent == NORM_OBJECT_INVALID) failed = "NormDataEnqueue";
        }
        for (long n : o.acking_nodes)
            if (!failed && !NormAddAckingNode(sess, static_cast<NormNodeId>(n))) failed = "NormAddAckingNode";
        if (!failed && !o.acking_nodes.empty() && !NormSetWatermark(sess, sent)) failed = "NormSetWatermark";
        if (failed) return refused(std::string("libnorm refused: ") + failed);
        payload_ok = true;  // the sender's: it enqueued the object in the pattern
    } else {
        NormSetDefaultUnicastNack(sess, o.unicast_nack);
        if (!NormStartReceiver(sess, static_cast<UINT32>(o.buffer)))
            return refused("libnorm refused: NormStartReceiver");
    }

    std::map<std::string, int> events;
    std::string outcome = "open", detail;
    long delivered = 0;
    double deadline = start + static_cast<double>(o.time_limit_ms) / 1000.0;
    double end_at = -1;  // set once the outcome is known: linger until then
    pollfd pfd{NormGetDescriptor(inst), POLLIN, 0};
    while (true) {
        double t = now_s();
        if (end_at >= 0 && t >= end_at) break;
        if (end_at < 0 && t >= deadline) {
            detail = "no end notice before the time limit";
            break;
        }
        double until = end_at >= 0 ? end_at : deadline;
        int wait_ms = static_cast<int>((until - t) * 1000.0) + 1;
        if (poll(&pfd, 1, wait_ms) <= 0) continue;
        NormEvent ev;
        while (NormGetNextEvent(inst, &ev, false)) {  // every event that is ready
            events[event_name(ev.type)]++;
            if (end_at >= 0) continue;  // lingering: keep answering, decide nothing more
            switch (ev.type) {
                case NORM_RX_OBJECT_COMPLETED: {
                    if (NormObjectGetType(ev.object) != NORM_OBJECT_DATA) break;
                    long size = static_cast<long>(NormObjectGetSize(ev.object));
                    const char* got = NormDataAccessData(ev.object);
                    payload_ok = size == o.object_len && got != nullptr;
                    for (long i = 0; payload_ok && i < size; i++)
                        payload_ok = static_cast<unsigned char>(got[i]) == pattern(o, static_cast<unsigned long>(i));
                    delivered = size;
                    outcome = "completed";
                    detail = "NORM_RX_OBJECT_COMPLETED";
                    end_at = now_s() + static_cast<double>(o.linger_ms) / 1000.0;
                    break;
                }
                case NORM_RX_OBJECT_ABORTED:
                    outcome = "incomplete";
                    detail = "NORM_RX_OBJECT_ABORTED";
                    end_at = now_s() + static_cast<double>(o.linger_ms) / 1000.0;
                    break;
                case NORM_TX_WATERMARK_COMPLETED: {
                    bool all = NormGetAckingStatus(sess, NORM_NODE_ANY) == NORM_ACK_SUCCESS;
                    outcome = all ? "completed" : "incomplete";
                    detail = all ? "NORM_TX_WATERMARK_COMPLETED: every acking node acknowledged"
                                 : "NORM_TX_WATERMARK_COMPLETED: some acking node did not acknowledge";
                    end_at = now_s() + static_cast<double>(o.linger_ms) / 1000.0;
                    break;
                }
                case NORM_TX_FLUSH_COMPLETED:
                    // the flush process is over; no receiver said anything:
                    // the sender's end is not a delivery notice
                    if (o.acking_nodes.empty()) {
                        detail = "NORM_TX_FLUSH_COMPLETED (no acknowledgment asked)";
                        end_at = now_s() + static_cast<double>(o.linger_ms) / 1000.0;
                    }
                    break;
                default:
                    break;
            }
        }
    }
    double duration = now_s() - start;
    NormDestroySession(sess);
    NormDestroyInstance(inst);

    std::string ev_json;
    for (const auto& [name, count] : events) {
        if (!ev_json.empty()) ev_json += ", ";
        ev_json += "\"" + name + "\": " + std::to_string(count);
    }
    std::printf("{\"outcome\": \"%s\", \"detail\": \"%s\", \"duration_s\": %.3f, "
                "\"payload_ok\": %s, \"object_bytes\": %ld, \"events\": {%s}}\n",
                outcome.c_str(), json_escape(detail).c_str(), duration,
                payload_ok ? "true" : "false", delivered, ev_json.c_str());
    return 0;
}
