//! dtnc-cfdprs: dtnconform's system-under-test harness for cfdp-rs 0.3.0
//! (CCSDS 727.0-B-5 CFDP).
//!
//! One process plays one CFDP entity of one file transfer: `send` drives a
//! cfdp-rs `SourceHandler`, `recv` a `DestinationHandler`. One raw CFDP PDU
//! per UDP datagram, no space-packet wrapper. Every PDU that leaves was
//! built by the handler (its PduSender); every datagram that arrives is
//! handed to the handler unchanged. The harness only drives it: UDP I/O,
//! running the state machine so that its timers run, the countdown
//! provider, the user and fault-hook callbacks, the file, the users'
//! requests.
//!
//! The command line and the result (the last stdout line, one JSON object)
//! are those of suts/cfdp/cfdppy/harness.py: README.md.

mod cfdprs;
#[path = "../../../../payload.rs"]
mod payload;
#[path = "../../../../sockbuf.rs"]
mod sockbuf;
mod wire;

use std::{
    collections::BTreeMap,
    io::ErrorKind,
    net::{SocketAddr, UdpSocket},
    path::PathBuf,
    rc::Rc,
    sync::atomic::{AtomicI32, Ordering},
    time::{Duration, Instant},
};

use cfdp::{
    filestore::NativeFilestore, lost_segments::LostSegmentsList, request::PutRequest,
    IndicationConfig, LocalEntityConfig, PduOwnedWithInfo, RemoteEntityConfig,
};
use clap::{Parser, ValueEnum};
use serde_json::{json, Map, Value};
use spacepackets::{
    cfdp::{ChecksumType, ConditionCode, FaultHandlerCode, TransmissionMode},
    util::UnsignedByteField,
};

use cfdprs::{
    pattern, CallError, DestDriver, Driver, FixedSeq, HarnessFaultHook, HarnessTimers, HarnessUser,
    Obs, Observer, Outbox, SourceDriver, IMPLEMENTATION,
};
use wire::{Fields, CONDITIONS};

const SOURCE_FILE: &str = "dtnc-source.bin"; // the sender's file, in its --workdir
const DEST_FILE: &str = "dtnc-received.bin"; // the Metadata's destination file name
const POLL: Duration = Duration::from_millis(5); // idle wait between state-machine runs
const MAX_DATAGRAM: usize = 65535;
const PUMP_CALLS: usize = 256; // state-machine steps between two waits on the socket (each followed by a read that does not wait)
/// cfdp-rs's PDU buffer: the crate is built with feature `packet-buf-4k`
/// (buf_len.rs:127-128); a PDU it builds can be no longer.
const PACKET_BUF_LEN: usize = cfdp::buf_len::PACKET_BUF_LEN;
/// What cfdp-rs (spacepackets 0.16.1) can put in a PDU header and parse:
/// util.rs:148-167 and 189-210, cfdp/pdu/mod.rs:518-535.
const WIDTHS: [u8; 4] = [1, 2, 4, 8];
const REQUESTS: [&str; 4] = ["cancel", "suspend", "prompt_nak", "prompt_keep_alive"];
const MATCH_KEYS: [&str; 5] = ["directive", "ack_of", "pdu_type", "offset", "condition"];

// ---------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
enum Role {
    Send,
    Recv,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
enum Mode {
    Class1,
    #[value(name = "class1-closure")]
    Class1Closure,
    Class2,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
enum Checksum {
    Modular,
    Crc32,
    Crc32c,
    Null,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
enum NakMode {
    Immediate,
    Deferred,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
enum ChecksumHandler {
    Cancel,
    Ignore,
}

fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    text.parse::<SocketAddr>()
        .map_err(|_| format!("expected IP:PORT, got {text:?}"))
}

#[derive(Parser, Debug)]
#[command(
    name = "dtnc-cfdprs",
    about = "Run one CFDP file transfer with cfdp-rs 0.3.0 (one role per process)."
)]
struct Args {
    role: Role,
    /// local IP:PORT to bind
    #[arg(long, value_parser = parse_addr)]
    listen: SocketAddr,
    /// IP:PORT every PDU goes to
    #[arg(long, value_parser = parse_addr)]
    peer: SocketAddr,
    /// local entity ID (default 1 send, 2 recv)
    #[arg(long)]
    entity_id: Option<u64>,
    /// peer entity ID (default 2 send, 1 recv)
    #[arg(long)]
    peer_entity_id: Option<u64>,
    /// octets of each entity ID
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=8))]
    entity_id_len: u8,
    /// octets of the transaction sequence number
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(1..=8))]
    seq_len: u8,
    /// transaction sequence number (send)
    #[arg(long, default_value_t = 1)]
    seq_num: u64,
    #[arg(long, value_enum, default_value_t = Mode::Class2)]
    mode: Mode,
    #[arg(long, value_enum, default_value_t = Checksum::Modular)]
    checksum: Checksum,
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pdu_crc: u8,
    /// file-data octets per PDU
    #[arg(long, default_value_t = 1024)]
    segment_size: i64,
    /// send: the file size in octets
    #[arg(long)]
    file_len: Option<i64>,
    #[arg(long, value_enum, default_value_t = NakMode::Immediate)]
    nak_mode: NakMode,
    /// EOF/Finished retransmissions
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    ack_limit: i64,
    /// NAK-timer expiries re-sending NAK
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    nak_limit: i64,
    /// check-timer expiries before fault
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    check_limit: i64,
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true)]
    ack_timer_ms: i64,
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true)]
    nak_timer_ms: i64,
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true)]
    check_timer_ms: i64,
    /// accepted for the common CLI; cfdp-rs 0.3.0 has no inactivity timer
    #[arg(long, default_value_t = 30000, allow_negative_numbers = true)]
    inactivity_ms: i64,
    /// fault handler for File Checksum Failure (cfdp-rs's default is ignore)
    #[arg(long, value_enum, default_value_t = ChecksumHandler::Cancel)]
    checksum_fault_handler: ChecksumHandler,
    /// a user's request (JSON)
    #[arg(long)]
    request: Vec<String>,
    #[arg(long, default_value_t = 60000)]
    time_limit_ms: u64,
    #[arg(long, default_value_t = 1000)]
    linger_ms: u64,
    #[arg(long, default_value = ".")]
    workdir: PathBuf,
    /// log every PDU on stderr
    #[arg(short, long)]
    verbose: bool,
}

