// dtnc-hdtn-ltp: one role of one LTP transfer on HDTN's LTP library
// (common/ltp, LtpUdpEngineManager), for dtnconform's endpoint contract
// (docs/implementers.md).
//
// It drives HDTN's engine and reports what the engine's notices said; it
// never decides an outcome on its own.  Every setting comes from the
// environment (endpoint.toml lists them):
//
//   DTNC_ROLE sender|receiver      DTNC_LISTEN ip:port   DTNC_PEER ip:port
//   DTNC_ENGINE DTNC_PEER_ENGINE   DTNC_BLOCK_LEN DTNC_RED_LEN
//   DTNC_SEGMENT_SIZE              DTNC_CLIENT_SERVICE_ID
//   DTNC_RETRANSMISSION_MS         DTNC_RETRANSMISSION_LIMIT
//   DTNC_MAX_CLAIMS_PER_RS         DTNC_LINGER_MS DTNC_TIME_LIMIT_MS
//   DTNC_WORKDIR DTNC_FEATURES     (DTNC_CLOSE_WAIT_MS is not used: the
//   receiver lingers by rule instead, below)
//
// The result is one JSON line written to DTNC_WORKDIR/result.json (HDTN's
// logger writes to stdout, so stdout is not ours); `ready` is created there
// once the engine and its notices are in place.
//
// How the model's knobs map onto HDTN's LtpEngineConfig (LtpEngineConfig.h):
// - segment size: mtuClientServiceData, the client data of one data segment
//   (HDTN's segments do not count their header in it).
// - retransmission timer: HDTN arms every timer with 2 * (one-way light time
//   + one-way margin) (LtpEngine.cpp:41); we set the light time to half of
//   DTNC_RETRANSMISSION_MS and the margin to 0.
// - retransmission limit: maxRetriesPerSerialNumber, one limit for
//   checkpoints, reports and cancel segments.
// - client service: clientServiceId, the one client service the engine
//   has; a session naming another is refused with a CR UNREACH
//   (LtpEngine.cpp), of which the engine tells this client too: that notice
//   is kept among the notices, not taken as this client's outcome.
// - claims per RS: HDTN sizes a report in bytes, (mtuReportSegment - 50) /
//   20 claims; mtuReportSegment is set to give DTNC_MAX_CLAIMS_PER_RS.
//
// The block: byte i = (i * 31 + 7) % 251 (specs/ltp/wire.json "payload").
//
// Notices and outcomes (the outcome is the last end notice of the first
// session, RFC 5326 §7):
//   sender:   TransmissionSessionCompleted -> completed,
//             TransmissionSessionCancelled -> cancelled;
//             InitialTransmissionCompleted ends nothing.
//   receiver: RedPartReception (the whole red part) with its end-of-block
//             flag, or a green segment flagged end of block after it ->
//             completed; an all-green block (DTNC_RED_LEN 0) whose green
//             end of block arrived -> closed (HDTN tells nothing more);
//             ReceptionSessionCancelled -> cancelled; otherwise open.
//   HDTN tells a receiving client nothing when a session closes, so the
//   receiver lingers by rule (docs/implementers.md): (L + 1) timer periods
//   past its last end notice, or DTNC_LINGER_MS if longer.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "LtpUdpEngine.h"
#include "LtpUdpEngineManager.h"

namespace {

constexpr int kNotSupported = 127;
const char* const kReasons[] = {"USR_CNCLD", "UNREACH", "RLEXC", "MISCOLORED", "SYS_CNCLD",
                                "RXMTCYCEXC"};

int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

void Log(const std::string& s) {
    std::fprintf(stderr, "[%" PRId64 " dtnc-hdtn-ltp] %s\n", NowMs(), s.c_str());
}

std::string Env(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

bool Uint(const char* name, uint64_t& out) {
    std::string v = Env(name);
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) {
        Log(std::string("missing or bad ") + name + "=" + v);
        return false;
    }
    out = std::strtoull(v.c_str(), nullptr, 10);
    return true;
}

bool HostPort(const std::string& s, std::string& host, uint16_t& port) {
    auto c = s.rfind(':');
    if (c == std::string::npos || c + 1 >= s.size()) return false;
    host = s.substr(0, c);
    port = static_cast<uint16_t>(std::strtoul(s.c_str() + c + 1, nullptr, 10));
    return port != 0;
}

std::string Json(const std::string& s) {
    std::string o = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            o += '\\';
            o += static_cast<char>(c);
        } else if (c < 0x20) {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", c);
            o += b;
        } else {
            o += static_cast<char>(c);
        }
    }
    return o + "\"";
}

