//! End-to-end tests: run the real `dtnc-licklider` binary as a receiver and
//! a sender over 127.0.0.1 and check the JSON results (and, through a tiny
//! in-test UDP relay, the wire exchange).

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "../../../../sockbuf.rs"]
mod sockbuf;

const BIN: &str = env!("CARGO_BIN_EXE_dtnc-licklider");

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Proc {
    child: Child,
    stderr: Arc<Mutex<String>>,
    drain: Option<JoinHandle<()>>,
}

/// Spawn the harness; return once it has logged its bind line.
fn spawn(args: &[String]) -> Proc {
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn dtnc-licklider");
    let stderr = Arc::new(Mutex::new(String::new()));
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    // Wait for the startup line ("... bound ADDR; ...") so the socket is up.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).unwrap();
        stderr.lock().unwrap().push_str(&line);
        if n == 0 || line.contains(" bound ") || Instant::now() > deadline {
            break;
        }
    }
    let sink = Arc::clone(&stderr);
    let drain = thread::spawn(move || {
        for line in reader.lines().map_while(Result::ok) {
            let mut s = sink.lock().unwrap();
            s.push_str(&line);
            s.push('\n');
        }
    });
    Proc {
        child,
        stderr,
        drain: Some(drain),
    }
}

/// (exit code, parsed JSON line, stderr) of one finished process.
type Done = (i32, Value, String);

/// Wait for exit; return (exit code, parsed JSON line, stderr).
fn finish(mut p: Proc) -> Done {
    let out = p.child.wait_with_output_keep();
    if let Some(d) = p.drain.take() {
        let _ = d.join();
    }
    let log = p.stderr.lock().unwrap().clone();
    let lines: Vec<&str> = out.1.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(
        lines.len(),
        1,
        "exactly one stdout line expected: {lines:?}\n{log}"
    );
    let v: Value = serde_json::from_str(lines[0]).expect("stdout is JSON");
    (out.0, v, log)
}

trait WaitKeep {
    fn wait_with_output_keep(&mut self) -> (i32, String);
}

impl WaitKeep for Child {
    fn wait_with_output_keep(&mut self) -> (i32, String) {
        use std::io::Read;
        let mut s = String::new();
        self.stdout.take().unwrap().read_to_string(&mut s).unwrap();
        let status = self.wait().unwrap();
        (status.code().unwrap_or(-1), s)
    }
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_string()).collect()
}

/// Single-socket relay between `a` and `b` that drops the first `drop_n`
/// datagrams whose LTP segment type (low nibble of octet 0) is `drop_type`.
struct Relay {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    dropped: Arc<AtomicU32>,
    forwarded_types: Arc<Mutex<Vec<u8>>>,
    handle: Option<JoinHandle<()>>,
}