/// A knob cfdp-rs or the harness cannot take: an "error" result.
struct UsageError(String);

struct Config {
    sender: bool,
    entity_id: u64,
    peer_entity_id: u64,
    file_len: u64,
    segment_size: usize,
}

fn check_args(a: &Args) -> Result<Config, UsageError> {
    let sender = a.role == Role::Send;
    let entity_id = a.entity_id.unwrap_or(if sender { 1 } else { 2 });
    let peer_entity_id = a.peer_entity_id.unwrap_or(if sender { 2 } else { 1 });
    if !WIDTHS.contains(&a.entity_id_len) {
        return Err(UsageError(format!(
            "--entity-id-len {}: {IMPLEMENTATION} supports entity IDs of 1, 2, 4 or 8 octets \
             only (spacepackets 0.16.1 UnsignedByteField: util.rs:148-167, 189-210; PDU header \
             parser: cfdp/pdu/mod.rs:518-525)",
            a.entity_id_len
        )));
    }
    if !WIDTHS.contains(&a.seq_len) {
        return Err(UsageError(format!(
            "--seq-len {}: {IMPLEMENTATION} supports transaction sequence numbers of 1, 2, 4 or \
             8 octets only (the SourceHandler's width is SequenceCounter::MAX_BIT_WIDTH / 8, \
             source.rs:482-488, written by spacepackets' UnsignedByteField, util.rs:189-210; \
             the header parser reads 1, 2, 4 or 8, cfdp/pdu/mod.rs:527-535)",
            a.seq_len
        )));
    }
    let fits = |v: u64, octets: u8| octets >= 8 || v < (1u64 << (8 * u32::from(octets)));
    for (name, v) in [("entity-id", entity_id), ("peer-entity-id", peer_entity_id)] {
        if !fits(v, a.entity_id_len) {
            return Err(UsageError(format!(
                "--{name} does not fit {} octets",
                a.entity_id_len
            )));
        }
    }
    if !fits(a.seq_num, a.seq_len) {
        return Err(UsageError(format!(
            "--seq-num {} does not fit {} octets",
            a.seq_num, a.seq_len
        )));
    }
    if entity_id == peer_entity_id {
        return Err(UsageError(
            "--entity-id and --peer-entity-id must differ".into(),
        ));
    }
    let file_len = match (sender, a.file_len) {
        (true, Some(n)) if n >= 0 => n as u64,
        (true, _) => return Err(UsageError("send needs --file-len N (N >= 0)".into())),
        (false, _) => 0,
    };
    if a.segment_size <= 0 {
        return Err(UsageError("--segment-size must be positive".into()));
    }
    for (name, v) in [
        ("ack-limit", a.ack_limit),
        ("nak-limit", a.nak_limit),
        ("check-limit", a.check_limit),
    ] {
        if v < 0 {
            return Err(UsageError(format!("--{name} must be >= 0")));
        }
        if v >= i64::from(u32::MAX) {
            return Err(UsageError(format!("--{name} too large")));
        }
    }
    for (name, v) in [
        ("ack-timer-ms", a.ack_timer_ms),
        ("nak-timer-ms", a.nak_timer_ms),
        ("check-timer-ms", a.check_timer_ms),
        ("inactivity-ms", a.inactivity_ms),
    ] {
        if v <= 0 {
            return Err(UsageError(format!("--{name} must be positive")));
        }
    }
    // The SourceHandler cuts segments of min(max_file_segment_len, what fits
    // max_packet_len after the header, offset and CRC) (source.rs:989-1002);
    // its PDU buffer is PACKET_BUF_LEN octets, so no File Data PDU is longer.
    let segment_size = a.segment_size as usize;
    if sender {
        let fss = if file_len > u64::from(u32::MAX) { 8 } else { 4 };
        let overhead = 4
            + 2 * usize::from(a.entity_id_len)
            + usize::from(a.seq_len)
            + fss
            + if a.pdu_crc == 1 { 2 } else { 0 };
        let most = PACKET_BUF_LEN - overhead;
        if segment_size > most {
            return Err(UsageError(format!(
                "--segment-size {segment_size}: {IMPLEMENTATION} builds every PDU in a buffer \
                 of {PACKET_BUF_LEN} octets (feature packet-buf-4k, buf_len.rs:127-128), so a \
                 File Data PDU carries at most {most} octets with this header \
                 (source.rs:989-1002)"
            )));
        }
    }
    Ok(Config {
        sender,
        entity_id,
        peer_entity_id,
        file_len,
        segment_size,
    })
}