uint8_t PayloadByte(uint64_t i) { return static_cast<uint8_t>((i * 31 + 7) % 251); }

std::string ReasonName(CANCEL_SEGMENT_REASON_CODES r) {
    auto i = static_cast<unsigned>(r);
    std::string n = i < sizeof kReasons / sizeof kReasons[0] ? kReasons[i] : "unknown";
    return std::to_string(i) + " " + n;
}

// What the notices said, guarded by mu.
struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool is_sender = false;
    bool have_session = false;
    Ltp::session_id_t sid;
    std::string outcome = "open";
    std::string detail = "no end notice before the time limit";
    std::vector<std::string> notices;
    uint64_t red_bytes = 0;
    // green bytes received, as start -> end: a segment that arrives twice
    // (a duplicate) is notified twice (RFC 5326 6.10) but delivers its
    // bytes once (green_bytes_delivered counts distinct bytes, as every
    // harness does: docs/implementers.md)
    std::map<uint64_t, uint64_t> green;
    bool payload_checked = false, payload_bad = false;
    bool red_done = false, eob_seen = false;
    int64_t end_at = -1;  // first end notice, ms
    int64_t last_at = -1;  // last end notice, ms: the linger counts from it

    // under mu: is this notice of our session (the first one seen)?
    bool Ours(const Ltp::session_id_t& s, const char* what) {
        if (!have_session) {
            sid = s;
            have_session = true;
        }
        if (s == sid) return true;
        std::ostringstream o;
        o << "other-session(" << s.sessionOriginatorEngineId << "," << s.sessionNumber << ","
          << what << ")";
        notices.push_back(o.str());
        return false;
    }
    void End(const std::string& out, const std::string& why) {
        outcome = out;
        detail = why;
        if (end_at < 0) end_at = NowMs();
        last_at = NowMs();
        cv.notify_all();
    }
    void AddGreen(uint64_t off, uint64_t len) {
        uint64_t& end = green[off];
        end = std::max(end, off + len);
    }
    uint64_t GreenBytes() const {
        uint64_t total = 0, upto = 0;
        for (const auto& kv : green) {
            const uint64_t from = std::max(kv.first, upto);
            if (kv.second > from) total += kv.second - from;
            upto = std::max(upto, kv.second);
        }
        return total;
    }
    void Check(const uint8_t* p, uint64_t off, uint64_t len) {
        payload_checked = true;
        for (uint64_t i = 0; i < len; ++i) {
            if (p[i] != PayloadByte(off + i)) {
                payload_bad = true;
                return;
            }
        }
    }
};

State st;
std::atomic<int> stop_signal{0};

void OnSignal(int s) { stop_signal = s; }

std::string ResultLine(int64_t t0) {
    std::lock_guard<std::mutex> g(st.mu);
    std::ostringstream o;
    o << "{\"role\":\"" << (st.is_sender ? "sender" : "receiver") << "\",\"outcome\":\""
      << st.outcome << "\",";
    if (!st.is_sender) {
        o << "\"red_bytes_delivered\":" << st.red_bytes
          << ",\"green_bytes_delivered\":" << st.GreenBytes() << ",\"green_offsets\":[";
        // where each green notice's data starts (distinct offsets, sorted)
        bool first = true;
        for (const auto& g : st.green) {
            o << (first ? "" : ",") << g.first;
            first = false;
        }
        o << "],\"payload_ok\":"
          << (st.payload_checked ? (st.payload_bad ? "false" : "true") : "null") << ",";
    }
    o << "\"detail\":" << Json(st.detail) << ",\"notices\":[";
    for (size_t i = 0; i < st.notices.size(); ++i) o << (i ? "," : "") << Json(st.notices[i]);
    char d[32];
    std::snprintf(d, sizeof d, "%.3f", (NowMs() - t0) / 1000.0);
    o << "],\"engine\":\"HDTN\",\"duration_s\":" << d << "}";
    return o.str();
}

void WriteResult(const std::string& dir, const std::string& line) {
    std::string tmp = dir + "/result.json.tmp";
    {
        std::ofstream f(tmp, std::ios::trunc);
        f << line << "\n";
    }
    std::rename(tmp.c_str(), (dir + "/result.json").c_str());
}

}  // namespace