impl Relay {
    fn start(a: SocketAddr, b: SocketAddr, drop_type: u8, drop_n: u32) -> Self {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let addr = sock.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicU32::new(0));
        let forwarded_types = Arc::new(Mutex::new(Vec::new()));
        let (st, dr, ft) = (
            Arc::clone(&stop),
            Arc::clone(&dropped),
            Arc::clone(&forwarded_types),
        );
        let handle = thread::spawn(move || {
            let mut buf = [0u8; 65_536];
            while !st.load(Ordering::Relaxed) {
                let Ok((n, src)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                let ty = buf[0] & 0x0f;
                if ty == drop_type && dr.load(Ordering::Relaxed) < drop_n {
                    dr.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                ft.lock().unwrap().push(ty);
                let dst = if src == a { b } else { a };
                let _ = sock.send_to(&buf[..n], dst);
            }
        });
        Self {
            addr,
            stop,
            dropped,
            forwarded_types,
            handle: Some(handle),
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn transfer(
    extra_recv: &[&str],
    extra_send: &[&str],
    relay: Option<(u8, u32)>,
) -> (Done, Done, Option<Relay>) {
    let recv_port = free_port();
    let send_port = free_port();
    let recv_addr: SocketAddr = format!("127.0.0.1:{recv_port}").parse().unwrap();
    let send_addr: SocketAddr = format!("127.0.0.1:{send_port}").parse().unwrap();
    let relay = relay.map(|(ty, n)| Relay::start(send_addr, recv_addr, ty, n));
    let (to_recv, to_send) = match &relay {
        Some(r) => (r.addr, r.addr),
        None => (recv_addr, send_addr),
    };
    let mut r_args = args(&[
        "recv",
        "--listen",
        &recv_addr.to_string(),
        "--peer",
        &to_send.to_string(),
        "--time-limit-ms",
        "10000",
        "--linger-ms",
        "100",
    ]);
    r_args.extend(args(extra_recv));
    let mut s_args = args(&[
        "send",
        "--listen",
        &send_addr.to_string(),
        "--peer",
        &to_recv.to_string(),
        "--time-limit-ms",
        "10000",
    ]);
    s_args.extend(args(extra_send));
    let receiver = spawn(&r_args);
    let sender = spawn(&s_args);
    let s = finish(sender);
    let r = finish(receiver);
    (s, r, relay)
}

const BLOCK: &[&str] = &[
    "--block-len",
    "5000",
    "--red-len",
    "3000",
    "--segment-size",
    "1000",
    "--rtx-timeout-ms",
    "300",
];

fn assert_completed(s: &Done, r: &Done) {
    let (s_code, sj, s_log) = s;
    let (r_code, rj, r_log) = r;
    let ctx = format!("sender {sj}\n{s_log}\nreceiver {rj}\n{r_log}");
    assert_eq!(sj["role"], "sender", "{ctx}");
    assert_eq!(sj["outcome"], "completed", "{ctx}");
    assert_eq!(*s_code, 0, "{ctx}");
    assert_eq!(sj["block_len"], 5000, "{ctx}");
    assert_eq!(sj["red_len"], 3000, "{ctx}");
    assert_eq!(sj["session_originator"], 1, "{ctx}");
    assert_eq!(
        sj["notices"].as_array().unwrap().last().unwrap(),
        "TransmissionSessionCompleted",
        "{ctx}"
    );
    assert_eq!(rj["role"], "receiver", "{ctx}");
    assert_eq!(rj["outcome"], "completed", "{ctx}");
    assert_eq!(*r_code, 0, "{ctx}");
    assert_eq!(rj["payload_ok"], true, "{ctx}");
    assert_eq!(rj["red_bytes_delivered"], 3000, "{ctx}");
    assert_eq!(rj["green_bytes_delivered"], 2000, "{ctx}");
    assert_eq!(rj["session_closed"], true, "{ctx}");
    assert_eq!(rj["session_number"], sj["session_number"], "{ctx}");
}

#[test]
fn lossless_mixed_block() {
    let (s, r, _) = transfer(BLOCK, BLOCK, None);
    assert_completed(&s, &r);
    // No retransmission on a clean link: 5 DS + 1 RA out, 1 RS in.
    assert_eq!(s.1["stats"]["datagrams_sent"], 6, "{}", s.2);
    assert_eq!(s.1["stats"]["datagrams_received"], 1, "{}", s.2);
}

#[test]
fn lost_first_report_is_recovered() {
    // Drop the first report segment (type 8) on its way to the sender.
    let (s, r, relay) = transfer(BLOCK, BLOCK, Some((8, 1)));
    assert_completed(&s, &r);
    let relay = relay.unwrap();
    assert_eq!(relay.dropped.load(Ordering::Relaxed), 1);
    // Recovery needed a timer: the sender's checkpoint timer and/or the
    // receiver's report timer must have fired.
    let expiries = s.1["stats"]["timer_expiries"].as_u64().unwrap()
        + r.1["stats"]["timer_expiries"].as_u64().unwrap();
    assert!(expiries >= 1, "sender {} receiver {}", s.1, r.1);
    let types = relay.forwarded_types.lock().unwrap().clone();
    assert!(
        types.iter().filter(|&&t| t == 8).count() >= 1,
        "a report reached the sender: {types:?}"
    );
}

#[test]
fn unreachable_client_service_cancels_sender() {
    let mut send = BLOCK.to_vec();
    send.extend(["--client-service-id", "7"]);
    let mut recv = BLOCK.to_vec();
    recv.extend(["--time-limit-ms", "1000"]);
    let (s, r, _) = transfer(&recv, &send, None);
    assert_eq!(s.1["outcome"], "cancelled", "{}\n{}", s.1, s.2);
    assert_eq!(s.0, 1);
    assert!(
        s.1["detail"].as_str().unwrap().contains("UNREACH"),
        "{}",
        s.1
    );
    assert_eq!(r.1["outcome"], "open", "{}", r.1);
    assert_eq!(r.0, 3);
}

#[test]
fn bad_arguments_exit_2_with_json() {
    let p = spawn(&args(&[
        "send",
        "--peer",
        "127.0.0.1:9",
        "--block-len",
        "10",
        "--red-len",
        "11",
    ]));
    let (code, v, _) = finish(p);
    assert_eq!(code, 2);
    assert_eq!(v["role"], "sender");
    assert_eq!(v["outcome"], "error");
}

#[test]
fn registered_client_service_is_the_one_given() {
    // Both sides name service 7: the receiver must have registered 7 (not
    // the default 1), or the sender would be cancelled with UNREACH.
    let mut both = BLOCK.to_vec();
    both.extend(["--client-service-id", "7"]);
    let (s, r, _) = transfer(&both, &both, None);
    assert_completed(&s, &r);
}

#[test]
fn unknown_client_service_at_receiver_is_unreach() {
    // The receiver registers 9; the sender's data segments name 7 (RFC 5326
    // §6.21: the receiver cancels the session with UNREACH).
    let mut send = BLOCK.to_vec();
    send.extend(["--client-service-id", "7"]);
    let mut recv = BLOCK.to_vec();
    recv.extend(["--client-service-id", "9", "--time-limit-ms", "1000"]);
    let (s, r, relay) = transfer(&recv, &send, Some((0xff, 0)));
    assert_eq!(s.1["outcome"], "cancelled", "{}\n{}", s.1, s.2);
    assert!(
        s.1["detail"].as_str().unwrap().contains("UNREACH"),
        "{}",
        s.1
    );
    // licklider answers with CR (type 14) and creates no session (no §7.6
    // notice): the receiver has no outcome before its time limit.
    let types = relay.unwrap().forwarded_types.lock().unwrap().clone();
    assert!(types.contains(&14), "a CR crossed: {types:?}");
    assert_eq!(r.1["outcome"], "open", "{}", r.1);
    assert_eq!(r.1["red_bytes_delivered"], 0, "{}", r.1);
}

#[test]
fn cancel_after_red_delivery_reports_both_and_lingers() {
    // Every RS is lost: the receiver delivers the red part, the sender runs
    // out of checkpoint retransmissions and cancels (RLEXC); its CS reaches
    // the receiver, whose outcome is then "cancelled" with the red bytes
    // kept. licklider purges the CAS for the first CS (see the README), so
    // the sender resends its CS one timer later; the receiver, lingering,
    // must still be there to acknowledge it.
    let mut send = BLOCK.to_vec();
    send.extend(["--max-retransmissions", "1"]);
    let mut recv = BLOCK.to_vec();
    recv.extend(["--linger-ms", "1500"]);
    let (s, r, relay) = transfer(&recv, &send, Some((8, 1000)));
    let ctx = format!("sender {}\n{}\nreceiver {}\n{}", s.1, s.2, r.1, r.2);
    assert_eq!(s.1["outcome"], "cancelled", "{ctx}");
    assert_eq!(r.1["outcome"], "cancelled", "{ctx}");
    assert_eq!(r.0, 1, "{ctx}");
    assert_eq!(r.1["red_bytes_delivered"], 3000, "{ctx}");
    let detail = r.1["detail"].as_str().unwrap();
    assert!(
        detail.contains("red part delivered") && detail.contains("RLEXC"),
        "{ctx}"
    );
    let notices: Vec<&str> = r.1["notices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(notices.contains(&"RedPartReceived"), "{ctx}");
    assert_eq!(notices.last(), Some(&"ReceptionSessionCancelled"), "{ctx}");
    let types = relay.unwrap().forwarded_types.lock().unwrap().clone();
    assert!(
        types.iter().filter(|&&t| t == 12).count() >= 2,
        "CS resent: {types:?}"
    );
    assert!(
        types.contains(&13),
        "the lingering receiver sent a CAS: {types:?}"
    );
}

#[test]
fn session_closed_without_red_delivery_is_closed() {
    // One red segment (the checkpoint), always lost; both green segments
    // arrive: licklider closes the reception session on the green EOB with
    // no notice at all. That is outcome "closed", exit 5 (not "error").
    let mut send = BLOCK.to_vec();
    send.extend(["--red-len", "1000", "--max-retransmissions", "1"]);
    let mut recv = BLOCK.to_vec();
    recv.extend(["--red-len", "1000"]);
    let (s, r, _) = transfer(&recv, &send, Some((2, 1000)));
    let ctx = format!("sender {}\n{}\nreceiver {}\n{}", s.1, s.2, r.1, r.2);
    assert_eq!(r.1["outcome"], "closed", "{ctx}");
    assert_eq!(r.0, 5, "{ctx}");
    assert_eq!(r.1["red_bytes_delivered"], 0, "{ctx}");
    assert_eq!(r.1["green_bytes_delivered"], 4000, "{ctx}");
    assert_eq!(r.1["session_closed"], true, "{ctx}");
    assert_eq!(s.1["outcome"], "cancelled", "{ctx}");
}

/// An SDNV (RFC 5326 §3.2.1) at the start of `b`: its value and length.
fn sdnv(b: &[u8]) -> (u64, usize) {
    let mut v = 0u64;
    for (i, &x) in b.iter().enumerate() {
        v = (v << 7) | u64::from(x & 0x7f);
        if x & 0x80 == 0 {
            return (v, i + 1);
        }
    }
    panic!("truncated SDNV in {b:02x?}");
}

/// The implementers' guide's rule "read the network between every send"
/// (docs/implementers.md), with a stand-in receiver that floods nothing but
/// cancels: it answers the first data segment of a 2,000-segment block with
/// a CR (RFC 5326 §3.2.3, type 14, reason USR_CNCLD) and then counts the
/// data segments that still reach it. A harness that hands the socket to
/// licklider between sends lets the CR in while the block is going out, so
/// the sender cancels and stops before the end of its block (RFC 5326
/// §6.19: a cancelled session's queued segments are deleted). One that sends
/// everything licklider queued first, as this harness did until 2026-11-29,
/// lets all 2,000 out. How many go out before the CR is read depends on the
/// machine's scheduling (1,067 and 1,528 on a 2-core machine, 2026-12-03),
/// so the bound only tells those apart: under 1,900.
#[test]
fn a_cancel_reaches_a_sender_still_sending() {
    let stand_in = UdpSocket::bind("127.0.0.1:0").unwrap();
    sockbuf::raise_receive_buffer(&stand_in); // so that it counts every segment
    stand_in
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let peer = stand_in.local_addr().unwrap();
    let send_port = free_port();
    let send_addr: SocketAddr = format!("127.0.0.1:{send_port}").parse().unwrap();
    let sender = spawn(&args(&[
        "send",
        "--listen",
        &send_addr.to_string(),
        "--peer",
        &peer.to_string(),
        "--time-limit-ms",
        "5000",
        "--block-len",
        "2000000",
        "--red-len",
        "2000000",
        "--segment-size",
        "1000",
        "--rtx-timeout-ms",
        "1000",
    ]));
    let mut buf = [0u8; 65_536];
    let mut data = 0u32;
    let mut cancelled = false;
    while let Ok((n, src)) = stand_in.recv_from(&mut buf) {
        let ty = buf[0] & 0x0f;
        if ty <= 7 {
            data += 1;
        }
        if !cancelled && ty <= 7 {
            // the header: control byte, the session id (originator and
            // number, SDNVs), the extension counts; then the CR's reason
            let (_, a) = sdnv(&buf[1..n]);
            let (_, b) = sdnv(&buf[1 + a..n]);
            let mut cr = vec![0x0e];
            cr.extend_from_slice(&buf[1..1 + a + b]);
            cr.extend_from_slice(&[0x00, 0x00]); // no extensions; USR_CNCLD
            stand_in.send_to(&cr, src).unwrap();
            cancelled = true;
        }
    }
    let (_, sj, log) = finish(sender);
    assert_eq!(sj["outcome"], "cancelled", "{sj}\n{log}");
    eprintln!("{data} of 2,000 data segments went out");
    assert!(
        data < 1900,
        "{data} of 2,000 data segments went out: the CR was read only after them\n{log}"
    );
}