// ---------------------------------------------------------------------------
// Users' requests
// ---------------------------------------------------------------------------

struct Request {
    kind: String,
    direction: String,
    matcher: Map<String, Value>,
    occurrence: u64,
    seen: u64,
    due: bool,
    made: Option<bool>,
    detail: String,
    made_at: Option<f64>,
}

impl Request {
    fn describe_trigger(&self) -> String {
        let fields: Vec<String> = self
            .matcher
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect();
        format!(
            "occurrence {} of {} PDU [{}]",
            self.occurrence,
            self.direction,
            fields.join(", ")
        )
    }

    fn result(&self) -> Value {
        let mut out = Map::new();
        out.insert("request".into(), self.kind.clone().into());
        out.insert("made".into(), self.made.unwrap_or(false).into());
        out.insert("detail".into(), self.detail.clone().into());
        if let Some(t) = self.made_at {
            out.insert("made_at_s".into(), round3(t).into());
        }
        Value::Object(out)
    }
}

fn parse_request(text: &str, sender: bool) -> Result<Request, UsageError> {
    let bad = |why: &str| UsageError(format!("--request {text:?}: {why}"));
    let raw: Value = serde_json::from_str(text).map_err(|e| bad(&format!("not JSON ({e})")))?;
    let Value::Object(raw) = raw else {
        return Err(bad("not a JSON object"));
    };
    let kind = raw.get("request").and_then(Value::as_str).unwrap_or("");
    if !REQUESTS.contains(&kind) {
        return Err(bad(&format!("request must be one of {REQUESTS:?}")));
    }
    let Some(Value::Object(after)) = raw.get("after") else {
        return Err(bad("'after' must be an object"));
    };
    let direction = after.get("direction").and_then(Value::as_str).unwrap_or("");
    if direction != "forward" && direction != "return" {
        return Err(bad("after.direction must be forward or return"));
    }
    let matcher = match after.get("match") {
        Some(Value::Object(m)) if !m.is_empty() => m.clone(),
        _ => return Err(bad("after.match must be a non-empty object")),
    };
    let unknown: Vec<&String> = matcher
        .keys()
        .filter(|k| !MATCH_KEYS.contains(&k.as_str()))
        .collect();
    if !unknown.is_empty() {
        return Err(bad(&format!(
            "match keys {unknown:?} not supported {MATCH_KEYS:?}"
        )));
    }
    let occurrence = match after.get("occurrence") {
        None => 1,
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => n,
            _ => return Err(bad("after.occurrence must be an integer >= 1")),
        },
    };
    match raw.get("resume_after_ms") {
        None => {}
        Some(v) if v.as_f64().is_some_and(|x| x >= 0.0) => {}
        Some(_) => return Err(bad("resume_after_ms must be a number >= 0")),
    }
    let mut req = Request {
        kind: kind.to_string(),
        direction: direction.to_string(),
        matcher,
        occurrence,
        seen: 0,
        due: false,
        made: None,
        detail: String::new(),
        made_at: None,
    };
    let mine = if sender { "sender" } else { "receiver" };
    if let Some(entity) = raw.get("entity").and_then(Value::as_str) {
        if entity != mine {
            req.made = Some(false);
            req.detail = format!("the request is the {entity}'s; this process is the {mine}");
        }
    }
    Ok(req)
}

// ---------------------------------------------------------------------------
// The entity
// ---------------------------------------------------------------------------

struct Entity {
    sender: bool,
    driver: Box<dyn Driver>,
    user: HarnessUser,
    obs: Obs,
    outbox: Outbox,
    sock: UdpSocket,
    peer: SocketAddr,
    requests: Vec<Request>,
    sent: BTreeMap<String, u64>,
    received: BTreeMap<String, u64>,
    dropped: BTreeMap<String, u64>,
    started: bool,
    ended_at: Option<Instant>,
    fatal: Option<String>,
    verbose: bool,
    /// read_socket's datagram buffer, kept between calls
    rx_buf: Vec<u8>,
    /// the socket is in blocking mode (read_socket awaits a datagram)
    sock_waits: bool,
}