int main(int argc, char** argv) {
    int64_t t0 = NowMs();
    // --session-number-bits 64|32 (endpoint.toml's option): HDTN's session
    // and serial numbers are 64-bit random values unless told 32
    bool bits32 = false;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i], v = argv[i + 1];
        if (a == "--session-number-bits" && (v == "32" || v == "64")) {
            bits32 = v == "32";
        } else {
            std::fprintf(stderr, "usage: %s [--session-number-bits 64|32]\n", argv[0]);
            return 2;
        }
    }
    std::signal(SIGTERM, OnSignal);
    std::signal(SIGINT, OnSignal);

    // features first: a feature we do not know, or cannot set up, is 127
    {
        std::stringstream fs(Env("DTNC_FEATURES"));
        std::string f;
        while (std::getline(fs, f, ',')) {
            f.erase(0, f.find_first_not_of(' '));
            f.erase(f.find_last_not_of(' ') + 1);
            // idle-cancel: HDTN's receiver cancels a stalled session of its
            // own accord (LtpEngine.cpp's housekeeping), nothing to set up
            if (f.empty() || f == "red" || f == "green" || f == "foreign-service" ||
                f == "idle-cancel")
                continue;
            Log("not supported: feature '" + f +
                "' (HDTN here: red, green, foreign-service, idle-cancel)");
            return kNotSupported;
        }
    }
    std::string role = Env("DTNC_ROLE"), workdir = Env("DTNC_WORKDIR");
    uint64_t engine, peer_engine, block_len, red_len, seg, svc, rtx_ms, limit, linger_ms,
        time_limit_ms;
    std::string lhost, phost;
    uint16_t lport = 0, pport = 0;
    bool ok = (role == "sender" || role == "receiver") && !workdir.empty();
    ok = Uint("DTNC_ENGINE", engine) && ok;
    ok = Uint("DTNC_PEER_ENGINE", peer_engine) && ok;
    ok = Uint("DTNC_BLOCK_LEN", block_len) && ok;
    ok = Uint("DTNC_RED_LEN", red_len) && ok;
    ok = Uint("DTNC_SEGMENT_SIZE", seg) && ok;
    ok = Uint("DTNC_CLIENT_SERVICE_ID", svc) && ok;
    ok = Uint("DTNC_RETRANSMISSION_MS", rtx_ms) && ok;
    ok = Uint("DTNC_RETRANSMISSION_LIMIT", limit) && ok;
    ok = Uint("DTNC_LINGER_MS", linger_ms) && ok;
    ok = Uint("DTNC_TIME_LIMIT_MS", time_limit_ms) && ok;
    uint64_t max_claims = 0;
    ok = Uint("DTNC_MAX_CLAIMS_PER_RS", max_claims) && ok;
    ok = HostPort(Env("DTNC_LISTEN"), lhost, lport) && HostPort(Env("DTNC_PEER"), phost, pport) &&
         ok;
    st.is_sender = role == "sender";
    if (!ok || red_len > block_len || seg == 0 || max_claims == 0) {
        st.outcome = "error";
        st.detail = "bad or missing DTNC_* settings (see stderr)";
        std::printf("%s\n", ResultLine(t0).c_str());
        if (!workdir.empty()) WriteResult(workdir, ResultLine(t0));
        return 2;
    }
    if (lhost.find(':') != std::string::npos || phost.find(':') != std::string::npos) {
        Log("not supported: IPv6 addresses (HDTN's LtpUdpEngineManager binds IPv4)");
        return kNotSupported;
    }

    LtpEngineConfig cfg;
    cfg.thisEngineId = engine;
    cfg.remoteEngineId = peer_engine;
    cfg.clientServiceId = svc;
    cfg.isInduct = !st.is_sender;
    cfg.mtuClientServiceData = seg;
    cfg.oneWayLightTime = boost::posix_time::microseconds(static_cast<int64_t>(rtx_ms) * 500);
    cfg.oneWayMarginTime = boost::posix_time::microseconds(0);
    cfg.remoteHostname = phost;
    cfg.remotePort = pport;
    cfg.myBoundUdpPort = lport;
    cfg.estimatedBytesToReceivePerSession = block_len;
    cfg.maxRedRxBytesPerSession = block_len > 1000000 ? block_len : 1000000;
    cfg.maxRetriesPerSerialNumber = static_cast<uint32_t>(limit);
    // HDTN sizes a report by bytes: (mtuReportSegment - 50) / 20 claims
    // (LtpEngine.cpp SetMtuReportSegment), so this many bytes give exactly
    // the scenario's claims per RS
    cfg.mtuReportSegment = 50 + 20 * max_claims;
    cfg.maxUdpPacketsToSendPerSystemCall = 1;
    cfg.force32BitRandomNumbers = bits32;
    // HDTN's defaults, kept as they are: report delay 20 ms (receiver), data
    // resend delay 20 ms (sender); 64-bit session numbers unless asked 32
    if (st.is_sender) cfg.delaySendingOfReportSegmentsTimeMsOrZeroToDisable = 0;
    else cfg.delaySendingOfDataSegmentsTimeMsOrZeroToDisable = 0;

    std::ostringstream hello;
    hello << role << ": engine " << engine << " -> " << peer_engine << ", port " << lport
          << ", peer " << phost << ":" << pport << ", segment " << seg << ", timer " << rtx_ms
          << " ms, limit " << limit << ", block " << block_len << " (red " << red_len << ")";
    Log(hello.str());

    // the largest datagram HDTN's receive buffers take (ltp-file-transfer's default)
    LtpUdpEngineManager::SetMaxUdpRxPacketSizeBytesForAllLtp(UINT16_MAX);
    std::shared_ptr<LtpUdpEngineManager> mgr = LtpUdpEngineManager::GetOrCreateInstance(lport, true);
    if (!mgr || !mgr->AddLtpUdpEngine(cfg)) {
        std::lock_guard<std::mutex> g(st.mu);
        st.outcome = "error";
        st.detail = "HDTN could not bind UDP port " + std::to_string(lport) + " or add the engine";
    }
    LtpUdpEngine* eng = mgr ? mgr->GetLtpUdpEnginePtrByRemoteEngineId(peer_engine, cfg.isInduct)
                            : nullptr;
    if (eng == nullptr) {
        {
            std::lock_guard<std::mutex> g(st.mu);
            if (st.outcome != "error") {
                st.outcome = "error";
                st.detail = "HDTN added the engine but does not find it";
            }
        }
        WriteResult(workdir, ResultLine(t0));
        std::fflush(nullptr);
        _exit(0);
    }
    if (st.is_sender) {
        eng->SetTransmissionSessionCompletedCallback(
            [](const Ltp::session_id_t& s, std::shared_ptr<LtpTransmissionRequestUserData>&) {
                std::lock_guard<std::mutex> g(st.mu);
                if (!st.Ours(s, "completed")) return;
                st.notices.push_back("TransmissionSessionCompleted");
                st.End("completed", "TransmissionSessionCompleted");
            });
        eng->SetInitialTransmissionCompletedCallback(
            [](const Ltp::session_id_t& s, std::shared_ptr<LtpTransmissionRequestUserData>&) {
                std::lock_guard<std::mutex> g(st.mu);
                if (st.Ours(s, "initial-transmission-completed"))
                    st.notices.push_back("InitialTransmissionCompleted");
            });
        eng->SetTransmissionSessionCancelledCallback(
            [](const Ltp::session_id_t& s, CANCEL_SEGMENT_REASON_CODES r,
               std::shared_ptr<LtpTransmissionRequestUserData>&) {
                std::lock_guard<std::mutex> g(st.mu);
                if (!st.Ours(s, "cancelled")) return;
                st.notices.push_back("TransmissionSessionCancelled(reason=" + ReasonName(r) + ")");
                st.End("cancelled", "TransmissionSessionCancelled, reason code " + ReasonName(r));
            });
    } else {
        eng->SetSessionStartCallback([](const Ltp::session_id_t& s) {
            std::lock_guard<std::mutex> g(st.mu);
            if (st.Ours(s, "start")) st.notices.push_back("SessionStart");
        });
        eng->SetRedPartReceptionCallback([](const Ltp::session_id_t& s,
                                                   padded_vector_uint8_t& data, uint64_t len,
                                                   uint64_t service, bool eob) {
            std::lock_guard<std::mutex> g(st.mu);
            if (!st.Ours(s, "red-part")) return;
            st.notices.push_back("RedPartReception(len=" + std::to_string(len) + ",service=" +
                                 std::to_string(service) + ",eob=" + std::to_string(eob) + ")");
            st.Check(data.data(), 0, data.size());
            st.red_bytes += data.size();
            st.red_done = true;
            st.eob_seen = st.eob_seen || eob;
            if (st.eob_seen)
                st.End("completed", "RedPartReception (" + std::to_string(len) +
                                        " bytes), end of block seen");
        });
        eng->SetGreenPartSegmentArrivalCallback([red_len](const Ltp::session_id_t& s,
                                                          std::vector<uint8_t>& data, uint64_t off,
                                                          uint64_t service, bool eob) {
            std::lock_guard<std::mutex> g(st.mu);
            if (!st.Ours(s, "green")) return;
            st.notices.push_back("GreenPartSegmentArrival(off=" + std::to_string(off) + ",len=" +
                                 std::to_string(data.size()) + ",service=" +
                                 std::to_string(service) + ",eob=" + std::to_string(eob) + ")");
            st.Check(data.data(), off, data.size());
            st.AddGreen(off, data.size());
            if (!eob) return;
            st.eob_seen = true;
            if (st.red_done) st.End("completed", "RedPartReception, then the green end of block");
            else if (red_len == 0)
                st.End("closed", "all-green block: green end of block received (HDTN gives "
                                 "no other end notice for it)");
        });
        eng->SetReceptionSessionCancelledCallback(
            [](const Ltp::session_id_t& s, CANCEL_SEGMENT_REASON_CODES r) {
                std::lock_guard<std::mutex> g(st.mu);
                // HDTN refuses a session for another client service (CR
                // UNREACH, LtpEngine.cpp) and tells its one client, whose
                // session it never was (no SessionStart came): said, not
                // taken as this client's outcome
                if (r == CANCEL_SEGMENT_REASON_CODES::UNREACHABLE &&
                    !(st.have_session && s == st.sid)) {
                    std::ostringstream o;
                    o << "RefusedOtherService(" << s.sessionOriginatorEngineId << ","
                      << s.sessionNumber << ",reason=" << ReasonName(r) << ")";
                    st.notices.push_back(o.str());
                    return;
                }
                if (!st.Ours(s, "cancelled")) return;
                st.notices.push_back("ReceptionSessionCancelled(reason=" + ReasonName(r) + ")");
                st.End("cancelled", "ReceptionSessionCancelled, reason code " + ReasonName(r));
            });
        // linger by rule: every report retransmission the limit allows
        uint64_t by_rule = (limit + 1) * (rtx_ms + 50);
        if (linger_ms < by_rule) linger_ms = by_rule;
    }
    { std::ofstream(workdir + "/ready"); }

    if (st.is_sender) {
        auto req = std::make_shared<LtpEngine::transmission_request_t>();
        req->destinationClientServiceId = svc;
        req->destinationLtpEngineId = peer_engine;
        padded_vector_uint8_t block(block_len);
        for (uint64_t i = 0; i < block_len; ++i) block[i] = PayloadByte(i);
        req->clientServiceDataToSend = LtpClientServiceDataToSend(std::move(block));
        req->lengthOfRedPart = red_len;
        eng->TransmissionRequest_ThreadSafe(std::move(req));
        Log("transmission request: " + std::to_string(block_len) + " bytes, " +
            std::to_string(red_len) + " red, to engine " + std::to_string(peer_engine) +
            " service " + std::to_string(svc));
    }

    const int64_t deadline = t0 + static_cast<int64_t>(time_limit_ms);
    {
        std::unique_lock<std::mutex> lk(st.mu);
        while (true) {
            int64_t t = NowMs();
            if (stop_signal) {
                std::string sig = "stopped by signal " + std::to_string(stop_signal.load());
                if (st.end_at < 0) {
                    st.outcome = "open";
                    st.detail = sig + " before any end notice";
                } else {
                    st.detail += "; " + sig;
                }
                break;
            }
            if (t >= deadline) {
                if (st.end_at < 0 && !st.is_sender && st.red_done)
                    st.detail = "red part delivered, but the end of block never seen by the "
                                "time limit";
                break;
            }
            if (st.last_at >= 0 && t >= st.last_at + static_cast<int64_t>(linger_ms)) break;
            st.cv.wait_for(lk, std::chrono::milliseconds(50));
        }
    }
    WriteResult(workdir, ResultLine(t0));
    Log("result written");
    std::fflush(nullptr);
    // HDTN's engine threads and singletons are left to the exit: the result
    // is written, and nothing of the engine's outlives this process
    _exit(0);
}