impl Entity {
    fn out_direction(&self) -> &'static str {
        if self.sender {
            "forward"
        } else {
            "return"
        }
    }

    fn in_direction(&self) -> &'static str {
        if self.sender {
            "return"
        } else {
            "forward"
        }
    }

    fn log(&self, text: &str) {
        self.obs.borrow().log(text);
    }

    fn stop(&mut self, err: CallError, what: &str) {
        let text = match err {
            CallError::Panicked(t) => t,
            CallError::Refused { kind, text } => {
                format!(
                    "{} returned {kind}({text}) while {what}",
                    self.driver.name()
                )
            }
        };
        self.log(&format!("entity stopped: {text}"));
        if self.fatal.is_none() {
            self.fatal = Some(text);
        }
    }

    /// Send every PDU cfdp-rs has built, in order. Returns how many.
    fn drain(&mut self) -> usize {
        let mut n = 0;
        loop {
            let next = self.outbox.0.borrow_mut().pop_front();
            let Some(raw) = next else { break };
            n += 1;
            if let Err(e) = self.sock.send_to(&raw, self.peer) {
                self.log(&format!("sendto {}: {e}", self.peer));
            }
            match wire::decode(&raw) {
                Ok(f) => {
                    *self.sent.entry(f.counter_key()).or_default() += 1;
                    if self.verbose {
                        self.log(&format!("-> {}", f.label));
                    }
                    if f.get_str("directive") == Some("eof") {
                        if let Some(c) = f.get_str("condition") {
                            self.obs.borrow_mut().eof_sent.push(c.to_string());
                        }
                    }
                    self.observe(self.out_direction(), &f);
                }
                Err(e) => self.log(&format!("-> undecodable PDU ({e})")),
            }
        }
        n
    }

    fn observe(&mut self, direction: &str, f: &Fields) {
        for req in &mut self.requests {
            if req.made.is_some() || req.due || req.direction != direction {
                continue;
            }
            if f.matches(&req.matcher) {
                req.seen += 1;
                if req.seen >= req.occurrence {
                    req.due = true;
                }
            }
        }
    }

    fn make_due_requests(&mut self) {
        for i in 0..self.requests.len() {
            if self.requests[i].due && self.requests[i].made.is_none() {
                self.requests[i].due = false;
                self.make_request(i);
                self.drain();
            }
        }
    }

    fn make_request(&mut self, i: usize) {
        let now = self.obs.borrow().t0.elapsed().as_secs_f64();
        let what = format!(
            "{} after {}",
            self.requests[i].kind,
            self.requests[i].describe_trigger()
        );
        let kind = self.requests[i].kind.clone();
        let (made, detail) = match kind.as_str() {
            "suspend" => (
                false,
                format!(
                    "{IMPLEMENTATION} has no Suspend.request/Resume.request: neither \
                     SourceHandler nor DestinationHandler offers one, neither ever enters its \
                     Suspended state (source.rs:395-398, dest.rs:489-491) and notice of \
                     suspension does nothing (source.rs:1186, dest.rs:1859-1861); lib.rs:15 \
                     lists suspending as not implemented"
                ),
            ),
            "prompt_nak" | "prompt_keep_alive" if !self.sender => (
                false,
                "a Prompt is the sending entity's request".to_string(),
            ),
            "prompt_nak" | "prompt_keep_alive" => (
                false,
                format!(
                    "{IMPLEMENTATION} cannot send a Prompt PDU: the SourceHandler has no \
                     Prompt API (lib.rs:18 lists Keep Alive and Prompt PDU handling as not \
                     implemented; its DestinationHandler answers a Prompt with \
                     DestError::NotImplemented, dest.rs:1575-1577)"
                ),
            ),
            _ => {
                let name = self.driver.name();
                match self.driver.cancel(&mut self.user) {
                    Ok(None) => (
                        false,
                        "no transaction active at the trigger (it had ended or not begun)"
                            .to_string(),
                    ),
                    Ok(Some(true)) => (true, format!("{name}.cancel_request accepted")),
                    Ok(Some(false)) => (
                        false,
                        format!("{name}.cancel_request refused (returned false)"),
                    ),
                    Err(CallError::Refused { kind, text }) => (
                        false,
                        format!("{name}.cancel_request returned {kind}({text})"),
                    ),
                    Err(e) => {
                        self.stop(e, &format!("making {what}"));
                        (false, "cfdp-rs panicked making the request".to_string())
                    }
                }
            }
        };
        let req = &mut self.requests[i];
        req.made = Some(made);
        req.detail = detail;
        if made {
            req.made_at = Some(now);
            self.obs.borrow_mut().note(format!("request made: {what}"));
        } else {
            let d = req.detail.clone();
            self.log(&format!("request not made: {what}: {d}"));
        }
    }

    fn on_datagram(&mut self, data: &[u8]) {
        let fields = match wire::decode(data) {
            Ok(f) => f,
            Err(e) => {
                self.drop_pdu("Undecodable", &e);
                return;
            }
        };
        *self.received.entry(fields.counter_key()).or_default() += 1;
        if self.verbose {
            self.log(&format!("<- {}", fields.label));
        }
        self.observe(self.in_direction(), &fields);
        // The datagram as received (cut to the PDU length its header states).
        let pdu = match PduOwnedWithInfo::new_from_raw_packet(data) {
            Ok(p) => p,
            Err(e) => {
                self.drop_pdu("PduError", &format!("{}: {e}", fields.label));
                self.make_due_requests();
                return;
            }
        };
        match self.driver.insert(&mut self.user, &pdu) {
            Ok(_) => {}
            Err(CallError::Refused { kind, text }) => {
                self.drop_pdu(&kind, &format!("{}: {text}", fields.label))
            }
            Err(e) => {
                self.stop(e, &format!("inserting {}", fields.label));
                return;
            }
        }
        self.note_activity();
        self.drain();
        self.make_due_requests();
    }

    fn drop_pdu(&mut self, kind: &str, text: &str) {
        *self.dropped.entry(kind.to_string()).or_default() += 1;
        self.log(&format!("PDU dropped: {kind}: {text}"));
    }

    /// Run the state machine without a PDU (timers, the next File Data
    /// PDU) until it has nothing more to send. Returns whether it stopped
    /// at the call cap with more to send.
    fn pump(&mut self) -> bool {
        let mut capped = true;
        for _ in 0..PUMP_CALLS {
            if self.fatal.is_some() || !self.driver.busy() {
                capped = false;
                break;
            }
            if let Err(e) = self.driver.poll(&mut self.user) {
                self.stop(e, "running its state machine");
                capped = false;
                break;
            }
            self.note_activity();
            let sent = self.drain();
            self.make_due_requests();
            // the network between every send (docs/implementers.md; a step
            // sends one new File Data PDU): a NAK that came while cfdp-rs
            // was sending new data reaches it now
            self.read_socket(Duration::ZERO);
            if sent == 0 {
                capped = false;
                break;
            }
        }
        self.note_activity();
        capped
    }

    fn note_activity(&mut self) {
        if self.driver.busy() || self.obs.borrow().transaction_seen {
            self.started = true;
        }
    }

    /// The transaction's end, noticed as soon as the handler is idle again:
    /// after every datagram as well as after each run of the state machine,
    /// so that a late PDU in the same batch (which may open a new
    /// transaction) comes after the end, not before it.
    fn check_ended(&mut self) {
        if self.ended_at.is_none() && self.started && !self.driver.busy() {
            self.ended_at = Some(Instant::now());
            self.obs.borrow_mut().settled = true;
            self.obs.borrow().log("transaction ended; lingering");
        }
    }

    /// Hand cfdp-rs what has arrived: up to 1024 datagrams, the first
    /// awaited up to ``timeout`` (zero: none awaited). Called after every
    /// state-machine step, so it reuses one buffer and changes the socket's
    /// blocking mode only when it must.
    fn read_socket(&mut self, timeout: Duration) {
        let mut buf = std::mem::take(&mut self.rx_buf);
        buf.resize(MAX_DATAGRAM, 0);
        for i in 0..1024 {
            let wait = i == 0 && !timeout.is_zero();
            if wait {
                let _ = self.sock.set_read_timeout(Some(timeout));
            }
            if self.sock_waits != wait {
                let _ = self.sock.set_nonblocking(!wait);
                self.sock_waits = wait;
            }
            match self.sock.recv_from(&mut buf) {
                Ok((n, _from)) => {
                    self.on_datagram(&buf[..n]);
                    if self.fatal.is_some() {
                        break;
                    }
                    self.note_activity();
                    self.check_ended();
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) =>
                {
                    break
                }
                Err(e) => {
                    // e.g. ICMP port unreachable reported late
                    if self.verbose {
                        self.log(&format!("recvfrom: {e}"));
                    }
                    break;
                }
            }
        }
        self.rx_buf = buf;
    }
}

// ---------------------------------------------------------------------------
// Building the handlers
// ---------------------------------------------------------------------------

fn checksum_type(c: Checksum) -> ChecksumType {
    match c {
        Checksum::Modular => ChecksumType::Modular,
        Checksum::Crc32 => ChecksumType::Crc32,
        Checksum::Crc32c => ChecksumType::Crc32C,
        Checksum::Null => ChecksumType::NullChecksum,
    }
}

/// The remote entity configuration (lib.rs:276-291), with the model's
/// limits mapped to cfdp-rs's counts (README "Limits").
fn remote_config(a: &Args, c: &Config) -> RemoteEntityConfig {
    RemoteEntityConfig {
        entity_id: UnsignedByteField::new(usize::from(a.entity_id_len), c.peer_entity_id),
        max_packet_len: PACKET_BUF_LEN,
        max_file_segment_len: Some(c.segment_size),
        closure_requested_by_default: a.mode == Mode::Class1Closure,
        crc_on_transmission_by_default: a.pdu_crc == 1,
        default_transmission_mode: if a.mode == Mode::Class2 {
            TransmissionMode::Acknowledged
        } else {
            TransmissionMode::Unacknowledged
        },
        default_crc_type: checksum_type(a.checksum),
        positive_ack_timer_interval: Duration::from_millis(a.ack_timer_ms as u64),
        // fault when counter + 1 >= limit at an expiry: source.rs:701, dest.rs:1754
        positive_ack_timer_expiration_limit: (a.ack_limit + 1) as u32,
        // fault when count + 1 >= limit at an expiry: dest.rs:1555-1556
        check_limit: (a.check_limit + 1) as u32,
        disposition_on_cancellation: false,
        immediate_nak_mode: a.nak_mode == NakMode::Immediate,
        nak_timer_interval: Duration::from_millis(a.nak_timer_ms as u64),
        // fault when counter + 1 == limit at an expiry: dest.rs:1216-1224
        nak_timer_expiration_limit: (a.nak_limit + 1) as u32,
    }
}

/// The local entity configuration: every indication on, and the model's
/// fault handlers set explicitly (lib.rs:599-609).
fn local_config(a: &Args, c: &Config, obs: &Obs) -> LocalEntityConfig<HarnessFaultHook> {
    let mut cfg = LocalEntityConfig::new(
        UnsignedByteField::new(usize::from(a.entity_id_len), c.entity_id),
        IndicationConfig::default(),
        HarnessFaultHook { obs: obs.clone() },
    );
    let fh = &mut cfg.fault_handler;
    for cc in [
        ConditionCode::PositiveAckLimitReached,
        ConditionCode::NakLimitReached,
        ConditionCode::InactivityDetected,
        ConditionCode::CheckLimitReached,
    ] {
        fh.set_fault_handler(cc, FaultHandlerCode::NoticeOfCancellation);
    }
    fh.set_fault_handler(
        ConditionCode::FileChecksumFailure,
        match a.checksum_fault_handler {
            ChecksumHandler::Cancel => FaultHandlerCode::NoticeOfCancellation,
            ChecksumHandler::Ignore => FaultHandlerCode::IgnoreError,
        },
    );
    cfg
}

fn timers(a: &Args) -> HarnessTimers {
    HarnessTimers {
        receiving_check: Duration::from_millis(a.check_timer_ms as u64),
        sending_check: Duration::from_millis(
            (a.check_timer_ms as u64).saturating_mul(a.check_limit as u64 + 1),
        ),
    }
}

fn source_driver<const W: usize>(
    a: &Args,
    c: &Config,
    obs: &Obs,
    outbox: &Outbox,
) -> Result<Box<dyn Driver>, UsageError> {
    let mut handler = cfdprs::Source::<W>::new(
        local_config(a, c, obs),
        outbox.clone(),
        NativeFilestore::default(),
        remote_config(a, c),
        timers(a),
        FixedSeq::<W>::new(a.seq_num),
    );
    let put = PutRequest::new_regular_request(
        UnsignedByteField::new(usize::from(a.entity_id_len), c.peer_entity_id),
        SOURCE_FILE,
        DEST_FILE,
        Some(if a.mode == Mode::Class2 {
            TransmissionMode::Acknowledged
        } else {
            TransmissionMode::Unacknowledged
        }),
        Some(a.mode == Mode::Class1Closure),
    )
    .map_err(|e| UsageError(format!("PutRequest: {e:?}")))?;
    handler.put_request(&put).map_err(|e| {
        UsageError(format!(
            "SourceHandler.put_request refused the Put.request: {e}"
        ))
    })?;
    Ok(Box::new(SourceDriver::<W>(handler)))
}

fn dest_driver(a: &Args, c: &Config, obs: &Obs, outbox: &Outbox) -> Box<dyn Driver> {
    Box::new(DestDriver(cfdprs::Dest::new(
        local_config(a, c, obs),
        outbox.clone(),
        NativeFilestore::default(),
        remote_config(a, c),
        timers(a),
        LostSegmentsList::default(),
    )))
}

// ---------------------------------------------------------------------------
// The result
// ---------------------------------------------------------------------------

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn settle(ent: &mut Entity, timed_out: bool, why_stopped: &str) -> Value {
    let obs_rc = ent.obs.clone();
    let mut obs = obs_rc.borrow_mut();
    let mut detail: Vec<String> = Vec::new();
    let mut condition = "no_error".to_string();
    let outcome: &str;
    // the condition of the last EOF the SourceHandler sent, if a cancel one
    let cancel_eof = obs.eof_sent.last().filter(|c| *c != "no_error").cloned();
    let crashed = ent.fatal.is_some() && ent.ended_at.is_none();
    if let (Some(f), false) = (&ent.fatal, crashed) {
        obs.after_end.push(f.clone());
    }
    if !ent.started {
        outcome = "open";
        if let Some(f) = &ent.fatal {
            // the first PDU made it panic: the entity stopped before a
            // transaction began, and takes no step again ("crashed" below)
            detail.push(format!("entity stopped: {f}; no transaction began"));
        } else {
            detail.push(format!(
                "no transaction reached this entity ({why_stopped})"
            ));
        }
    } else if let Some(ab) = obs.abandoned.clone() {
        outcome = "abandoned";
        condition = ab;
        detail.push(format!(
            "transaction abandoned by the fault handler ({condition})"
        ));
    } else if timed_out || crashed {
        // The transaction never ended at this entity: the time limit came
        // first, or cfdp-rs panicked and the entity stopped there, as an
        // application would.
        outcome = "open";
        if let Some(last) = obs.finished.last() {
            condition = last.0.clone();
        } else if let Some(c) = &cancel_eof {
            condition = c.clone();
        } else if let Some(c) = &obs.cancel_condition {
            condition = c.clone();
        }
        if crashed {
            detail.push(format!(
                "entity stopped: {}; its transaction never ended",
                ent.fatal.clone().unwrap_or_default()
            ));
        } else {
            let step = if ent.driver.busy() {
                ent.driver.step()
            } else {
                "Idle".to_string()
            };
            detail.push(format!(
                "transaction not ended ({why_stopped}); cfdp-rs in step {step}"
            ));
        }
        if let Some(last) = obs.finished.last() {
            detail.push(format!("last Transaction-Finished.indication: {}", last.0));
        }
        if let Some(c) = &obs.cancel_condition {
            detail.push(format!("notice of cancellation: {c}"));
        }
        if !crashed {
            detail.push(format!(
                "{IMPLEMENTATION} has no inactivity timer (lib.rs:16)"
            ));
        }
    } else if let Some((c, delivery, status)) = obs.finished.last().cloned() {
        outcome = if c == "no_error" {
            "completed"
        } else {
            "cancelled"
        };
        condition = c;
        detail.push(format!(
            "Transaction-Finished.indication: {condition}, {delivery}, file {status}"
        ));
        if obs.finished.len() > 1 {
            let earlier: Vec<&str> = obs.finished[..obs.finished.len() - 1]
                .iter()
                .map(|f| f.0.as_str())
                .collect();
            detail.push(format!("earlier indications: {}", earlier.join(", ")));
        }
    } else if let Some(c) = cancel_eof.clone() {
        // A Class 1 sender's notice of cancellation (a fault's or a
        // Cancel.request's): cfdp-rs sends EOF(cancel) and resets with no
        // Transaction-Finished.indication (source.rs:1171-1175,
        // 1143-1146); the condition is the one of that EOF.
        outcome = "cancelled";
        condition = c;
        detail.push(format!(
            "notice of cancellation: EOF({condition}) sent, handler back to Idle with no \
             Transaction-Finished.indication"
        ));
    } else {
        outcome = "closed";
        detail.push("handler went back to Idle with no indication".into());
    }
    if !CONDITIONS.contains(&condition.as_str()) {
        detail.push(format!(
            "cfdp-rs's condition {condition} is no Table 5-5 code: reported as ''"
        ));
        condition = String::new();
    }
    if !obs.faults.is_empty() {
        let mut counts: Vec<(String, u32)> = Vec::new();
        for (h, c) in &obs.faults {
            let key = format!("{h} {c}");
            match counts.iter_mut().find(|(k, _)| *k == key) {
                Some((_, n)) => *n += 1,
                None => counts.push((key, 1)),
            }
        }
        let calls: Vec<String> = counts
            .into_iter()
            .map(|(k, n)| if n == 1 { k } else { format!("{k} x{n}") })
            .collect();
        detail.push(format!("fault handlers: {}", calls.join(", ")));
    }
    if !ent.dropped.is_empty() {
        let d: Vec<String> = ent
            .dropped
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        detail.push(format!("dropped PDUs: {}", d.join(", ")));
    }
    if !obs.after_end.is_empty() {
        let n = obs.after_end.len().min(6);
        detail.push(format!("after the end: {}", obs.after_end[..n].join("; ")));
    }
    for req in &mut ent.requests {
        if req.made.is_none() {
            req.made = Some(false);
            req.detail = format!(
                "trigger never seen ({}; seen {})",
                req.describe_trigger(),
                req.seen
            );
        }
    }
    let end = ent.ended_at.unwrap_or_else(Instant::now);
    let mut result = Map::new();
    result.insert("outcome".into(), outcome.into());
    if ent.sender {
        result.insert("file_bytes_delivered".into(), 0.into());
        let c = if condition.is_empty() {
            "no_error".to_string()
        } else {
            condition
        };
        result.insert("sender_condition".into(), c.into());
        result.insert("payload_ok".into(), Value::Null);
        // no Transaction.indication is told as no ID ([]): 3.4.6 has it
        // generated on receipt of the Put.request
        let told = obs.told.map(|(source, seq)| json!([source, seq]));
        result.insert("told_session".into(), told.unwrap_or_else(|| json!([])));
    } else {
        let delivered = if obs.payload_ok.is_some() {
            obs.delivered_bytes
        } else {
            0
        };
        result.insert("file_bytes_delivered".into(), delivered.into());
        let c = if ent.started {
            condition
        } else {
            String::new()
        };
        result.insert("receiver_condition".into(), c.into());
        result.insert(
            "payload_ok".into(),
            obs.payload_ok.map(Value::Bool).unwrap_or(Value::Null),
        );
        let told: Vec<Value> = obs.segments.iter().map(|(o, l)| json!([o, l])).collect();
        result.insert("told_segments".into(), told.into());
    }
    result.insert(
        "duration_s".into(),
        round3(end.duration_since(obs.t0).as_secs_f64()).into(),
    );
    result.insert(
        "requests".into(),
        Value::Array(ent.requests.iter().map(Request::result).collect()),
    );
    result.insert("detail".into(), detail.join("; ").into());
    result.insert("pdus_sent".into(), json!(ent.sent));
    result.insert("pdus_received".into(), json!(ent.received));
    if crashed {
        // it takes no step again: the judge holds its open session final
        result.insert(
            "crashed".into(),
            ent.fatal.clone().unwrap_or_default().into(),
        );
    }
    result.insert("implementation".into(), IMPLEMENTATION.into());
    Value::Object(result)
}

fn error_result(sender: Option<bool>, detail: &str, t0: Instant) -> Value {
    let mut out = Map::new();
    out.insert("outcome".into(), "error".into());
    out.insert("file_bytes_delivered".into(), 0.into());
    match sender {
        Some(true) => {
            out.insert("sender_condition".into(), "no_error".into());
        }
        Some(false) => {
            out.insert("receiver_condition".into(), "".into());
        }
        None => {}
    }
    out.insert("payload_ok".into(), Value::Null);
    out.insert(
        "duration_s".into(),
        round3(t0.elapsed().as_secs_f64()).into(),
    );
    out.insert("requests".into(), Value::Array(vec![]));
    out.insert("detail".into(), detail.into());
    out.insert("implementation".into(), IMPLEMENTATION.into());
    Value::Object(out)
}

// ---------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------

static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

#[cfg(unix)]
mod signals {
    use super::{Ordering, STOP_SIGNAL};

    extern "C" fn on_signal(sig: i32) {
        STOP_SIGNAL.store(sig, Ordering::SeqCst);
    }

    extern "C" {
        fn signal(signum: i32, handler: extern "C" fn(i32)) -> usize;
    }

    /// SIGTERM and SIGINT end the run with a result line.
    pub fn install() {
        // SAFETY: the handler only stores into an atomic.
        unsafe {
            signal(15, on_signal);
            signal(2, on_signal);
        }
    }

    pub fn name(sig: i32) -> &'static str {
        match sig {
            15 => "SIGTERM",
            2 => "SIGINT",
            _ => "a signal",
        }
    }
}

#[cfg(not(unix))]
mod signals {
    pub fn install() {}
    pub fn name(_sig: i32) -> &'static str {
        "a signal"
    }
}

fn run(a: &Args, t0: Instant) -> Result<Value, UsageError> {
    let c = check_args(a)?;
    let sender = c.sender;
    let mut requests = Vec::new();
    for text in &a.request {
        requests.push(parse_request(text, sender)?);
    }
    std::fs::create_dir_all(&a.workdir)
        .map_err(|e| UsageError(format!("cannot create --workdir: {e}")))?;
    std::env::set_current_dir(&a.workdir)
        .map_err(|e| UsageError(format!("cannot enter --workdir: {e}")))?;
    if sender {
        std::fs::write(SOURCE_FILE, pattern(c.file_len))
            .map_err(|e| UsageError(format!("cannot write {SOURCE_FILE}: {e}")))?;
    } else {
        let _ = std::fs::remove_file(DEST_FILE);
    }
    let role = if sender { "send" } else { "recv" };
    let obs: Obs = Rc::new(std::cell::RefCell::new(Observer::new(t0, role, a.verbose)));
    let sock = UdpSocket::bind(a.listen)
        .map_err(|e| UsageError(format!("cannot bind {}: {e}", a.listen)))?;
    sockbuf::raise_receive_buffer(&sock);
    obs.borrow().log(&format!(
        "listening on {}, peer {} ({IMPLEMENTATION})",
        a.listen, a.peer
    ));
    signals::install();
    let outbox = Outbox::default();
    let driver = if sender {
        match a.seq_len {
            1 => source_driver::<1>(a, &c, &obs, &outbox)?,
            2 => source_driver::<2>(a, &c, &obs, &outbox)?,
            4 => source_driver::<4>(a, &c, &obs, &outbox)?,
            _ => source_driver::<8>(a, &c, &obs, &outbox)?,
        }
    } else {
        dest_driver(a, &c, &obs, &outbox)
    };
    let mut ent = Entity {
        sender,
        driver,
        user: HarnessUser { obs: obs.clone() },
        obs: obs.clone(),
        outbox,
        sock,
        peer: a.peer,
        requests,
        sent: BTreeMap::new(),
        received: BTreeMap::new(),
        dropped: BTreeMap::new(),
        started: sender,
        ended_at: None,
        fatal: None,
        verbose: a.verbose,
        rx_buf: Vec::new(),
        sock_waits: true,
    };
    if sender {
        obs.borrow_mut().transaction_seen = true;
    }
    let deadline = t0 + Duration::from_millis(a.time_limit_ms);
    let linger = Duration::from_millis(a.linger_ms);
    let mut timed_out = false;
    let mut why_stopped = format!("time limit {} ms", a.time_limit_ms);
    let mut capped = ent.pump();
    loop {
        if ent.fatal.is_some() {
            break;
        }
        let now = Instant::now();
        let sig = STOP_SIGNAL.load(Ordering::SeqCst);
        if sig != 0 {
            why_stopped = format!("stopped by {}", signals::name(sig));
            timed_out = ent.ended_at.is_none();
            break;
        }
        if let Some(end) = ent.ended_at {
            if now >= end + linger {
                break;
            }
        }
        if now >= deadline {
            timed_out = ent.ended_at.is_none();
            break;
        }
        let wait = if capped {
            Duration::ZERO
        } else {
            POLL.min(deadline - now)
        };
        ent.read_socket(wait);
        if ent.fatal.is_some() {
            break;
        }
        capped = ent.pump();
        ent.check_ended();
    }
    Ok(settle(&mut ent, timed_out, &why_stopped))
}

/// The features of docs/implementers.md this harness takes: every one a
/// CFDP scenario can ask for (the requests cfdp-rs cannot make are reported
/// unmade, as each request's own result says).
const FEATURES: [&str; 13] = [
    "class1",
    "class1-closure",
    "class2",
    "checksum-modular",
    "checksum-crc32",
    "checksum-crc32c",
    "checksum-null",
    "pdu-crc",
    "deferred-nak",
    "request-cancel",
    "request-suspend",
    "request-prompt_nak",
    "request-prompt_keep_alive",
];

fn main() {
    // DTNC_FEATURES (the endpoint contract): exit 127, "not supported", for
    // a feature we do not know, before anything else
    let wanted = std::env::var("DTNC_FEATURES").unwrap_or_default();
    if let Some(f) = wanted
        .split(',')
        .find(|f| !f.is_empty() && !FEATURES.contains(f))
    {
        eprintln!("dtnc-cfdprs: feature {f:?} not supported (DTNC_FEATURES={wanted})");
        std::process::exit(127);
    }
    let t0 = Instant::now();
    let args = Args::parse();
    cfdprs::install_panic_hook();
    let sender = Some(args.role == Role::Send);
    let result = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&args, t0))) {
        Ok(Ok(v)) => v,
        Ok(Err(UsageError(text))) => error_result(sender, &text, t0),
        Err(_) => error_result(sender, "harness failure: panic (see stderr)", t0),
    };
    println!("{result}");
}
