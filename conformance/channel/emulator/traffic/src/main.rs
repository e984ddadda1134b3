//! dtnc-traffic: a UDP traffic generator and analyser for measuring a
//! channel (the dtnc-emu bridge, or any path): lossless throughput, one-way
//! delay, rate accuracy, loss, bit errors, duplicates, reordering, multicast.
//!
//! `send` writes paced datagrams whose payload carries a sequence number, the
//! CLOCK_REALTIME send time and filler derived from (seed, sequence); `recv`
//! takes each datagram's kernel receive timestamp (SO_TIMESTAMPNS) and checks
//! the payload. Sender and receiver must share a clock (network namespaces of
//! one kernel). Each prints one JSON object on stdout when it ends.
//!
//! Payload layout (multi-byte header fields big-endian):
//!
//! | bytes  | field                                                     |
//! |--------|-----------------------------------------------------------|
//! | 0..4   | magic 0x44544E54 ("DTNT")                                 |
//! | 4..12  | sequence number, 0, 1, 2, ... (consecutive over successful sends) |
//! | 12..20 | send time, CLOCK_REALTIME ns                              |
//! | 20..24 | header check: a 32-bit hash of bytes 0..20 (seed-free)    |
//! | 24..   | filler: splitmix64 words keyed by (seed, sequence), LE    |

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::process::exit;
use std::sync::atomic::Ordering;

use dtnc_sys::{install_signal_handlers as install_signals, mono_ns, real_ns, STOP};

use serde_json::{json, Value};

// ---------------------------------------------------------------------------
// Payload encoding and verification
// ---------------------------------------------------------------------------

const MAGIC: u32 = 0x4454_4E54;
/// Bytes 0..20 (magic, seq, time) are covered by the check in 20..24.
const HDR_LEN: usize = 24;
const MIN_SIZE: usize = HDR_LEN;
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64 finaliser.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The header check over (magic, seq, time). Independent of the seed, so a
/// receiver with the wrong seed sees corrupted filler, not corrupted headers.
fn header_check(magic: u32, seq: u64, tx: u64) -> u32 {
    let mut h = mix(0x5851_F42D_4C95_7F2D ^ magic as u64);
    h = mix(h ^ seq);
    h = mix(h.wrapping_add(GOLDEN) ^ tx);
    (h >> 32) as u32 ^ h as u32
}

fn filler_key(seed: u64, seq: u64) -> u64 {
    mix(seed.wrapping_mul(GOLDEN) ^ mix(seq ^ 0xD1B5_4A32_D192_ED03))
}

/// The k-th 8-byte word of the filler.
#[inline]
fn filler_word(key: u64, k: u64) -> u64 {
    mix(key.wrapping_add(k.wrapping_add(1).wrapping_mul(GOLDEN)))
}

/// Write the filler for (seed, seq) into `out` (the payload from byte 24).
fn write_filler(out: &mut [u8], seed: u64, seq: u64) {
    let key = filler_key(seed, seq);
    let mut chunks = out.chunks_exact_mut(8);
    let mut k = 0u64;
    for c in &mut chunks {
        c.copy_from_slice(&filler_word(key, k).to_le_bytes());
        k += 1;
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let w = filler_word(key, k).to_le_bytes();
        let n = rest.len();
        rest.copy_from_slice(&w[..n]);
    }
}

/// Number of bits in `data` (payload from byte 24) that differ from the filler
/// of (seed, seq).
fn filler_flips(data: &[u8], seed: u64, seq: u64) -> u64 {
    let key = filler_key(seed, seq);
    let mut flips = 0u64;
    let mut chunks = data.chunks_exact(8);
    let mut k = 0u64;
    for c in &mut chunks {
        let got = u64::from_le_bytes(c.try_into().unwrap());
        flips += (got ^ filler_word(key, k)).count_ones() as u64;
        k += 1;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let w = filler_word(key, k).to_le_bytes();
        for (a, b) in rest.iter().zip(w.iter()) {
            flips += (a ^ b).count_ones() as u64;
        }
    }
    flips
}

/// Write seq and filler (everything but the time and the check).
fn encode_body(pkt: &mut [u8], seed: u64, seq: u64) {
    pkt[0..4].copy_from_slice(&MAGIC.to_be_bytes());
    pkt[4..12].copy_from_slice(&seq.to_be_bytes());
    write_filler(&mut pkt[HDR_LEN..], seed, seq);
}

/// Stamp the send time and the header check (after `encode_body`).
fn encode_stamp(pkt: &mut [u8], seq: u64, tx_ns: u64) {
    pkt[12..20].copy_from_slice(&tx_ns.to_be_bytes());
    pkt[20..24].copy_from_slice(&header_check(MAGIC, seq, tx_ns).to_be_bytes());
}

#[cfg(test)]
fn encode(pkt: &mut [u8], seed: u64, seq: u64, tx_ns: u64) {
    encode_body(pkt, seed, seq);
    encode_stamp(pkt, seq, tx_ns);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Header {
    /// Header intact.
    Ok,
    /// Exactly one bit of bytes 0..24 was flipped; found and undone.
    Repaired,
    /// Corrupted beyond single-bit repair.
    Bad,
    /// Not one of ours (too short, or the magic differs in more than 8 bits).
    Foreign,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Verdict {
    header: Header,
    /// The sequence number, when it can be trusted (header Ok or Repaired,
    /// or a Bad header whose filler still matches its claimed sequence).
    seq: Option<u64>,
    /// Send time; only with an intact header.
    tx_ns: Option<u64>,
    /// Bits found flipped.
    flipped: u64,
    /// Bits over which `flipped` was counted.
    checked: u64,
}

fn rd_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}
fn rd_u64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().unwrap())
}

fn verify(pkt: &[u8], seed: u64) -> Verdict {
    let foreign = Verdict {
        header: Header::Foreign,
        seq: None,
        tx_ns: None,
        flipped: 0,
        checked: 0,
    };
    if pkt.len() < HDR_LEN {
        return foreign;
    }
    let magic = rd_u32(&pkt[0..]);
    let seq = rd_u64(&pkt[4..]);
    let tx = rd_u64(&pkt[12..]);
    let check = rd_u32(&pkt[20..]);
    let total_bits = pkt.len() as u64 * 8;
    let filler = &pkt[HDR_LEN..];
    if magic == MAGIC && header_check(magic, seq, tx) == check {
        return Verdict {
            header: Header::Ok,
            seq: Some(seq),
            tx_ns: Some(tx),
            flipped: filler_flips(filler, seed, seq),
            checked: total_bits,
        };
    }
    let magic_flips = (magic ^ MAGIC).count_ones() as u64;
    if magic_flips > 8 {
        return foreign;
    }
    // Single-bit repair: the flip may be in the check field itself...
    if magic == MAGIC && (header_check(magic, seq, tx) ^ check).count_ones() == 1 {
        return Verdict {
            header: Header::Repaired,
            seq: Some(seq),
            tx_ns: None,
            flipped: 1 + filler_flips(filler, seed, seq),
            checked: total_bits,
        };
    }
    // ... or in one of bytes 0..20.
    let mut hdr = [0u8; 20];
    hdr.copy_from_slice(&pkt[..20]);
    for bit in 0..160 {
        hdr[bit / 8] ^= 0x80 >> (bit % 8);
        let (m, s, t) = (rd_u32(&hdr[0..]), rd_u64(&hdr[4..]), rd_u64(&hdr[12..]));
        if m == MAGIC && header_check(m, s, t) == check {
            return Verdict {
                header: Header::Repaired,
                seq: Some(s),
                tx_ns: None,
                flipped: 1 + filler_flips(filler, seed, s),
                checked: total_bits,
            };
        }
        hdr[bit / 8] ^= 0x80 >> (bit % 8);
    }
    // Two or more header bits flipped. Trust the claimed sequence if its
    // filler matches (at most a quarter of the filler bits differ; a wrong
    // sequence gives about half).
    let filler_bits = filler.len() as u64 * 8;
    let ff = filler_flips(filler, seed, seq);
    if filler_bits >= 64 && ff * 4 <= filler_bits {
        Verdict {
            header: Header::Bad,
            seq: Some(seq),
            tx_ns: None,
            flipped: magic_flips + ff,
            checked: 32 + filler_bits,
        }
    } else {
        Verdict {
            header: Header::Bad,
            seq: None,
            tx_ns: None,
            flipped: magic_flips,
            checked: 32,
        }
    }
}

// ---------------------------------------------------------------------------
// Statistics: a log-linear histogram of signed nanosecond values
// ---------------------------------------------------------------------------

/// Values below 2^(SUB+1) ns are kept exactly; above, each power of two is
/// split into 2^SUB buckets (relative error at most 2^-(SUB+1), < 0.05 %).
const SUB: u32 = 10;
const EXACT: u64 = 1 << (SUB + 1);

fn bucket_of(v: u64) -> usize {
    if v < EXACT {
        v as usize
    } else {
        let e = 63 - v.leading_zeros(); // >= SUB + 1
        let shift = e - SUB;
        ((shift as u64) << SUB) as usize + (v >> shift) as usize
    }
}

/// Midpoint of a bucket (exact value for the exact range).
fn bucket_value(i: usize) -> u64 {
    let i = i as u64;
    if i < EXACT {
        i
    } else {
        // i = shift*2^SUB + m with m in [2^SUB, 2^(SUB+1)).
        let shift = (i >> SUB) - 1;
        let m = i - (shift << SUB);
        let lo = m << shift;
        lo + ((1u64 << shift) >> 1)
    }
}

#[derive(Debug, Clone)]
struct Hist {
    pos: Vec<u64>,
    neg: Vec<u64>,
    n: u64,
    sum: i128,
    sumsq: f64,
    min: i64,
    max: i64,
}

impl Hist {
    fn new() -> Hist {
        Hist {
            pos: Vec::new(),
            neg: Vec::new(),
            n: 0,
            sum: 0,
            sumsq: 0.0,
            min: i64::MAX,
            max: i64::MIN,
        }
    }

    fn add(&mut self, v: i64) {
        let (vec, mag) = if v >= 0 {
            (&mut self.pos, v as u64)
        } else {
            (&mut self.neg, v.unsigned_abs())
        };
        let b = bucket_of(mag);
        if vec.len() <= b {
            vec.resize(b + 1, 0);
        }
        vec[b] += 1;
        self.n += 1;
        self.sum += v as i128;
        self.sumsq += (v as f64) * (v as f64);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum as f64 / self.n as f64)
    }

    fn stddev(&self) -> Option<f64> {
        let m = self.mean()?;
        Some((self.sumsq / self.n as f64 - m * m).max(0.0).sqrt())
    }

    /// Nearest-rank percentile: the smallest recorded value v such that at
    /// least p % of the values are <= v (to the bucket resolution).
    fn percentile(&self, p: f64) -> Option<i64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((p / 100.0 * self.n as f64).ceil() as u64).clamp(1, self.n);
        // The extremes are known exactly.
        if rank == 1 {
            return Some(self.min);
        }
        if rank == self.n {
            return Some(self.max);
        }
        let mut cum = 0u64;
        for (i, &c) in self.neg.iter().enumerate().rev() {
            cum += c;
            if c > 0 && cum >= rank {
                return Some((-(bucket_value(i) as i64)).clamp(self.min, self.max));
            }
        }
        for (i, &c) in self.pos.iter().enumerate() {
            cum += c;
            if c > 0 && cum >= rank {
                return Some((bucket_value(i) as i64).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    /// Summary in microseconds.
    fn summary_us(&self) -> serde_json::Map<String, Value> {
        let us = |v: Option<i64>| v.map(|x| x as f64 / 1e3);
        let mut m = serde_json::Map::new();
        m.insert("count".into(), json!(self.n));
        m.insert("min".into(), json!(us((self.n > 0).then_some(self.min))));
        m.insert("mean".into(), json!(self.mean().map(|x| x / 1e3)));
        m.insert("stddev".into(), json!(self.stddev().map(|x| x / 1e3)));
        m.insert("p50".into(), json!(us(self.percentile(50.0))));
        m.insert("p90".into(), json!(us(self.percentile(90.0))));
        m.insert("p99".into(), json!(us(self.percentile(99.0))));
        m.insert("p999".into(), json!(us(self.percentile(99.9))));
        m.insert("max".into(), json!(us((self.n > 0).then_some(self.max))));
        m
    }
}

// ---------------------------------------------------------------------------
// System helpers
// ---------------------------------------------------------------------------

// Generic Linux socket option numbers (x86_64, aarch64, ...).
const SO_NO_CHECK: libc::c_int = 11;
const SO_RCVBUFFORCE: libc::c_int = 33;
const SO_SNDBUFFORCE: libc::c_int = 32;
const SO_TIMESTAMPNS: libc::c_int = 35;
const SO_RXQ_OVFL: libc::c_int = 40;

/// Sleep until CLOCK_MONOTONIC reaches `t` (returns early on a signal).
fn sleep_until(t: u64) {
    let ts = libc::timespec {
        tv_sec: (t / 1_000_000_000) as libc::time_t,
        tv_nsec: (t % 1_000_000_000) as libc::c_long,
    };
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn errno_name(e: i32) -> String {
    match e {
        libc::ENOBUFS => "ENOBUFS".into(),
        libc::EAGAIN => "EAGAIN".into(),
        libc::ECONNREFUSED => "ECONNREFUSED".into(),
        libc::ENETUNREACH => "ENETUNREACH".into(),
        libc::EHOSTUNREACH => "EHOSTUNREACH".into(),
        libc::ENETDOWN => "ENETDOWN".into(),
        libc::EMSGSIZE => "EMSGSIZE".into(),
        libc::EPERM => "EPERM".into(),
        libc::EACCES => "EACCES".into(),
        libc::EINVAL => "EINVAL".into(),
        libc::ENOMEM => "ENOMEM".into(),
        libc::EDESTADDRREQ => "EDESTADDRREQ".into(),
        e => format!("E{e}"),
    }
}

fn cpu_seconds() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn sockaddr_of(a: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match a {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*v4.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in, sin) };
            (
                ss,
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in6, sin6) };
            (
                ss,
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            )
        }
    }
}

fn sockaddr_to(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    unsafe {
        match ss.ss_family as libc::c_int {
            libc::AF_INET => {
                let sin = &*(ss as *const _ as *const libc::sockaddr_in);
                let ip = std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                Some(SocketAddr::new(IpAddr::V4(ip), u16::from_be(sin.sin_port)))
            }
            libc::AF_INET6 => {
                let sin6 = &*(ss as *const _ as *const libc::sockaddr_in6);
                let ip = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                Some(SocketAddr::new(
                    IpAddr::V6(ip),
                    u16::from_be(sin6.sin6_port),
                ))
            }
            _ => None,
        }
    }
}

fn setsockopt_int(fd: i32, level: i32, opt: i32, v: i32) -> bool {
    unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            &v as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        ) == 0
    }
}

fn getsockopt_int(fd: i32, level: i32, opt: i32) -> i32 {
    let mut v: i32 = 0;
    let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
    unsafe {
        libc::getsockopt(
            fd,
            level,
            opt,
            &mut v as *mut i32 as *mut libc::c_void,
            &mut len,
        )
    };
    v
}

fn fatal(what: &str) -> ! {
    eprintln!("dtnc-traffic: {what}: {}", std::io::Error::last_os_error());
    exit(1);
}

fn udp_socket(v6: bool) -> i32 {
    let fam = if v6 { libc::AF_INET6 } else { libc::AF_INET };
    let fd = unsafe { libc::socket(fam, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        fatal("socket");
    }
    fd
}

fn bind_fd(fd: i32, a: &SocketAddr) {
    let (ss, len) = sockaddr_of(a);
    if unsafe { libc::bind(fd, &ss as *const _ as *const libc::sockaddr, len) } != 0 {
        fatal(&format!("bind {a}"));
    }
}

fn local_addr(fd: i32) -> Option<SocketAddr> {
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    if unsafe { libc::getsockname(fd, &mut ss as *mut _ as *mut libc::sockaddr, &mut len) } != 0 {
        return None;
    }
    sockaddr_to(&ss)
}

/// The socket's drop counter from /proc/self/net/udp{,6} (the "drops"
/// column of the line with the socket's inode): unlike SO_RXQ_OVFL, which
/// only arrives with a later datagram, it includes drops after the last one.
fn proc_udp_drops(fd: i32) -> Option<u64> {
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return None;
    }
    let inode = st.st_ino.to_string();
    for f in ["/proc/self/net/udp", "/proc/self/net/udp6"] {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
            if cols.len() >= 13 && cols[9] == inode {
                return cols[12].parse().ok();
            }
        }
    }
    None
}

/// Interface index from a name or a number (IPv6 multicast).
fn if_index(s: &str) -> Option<u32> {
    if let Ok(n) = s.parse::<u32>() {
        return Some(n);
    }
    let c = std::ffi::CString::new(s).ok()?;
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i)
}

// ---------------------------------------------------------------------------
// Argument parsing
// ---------------------------------------------------------------------------

const USAGE: &str = "\
usage:
  dtnc-traffic send --dst IP:PORT [options]   paced UDP test traffic
  dtnc-traffic recv --bind IP:PORT [options]  receive, check and summarise
  dtnc-traffic --help

send options:
  --dst IP:PORT       destination, unicast or multicast ([IPv6]:PORT too)
  --bind IP[:PORT]    source address (default: the kernel's choice)
  --size BYTES        UDP payload bytes, at least 24 (default 1024)
  --pps N             pace at N packets/s (fractions allowed)
  --bps N             pace at N bit/s counting IP datagram bytes:
                      payload + 8 (UDP) + 20 (IPv4 header; 40 for IPv6)
  --eth-bps N         pace at N bit/s counting Ethernet frame bytes:
                      payload + 42 (14 MAC + 20 IPv4 + 8 UDP; 62 for IPv6),
                      no preamble, FCS or inter-frame gap
                      (none of --pps/--bps/--eth-bps: unpaced, flat out)
  --count N           send slots to use (default: unlimited); a slot whose
                      send fails is counted in send_errors and its sequence
                      number is reused, so sequence numbers stay consecutive
  --duration S        stop when the next packet would be due S s after start
  --batch K           at most K packets per sendmmsg, used when behind
                      schedule or unpaced (default 32)
  --spin-us U|auto    wake U microseconds before a due time and busy-wait
                      the rest; auto (default) learns the sleep overshoot
                      and wakes that much + 5 us early (at most 100 us);
                      0 = sleep only, never spin
  --ttl N             IP TTL / hop limit, unicast and multicast
  --mcast-if IP       multicast output interface (IPv4 address; for IPv6 an
                      interface name or index)
  --sndbuf BYTES      socket send buffer (default: system default)
  --no-udp-csum       send IPv4 UDP with checksum 0 (SO_NO_CHECK), so
                      payload bit errors reach the receiver
  --seed S            filler seed, must match the receiver's (default 1)
  Schedule: packet i is due at t0 + i/rate (absolute, no drift); late
  packets go out at once, up to --batch per call. Send errors (ENOBUFS:
  IP_RECVERR is on; ECONNREFUSED; ...) are counted, never fatal.

recv options:
  --bind IP:PORT      local address (port 0: any; printed in the ready line)
  --group IP          join this multicast group ...
  --mcast-if IP       ... on the interface with this IPv4 address (IPv6:
                      interface name or index; default: any / the kernel's)
  --duration S        stop S seconds after the ready line
  --count N           stop after N datagrams
  --idle S            stop after S seconds without datagrams once one has
                      arrived (default 2; 0 = never)
  --expect N          the sender sent sequence numbers 0..N-1 (its \"sent\");
                      without it, loss is counted up to the highest seen
  --size BYTES        expected payload size (others count as length_mismatch)
  --seed S            filler seed, must match the sender's (default 1)
  --min-delay-us D    count delays below D microseconds as \"early\"
  --rcvbuf BYTES      receive buffer (default 33554432; forced as root)
  --per-packet FILE   write a CSV line per datagram:
                      seq,tx_ns,rx_ns,len,corrupt_bits (first line a header;
                      seq and tx_ns empty when not trustworthy)
  Ready line on stderr: \"listening on IP:PORT\". SIGINT/SIGTERM end
  either command with its JSON summary and exit status 0.

Summaries: one JSON object on stdout. Rates are (n-1)/(t_last - t_first)
over send (CLOCK_REALTIME) or kernel receive timestamps. Delay = receive
timestamp - embedded send time, first copies with an intact header only.

Payload: magic 0x44544E54, seq u64, CLOCK_REALTIME send ns u64, 32-bit
header check (all big-endian), then filler keyed by (seed, seq).
";

fn usage_error(cmd: &str, opt: &str, why: &str) -> ! {
    eprintln!("dtnc-traffic {cmd}: bad option {opt}: {why}");
    eprint!("{USAGE}");
    exit(2);
}

/// Splits `--opt=value` / `--opt value`.
struct Args {
    cmd: &'static str,
    it: std::vec::IntoIter<String>,
}

impl Args {
    fn next_opt(&mut self) -> Option<(String, Option<String>)> {
        let a = self.it.next()?;
        if let Some((k, v)) = a.split_once('=') {
            if k.starts_with("--") {
                return Some((k.to_string(), Some(v.to_string())));
            }
        }
        Some((a, None))
    }

    fn value(&mut self, opt: &str, inline: Option<String>) -> String {
        inline
            .or_else(|| self.it.next())
            .unwrap_or_else(|| usage_error(self.cmd, opt, "needs a value"))
    }

    fn parse<T: std::str::FromStr>(&mut self, opt: &str, inline: Option<String>, what: &str) -> T {
        let v = self.value(opt, inline);
        v.parse()
            .unwrap_or_else(|_| usage_error(self.cmd, opt, &format!("expected {what}, got {v:?}")))
    }

    fn positive_f64(&mut self, opt: &str, inline: Option<String>) -> f64 {
        let v: f64 = self.parse(opt, inline, "a number");
        if !(v.is_finite() && v > 0.0) {
            usage_error(self.cmd, opt, "must be a positive number");
        }
        v
    }

    fn nonneg_f64(&mut self, opt: &str, inline: Option<String>) -> f64 {
        let v: f64 = self.parse(opt, inline, "a number");
        if !(v.is_finite() && v >= 0.0) {
            usage_error(self.cmd, opt, "must be a number >= 0");
        }
        v
    }
}

fn parse_ip_port(cmd: &str, opt: &str, s: &str, port_optional: bool) -> SocketAddr {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return a;
    }
    if port_optional {
        if let Ok(ip) = s
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        {
            return SocketAddr::new(ip, 0);
        }
    }
    usage_error(cmd, opt, &format!("expected IP:PORT, got {s:?}"))
}

// ---------------------------------------------------------------------------
// send
// ---------------------------------------------------------------------------

enum Pace {
    Unpaced,
    Pps(f64),
    Bps(f64),
    EthBps(f64),
}

struct SendOpts {
    dst: SocketAddr,
    bind: Option<SocketAddr>,
    size: usize,
    pace: Pace,
    count: Option<u64>,
    duration: Option<f64>,
    batch: usize,
    /// None: adaptive.
    spin_us: Option<f64>,
    ttl: Option<i32>,
    mcast_if: Option<String>,
    sndbuf: Option<i32>,
    no_csum: bool,
    seed: u64,
}

fn parse_send(argv: Vec<String>) -> SendOpts {
    let mut a = Args {
        cmd: "send",
        it: argv.into_iter(),
    };
    let mut dst = None;
    let mut o = SendOpts {
        dst: SocketAddr::from(([0, 0, 0, 0], 0)),
        bind: None,
        size: 1024,
        pace: Pace::Unpaced,
        count: None,
        duration: None,
        batch: 32,
        spin_us: None,
        ttl: None,
        mcast_if: None,
        sndbuf: None,
        no_csum: false,
        seed: 1,
    };
    let mut paced_by: Option<String> = None;
    while let Some((k, inline)) = a.next_opt() {
        let mut set_pace = |k: &str, p: Pace, o: &mut SendOpts| {
            if let Some(prev) = &paced_by {
                usage_error("send", k, &format!("conflicts with {prev}"));
            }
            paced_by = Some(k.to_string());
            o.pace = p;
        };
        match k.as_str() {
            "--dst" => {
                let v = a.value(&k, inline);
                dst = Some(parse_ip_port("send", &k, &v, false));
            }
            "--bind" => {
                let v = a.value(&k, inline);
                o.bind = Some(parse_ip_port("send", &k, &v, true));
            }
            "--size" => {
                o.size = a.parse(&k, inline, "a byte count");
                if !(MIN_SIZE..=65507).contains(&o.size) {
                    usage_error("send", &k, &format!("must be {MIN_SIZE}..65507"));
                }
            }
            "--pps" => {
                let v = a.positive_f64(&k, inline);
                set_pace(&k, Pace::Pps(v), &mut o);
            }
            "--bps" => {
                let v = a.positive_f64(&k, inline);
                set_pace(&k, Pace::Bps(v), &mut o);
            }
            "--eth-bps" => {
                let v = a.positive_f64(&k, inline);
                set_pace(&k, Pace::EthBps(v), &mut o);
            }
            "--count" => o.count = Some(a.parse(&k, inline, "a count")),
            "--duration" => o.duration = Some(a.positive_f64(&k, inline)),
            "--batch" => {
                o.batch = a.parse(&k, inline, "a count");
                if !(1..=1024).contains(&o.batch) {
                    usage_error("send", &k, "must be 1..1024");
                }
            }
            "--spin-us" => {
                let v = a.value(&k, inline);
                o.spin_us = if v == "auto" {
                    None
                } else {
                    match v.parse::<f64>() {
                        Ok(x) if x.is_finite() && x >= 0.0 => Some(x),
                        _ => usage_error(
                            "send",
                            &k,
                            &format!("expected microseconds or auto, got {v:?}"),
                        ),
                    }
                };
            }
            "--ttl" => {
                let t: i32 = a.parse(&k, inline, "a TTL");
                if !(0..=255).contains(&t) {
                    usage_error("send", &k, "must be 0..255");
                }
                o.ttl = Some(t);
            }
            "--mcast-if" => o.mcast_if = Some(a.value(&k, inline)),
            "--sndbuf" => o.sndbuf = Some(a.parse(&k, inline, "a byte count")),
            "--no-udp-csum" => o.no_csum = true,
            "--seed" => o.seed = a.parse(&k, inline, "an unsigned integer"),
            "-h" | "--help" => {
                print!("{USAGE}");
                exit(0);
            }
            _ => usage_error("send", &k, "unknown option"),
        }
    }
    o.dst = dst.unwrap_or_else(|| usage_error("send", "--dst", "is required"));
    if let Some(b) = o.bind {
        if b.is_ipv4() != o.dst.is_ipv4() {
            usage_error("send", "--bind", "address family differs from --dst");
        }
    }
    o
}

/// Discard queued ICMP errors (IP_RECVERR queues them as well as
/// reporting them), so they do not pile up in the socket's memory.
fn drain_errqueue(fd: i32) {
    let mut buf = [0u8; 2048];
    let mut cbuf = [0u64; 64];
    for _ in 0..64 {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
        if unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) } < 0 {
            break;
        }
    }
}

fn setup_send_socket(o: &SendOpts) -> i32 {
    let v6 = o.dst.is_ipv6();
    let fd = udp_socket(v6);
    if let Some(b) = o.sndbuf {
        if !setsockopt_int(fd, libc::SOL_SOCKET, SO_SNDBUFFORCE, b)
            && !setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, b)
        {
            fatal("SO_SNDBUF");
        }
    }
    if o.no_csum && !v6 && !setsockopt_int(fd, libc::SOL_SOCKET, SO_NO_CHECK, 1) {
        fatal("SO_NO_CHECK");
    }
    // Without IP_RECVERR the kernel hides local drops (ENOBUFS from a full
    // device queue) from UDP senders; with it they are reported per send.
    let recverr = if v6 {
        setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVERR, 1)
    } else {
        setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_RECVERR, 1)
    };
    if !recverr {
        fatal("IP_RECVERR");
    }
    if let Some(t) = o.ttl {
        let ok = if v6 {
            setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_UNICAST_HOPS, t)
                && setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_HOPS, t)
        } else {
            setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_TTL, t)
                && setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_MULTICAST_TTL, t)
        };
        if !ok {
            fatal("TTL");
        }
    }
    if let Some(ifs) = &o.mcast_if {
        if v6 {
            let idx = if_index(ifs)
                .unwrap_or_else(|| usage_error("send", "--mcast-if", "unknown interface"));
            if !setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_IF, idx as i32) {
                fatal("IPV6_MULTICAST_IF");
            }
        } else {
            let ip: std::net::Ipv4Addr = ifs
                .parse()
                .unwrap_or_else(|_| usage_error("send", "--mcast-if", "expected an IPv4 address"));
            let a = libc::in_addr {
                s_addr: u32::from(ip).to_be(),
            };
            let r = unsafe {
                libc::setsockopt(
                    fd,
                    libc::IPPROTO_IP,
                    libc::IP_MULTICAST_IF,
                    &a as *const _ as *const libc::c_void,
                    std::mem::size_of::<libc::in_addr>() as libc::socklen_t,
                )
            };
            if r != 0 {
                fatal("IP_MULTICAST_IF");
            }
        }
    }
    if let Some(b) = &o.bind {
        bind_fd(fd, b);
    }
    let (ss, len) = sockaddr_of(&o.dst);
    if unsafe { libc::connect(fd, &ss as *const _ as *const libc::sockaddr, len) } != 0 {
        fatal(&format!("connect {}", o.dst));
    }
    fd
}

fn cmd_send(argv: Vec<String>) {
    let o = parse_send(argv);
    install_signals();
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    let fd = setup_send_socket(&o);

    let size = o.size;
    let ip_overhead = if o.dst.is_ipv6() { 48 } else { 28 };
    let eth_overhead = ip_overhead + 14;
    let pps = match o.pace {
        Pace::Unpaced => None,
        Pace::Pps(p) => Some(p),
        Pace::Bps(b) => Some(b / (8.0 * (size + ip_overhead) as f64)),
        Pace::EthBps(b) => Some(b / (8.0 * (size + eth_overhead) as f64)),
    };
    let interval = pps.map(|p| 1e9 / p);
    // How early to wake before a due time (then spin): fixed, or adaptive
    // from the observed overshoot of clock_nanosleep.
    const AUTO_MAX_LEAD: u64 = 100_000;
    const AUTO_MARGIN: u64 = 5_000;
    let mut lead_ns = match o.spin_us {
        Some(u) => (u * 1e3) as u64,
        None => AUTO_MARGIN + 45_000,
    };
    // Running 75th percentile of the overshoot (stochastic quantile
    // estimate: robust against the occasional millisecond stall).
    let mut oversleep_q = 45_000f64;
    let mut oversleep = Hist::new();
    let k = o.batch;

    let mut bufs = vec![0u8; k * size];
    let mut iov: Vec<libc::iovec> = (0..k)
        .map(|j| libc::iovec {
            iov_base: bufs[j * size..].as_mut_ptr() as *mut libc::c_void,
            iov_len: size,
        })
        .collect();
    let mut hdrs: Vec<libc::mmsghdr> = (0..k)
        .map(|j| {
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_iov = &mut iov[j];
            h.msg_hdr.msg_iovlen = 1;
            h
        })
        .collect();

    let mut late = Hist::new();
    let mut errors: HashMap<String, u64> = HashMap::new();
    let mut send_errors = 0u64;
    let mut seq = 0u64; // next sequence number == packets sent
    let mut slot = 0u64; // next schedule slot
    let mut batches = 0u64;
    let mut max_batch = 0usize;
    let mut first_tx: Option<u64> = None;
    let mut last_tx = 0u64;
    let cpu0 = cpu_seconds();

    // Warm up the send path (buffer pages, histogram memory, vDSO clocks) so
    // the first packet is not late, then start 1 ms ahead.
    for j in 0..k {
        encode_body(&mut bufs[j * size..(j + 1) * size], o.seed, j as u64);
        encode_stamp(&mut bufs[j * size..(j + 1) * size], j as u64, real_ns());
    }
    late.add(0);
    late.add(1 << 40);
    late = Hist {
        pos: vec![0; late.pos.len()],
        ..Hist::new()
    };
    let t0 = mono_ns() + 1_000_000;
    let t_end = o.duration.map(|d| t0 + (d * 1e9) as u64);
    let due = |i: u64| -> u64 {
        match interval {
            Some(iv) => t0 + (i as f64 * iv) as u64,
            None => t0,
        }
    };
    // Spin into the first due time: the first wake-up after a long sleep
    // tends to be the latest.
    sleep_until(t0 - 300_000);
    while mono_ns() < t0 {
        std::hint::spin_loop();
    }

    let stopped_by = loop {
        if STOP.load(Ordering::Relaxed) {
            break "signal";
        }
        if o.count.is_some_and(|c| slot >= c) {
            break "count";
        }
        let d = due(slot);
        if let Some(te) = t_end {
            let at = if interval.is_some() { d } else { mono_ns() };
            if at >= te {
                break "duration";
            }
        }
        let mut now = mono_ns();
        if now < d {
            if d - now > lead_ns {
                let target = d - lead_ns;
                sleep_until(target);
                let over = mono_ns().saturating_sub(target);
                oversleep.add(over as i64);
                if o.spin_us.is_none() {
                    oversleep_q += if over as f64 > oversleep_q {
                        750.0
                    } else {
                        -250.0
                    };
                    oversleep_q = oversleep_q.clamp(0.0, AUTO_MAX_LEAD as f64);
                    lead_ns = (oversleep_q as u64 + AUTO_MARGIN).min(AUTO_MAX_LEAD);
                }
                continue; // re-check signals and time
            }
            while now < d {
                std::hint::spin_loop();
                now = mono_ns();
            }
        }
        // How many slots are due by now (at least this one)?
        let mut n = match interval {
            Some(iv) => {
                let due_by_now = ((now - t0) as f64 / iv) as u64 + 1; // slots 0..due_by_now are due
                (due_by_now.saturating_sub(slot)).clamp(1, k as u64) as usize
            }
            None => k,
        };
        if let Some(c) = o.count {
            n = n.min((c - slot) as usize);
        }
        if let (Some(te), Some(_)) = (t_end, interval) {
            while n > 1 && due(slot + n as u64 - 1) >= te {
                n -= 1;
            }
        }
        for j in 0..n {
            encode_body(&mut bufs[j * size..(j + 1) * size], o.seed, seq + j as u64);
        }
        let tx = real_ns();
        for j in 0..n {
            encode_stamp(&mut bufs[j * size..(j + 1) * size], seq + j as u64, tx);
        }
        let send_mono = mono_ns();
        let r = unsafe { libc::sendmmsg(fd, hdrs.as_mut_ptr(), n as libc::c_uint, 0) };
        batches += 1;
        let (ok, failed) = if r < 0 {
            let e = errno();
            if e == libc::EINTR {
                continue;
            }
            *errors.entry(errno_name(e)).or_insert(0) += 1;
            send_errors += 1;
            drain_errqueue(fd);
            (0usize, true)
        } else if (r as usize) < n && !STOP.load(Ordering::Relaxed) {
            // sendmmsg stops at a failing datagram but reports only the
            // ones sent before it; the error itself is lost.
            *errors.entry("batch_cut_short".into()).or_insert(0) += 1;
            send_errors += 1;
            (r as usize, true)
        } else {
            (r as usize, false)
        };
        if ok > 0 {
            max_batch = max_batch.max(ok);
            first_tx.get_or_insert(tx);
            last_tx = tx;
            if interval.is_some() {
                for j in 0..ok {
                    late.add(send_mono as i64 - due(slot + j as u64) as i64);
                }
            }
        }
        seq += ok as u64;
        // A failed packet uses up its slot; its sequence number is reused.
        // The rest of a batch cut short waits for the next round.
        slot += ok as u64 + failed as u64;
    };
    let wall = (mono_ns().saturating_sub(t0)) as f64 / 1e9;
    let cpu = cpu_seconds() - cpu0;

    let span = first_tx.map(|f| (last_tx - f) as f64 / 1e9).unwrap_or(0.0);
    let rate = |bytes_per_pkt: usize| -> Option<f64> {
        (seq >= 2 && span > 0.0).then(|| (seq - 1) as f64 * bytes_per_pkt as f64 * 8.0 / span)
    };
    let mut errs = serde_json::Map::new();
    let mut ev: Vec<_> = errors.into_iter().collect();
    ev.sort();
    for (k, v) in ev {
        errs.insert(k, json!(v));
    }
    let mut late_m = late.summary_us();
    late_m.remove("stddev");
    let summary = json!({
        "mode": "send",
        "dst": o.dst.to_string(),
        "src": local_addr(fd).map(|a| a.to_string()),
        "size": size,
        "seed": o.seed,
        "target_pps": pps,
        "target_eth_bps": pps.map(|p| p * ((size + eth_overhead) * 8) as f64),
        "sent": seq,
        "slots": slot,
        "send_errors": send_errors,
        "errors": Value::Object(errs),
        "first_tx_ns": first_tx,
        "last_tx_ns": first_tx.map(|_| last_tx),
        "duration_s": span,
        "pps": (seq >= 2 && span > 0.0).then(|| (seq - 1) as f64 / span),
        "payload_bps": rate(size),
        "ip_bps": rate(size + ip_overhead),
        "eth_bps": rate(size + eth_overhead),
        "batches": batches,
        "max_batch": max_batch,
        "late_us": Value::Object(late_m),
        "wake_lead_us": lead_ns as f64 / 1e3,
        "oversleep_us": Value::Object(oversleep.summary_us()),
        "wall_s": wall,
        "cpu_s": cpu,
        "stopped_by": stopped_by,
    });
    println!("{summary}");
}

// ---------------------------------------------------------------------------
// recv
// ---------------------------------------------------------------------------

struct RecvOpts {
    bind: SocketAddr,
    group: Option<IpAddr>,
    mcast_if: Option<String>,
    duration: Option<f64>,
    count: Option<u64>,
    idle: f64,
    expect: Option<u64>,
    size: Option<usize>,
    seed: u64,
    min_delay_us: Option<f64>,
    rcvbuf: i32,
    per_packet: Option<String>,
}

fn parse_recv(argv: Vec<String>) -> RecvOpts {
    let mut a = Args {
        cmd: "recv",
        it: argv.into_iter(),
    };
    let mut bind = None;
    let mut o = RecvOpts {
        bind: SocketAddr::from(([0, 0, 0, 0], 0)),
        group: None,
        mcast_if: None,
        duration: None,
        count: None,
        idle: 2.0,
        expect: None,
        size: None,
        seed: 1,
        min_delay_us: None,
        rcvbuf: 32 << 20,
        per_packet: None,
    };
    while let Some((k, inline)) = a.next_opt() {
        match k.as_str() {
            "--bind" => {
                let v = a.value(&k, inline);
                bind = Some(parse_ip_port("recv", &k, &v, false));
            }
            "--group" => {
                let g: IpAddr = a.parse(&k, inline, "an IP address");
                if !g.is_multicast() {
                    usage_error("recv", &k, "not a multicast address");
                }
                o.group = Some(g);
            }
            "--mcast-if" => o.mcast_if = Some(a.value(&k, inline)),
            "--duration" => o.duration = Some(a.positive_f64(&k, inline)),
            "--count" => o.count = Some(a.parse(&k, inline, "a count")),
            "--idle" => o.idle = a.nonneg_f64(&k, inline),
            "--expect" => o.expect = Some(a.parse(&k, inline, "a count")),
            "--size" => {
                let s: usize = a.parse(&k, inline, "a byte count");
                if !(MIN_SIZE..=65507).contains(&s) {
                    usage_error("recv", &k, &format!("must be {MIN_SIZE}..65507"));
                }
                o.size = Some(s);
            }
            "--seed" => o.seed = a.parse(&k, inline, "an unsigned integer"),
            "--min-delay-us" => o.min_delay_us = Some(a.nonneg_f64(&k, inline)),
            "--rcvbuf" => {
                o.rcvbuf = a.parse(&k, inline, "a byte count");
                if o.rcvbuf <= 0 {
                    usage_error("recv", &k, "must be positive");
                }
            }
            "--per-packet" => o.per_packet = Some(a.value(&k, inline)),
            "-h" | "--help" => {
                print!("{USAGE}");
                exit(0);
            }
            _ => usage_error("recv", &k, "unknown option"),
        }
    }
    o.bind = bind.unwrap_or_else(|| usage_error("recv", "--bind", "is required"));
    if let Some(g) = o.group {
        if g.is_ipv4() != o.bind.is_ipv4() {
            usage_error("recv", "--group", "address family differs from --bind");
        }
    }
    if o.mcast_if.is_some() && o.group.is_none() {
        usage_error("recv", "--mcast-if", "needs --group");
    }
    o
}

/// Which sequence numbers have arrived: a sparse bitset of 64 Ki-bit pages.
struct SeqSet {
    pages: HashMap<u64, Box<[u64; 1024]>>,
}

impl SeqSet {
    fn new() -> SeqSet {
        SeqSet {
            pages: HashMap::new(),
        }
    }
    /// Marks `seq`; true if it was new.
    fn insert(&mut self, seq: u64) -> bool {
        let page = self
            .pages
            .entry(seq >> 16)
            .or_insert_with(|| Box::new([0u64; 1024]));
        let w = &mut page[((seq >> 6) & 1023) as usize];
        let bit = 1u64 << (seq & 63);
        let new = *w & bit == 0;
        *w |= bit;
        new
    }
}

struct RecvStats {
    received: u64,
    bytes: u64,
    ip_overhead: u64,
    first_len: u64,
    foreign: u64,
    truncated: u64,
    length_mismatch: u64,
    unique: u64,
    duplicates: u64,
    reordered: u64,
    reorder_max: u64,
    out_of_range: u64,
    max_seq: Option<u64>,
    corrupted: u64,
    corrupted_header: u64,
    header_repaired: u64,
    unattributed: u64,
    flipped_bits: u64,
    bits_checked: u64,
    delay: Hist,
    early: u64,
    ts_fallback: u64,
    first_rx: Option<u64>,
    last_rx: u64,
    kernel_drops: u64,
    seen: SeqSet,
}

impl RecvStats {
    fn new(ip_overhead: u64) -> RecvStats {
        RecvStats {
            received: 0,
            bytes: 0,
            ip_overhead,
            first_len: 0,
            foreign: 0,
            truncated: 0,
            length_mismatch: 0,
            unique: 0,
            duplicates: 0,
            reordered: 0,
            reorder_max: 0,
            out_of_range: 0,
            max_seq: None,
            corrupted: 0,
            corrupted_header: 0,
            header_repaired: 0,
            unattributed: 0,
            flipped_bits: 0,
            bits_checked: 0,
            delay: Hist::new(),
            early: 0,
            ts_fallback: 0,
            first_rx: None,
            last_rx: 0,
            kernel_drops: 0,
            seen: SeqSet::new(),
        }
    }

    /// Account one datagram; returns the verdict for the per-packet log.
    fn packet(&mut self, pkt: &[u8], rx_ns: u64, o: &RecvOpts, early_ns: Option<i64>) -> Verdict {
        self.received += 1;
        self.bytes += pkt.len() as u64;
        if self.first_rx.is_none() {
            self.first_rx = Some(rx_ns);
            self.first_len = pkt.len() as u64;
        }
        self.last_rx = rx_ns;
        if o.size.is_some_and(|s| s != pkt.len()) {
            self.length_mismatch += 1;
        }
        let v = verify(pkt, o.seed);
        match v.header {
            Header::Foreign => {
                self.foreign += 1;
                return v;
            }
            Header::Ok => {}
            Header::Repaired => {
                self.corrupted_header += 1;
                self.header_repaired += 1;
            }
            Header::Bad => self.corrupted_header += 1,
        }
        if v.flipped > 0 || v.header != Header::Ok {
            self.corrupted += 1;
        }
        self.flipped_bits += v.flipped;
        self.bits_checked += v.checked;
        let Some(seq) = v.seq else {
            self.unattributed += 1;
            return v;
        };
        if o.expect.is_some_and(|n| seq >= n) {
            self.out_of_range += 1;
            return v;
        }
        if !self.seen.insert(seq) {
            self.duplicates += 1;
            return v;
        }
        self.unique += 1;
        match self.max_seq {
            Some(m) if seq < m => {
                self.reordered += 1;
                self.reorder_max = self.reorder_max.max(m - seq);
            }
            _ => self.max_seq = Some(seq),
        }
        if let Some(tx) = v.tx_ns {
            let d = rx_ns as i64 - tx as i64;
            self.delay.add(d);
            if early_ns.is_some_and(|e| d < e) {
                self.early += 1;
            }
        }
        v
    }

    fn summary(
        &self,
        o: &RecvOpts,
        bound: &SocketAddr,
        rcvbuf: i32,
        stopped_by: &str,
        cpu: f64,
    ) -> Value {
        let expected = o.expect.unwrap_or(self.max_seq.map_or(0, |m| m + 1));
        let lost = expected.saturating_sub(self.unique);
        let span = self
            .first_rx
            .map_or(0.0, |f| (self.last_rx - f) as f64 / 1e9);
        let rate = |per_pkt_extra: u64| -> Option<f64> {
            (self.received >= 2 && span > 0.0).then(|| {
                ((self.bytes - self.first_len) + (self.received - 1) * per_pkt_extra) as f64 * 8.0
                    / span
            })
        };
        let mut delay = self.delay.summary_us();
        delay.insert("early".into(), json!(self.early));
        delay.insert("min_delay_us".into(), json!(o.min_delay_us));
        json!({
            "mode": "recv",
            "bind": bound.to_string(),
            "group": o.group.map(|g| g.to_string()),
            "seed": o.seed,
            "received": self.received,
            "unique": self.unique,
            "duplicates": self.duplicates,
            "expected": expected,
            "lost": lost,
            "loss_rate": (expected > 0).then(|| lost as f64 / expected as f64),
            "out_of_range": self.out_of_range,
            "reordered": self.reordered,
            "reorder_max_distance": self.reorder_max,
            "max_seq": self.max_seq,
            "corrupted": self.corrupted,
            "corrupted_header": self.corrupted_header,
            "header_repaired": self.header_repaired,
            "unattributed": self.unattributed,
            "flipped_bits": self.flipped_bits,
            "bits_checked": self.bits_checked,
            "ber": (self.bits_checked > 0).then(|| self.flipped_bits as f64 / self.bits_checked as f64),
            "foreign": self.foreign,
            "truncated": self.truncated,
            "length_mismatch": self.length_mismatch,
            "delay_us": Value::Object(delay),
            "first_rx_ns": self.first_rx,
            "last_rx_ns": self.first_rx.map(|_| self.last_rx),
            "rx_interval_s": span,
            "pps": (self.received >= 2 && span > 0.0).then(|| (self.received - 1) as f64 / span),
            "payload_bps": rate(0),
            "ip_bps": rate(self.ip_overhead),
            "eth_bps": rate(self.ip_overhead + 14),
            "kernel_drops": self.kernel_drops,
            "rcvbuf": rcvbuf,
            "ts_fallback": self.ts_fallback,
            "cpu_s": cpu,
            "stopped_by": stopped_by,
        })
    }
}

fn setup_recv_socket(o: &RecvOpts) -> (i32, i32) {
    let v6 = o.bind.is_ipv6();
    let fd = udp_socket(v6);
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1);
    if !setsockopt_int(fd, libc::SOL_SOCKET, SO_RCVBUFFORCE, o.rcvbuf)
        && !setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, o.rcvbuf)
    {
        fatal("SO_RCVBUF");
    }
    let rcvbuf = getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF);
    if !setsockopt_int(fd, libc::SOL_SOCKET, SO_TIMESTAMPNS, 1) {
        fatal("SO_TIMESTAMPNS");
    }
    if !setsockopt_int(fd, libc::SOL_SOCKET, SO_RXQ_OVFL, 1) {
        fatal("SO_RXQ_OVFL");
    }
    // Wake up every 50 ms to check signals, idle and duration.
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 50_000,
    };
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            &tv as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
    }
    bind_fd(fd, &o.bind);
    match o.group {
        Some(IpAddr::V4(g)) => {
            let ifaddr = match &o.mcast_if {
                Some(s) => s.parse::<std::net::Ipv4Addr>().unwrap_or_else(|_| {
                    usage_error("recv", "--mcast-if", "expected an IPv4 address")
                }),
                None => std::net::Ipv4Addr::UNSPECIFIED,
            };
            let mreq = libc::ip_mreq {
                imr_multiaddr: libc::in_addr {
                    s_addr: u32::from(g).to_be(),
                },
                imr_interface: libc::in_addr {
                    s_addr: u32::from(ifaddr).to_be(),
                },
            };
            let r = unsafe {
                libc::setsockopt(
                    fd,
                    libc::IPPROTO_IP,
                    libc::IP_ADD_MEMBERSHIP,
                    &mreq as *const _ as *const libc::c_void,
                    std::mem::size_of::<libc::ip_mreq>() as libc::socklen_t,
                )
            };
            if r != 0 {
                fatal(&format!("IP_ADD_MEMBERSHIP {g}"));
            }
            // Only the groups this socket joined, not every group on the host.
            setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_MULTICAST_ALL, 0);
        }
        Some(IpAddr::V6(g)) => {
            let idx = match &o.mcast_if {
                Some(s) => if_index(s)
                    .unwrap_or_else(|| usage_error("recv", "--mcast-if", "unknown interface")),
                None => 0,
            };
            let mreq = libc::ipv6_mreq {
                ipv6mr_multiaddr: libc::in6_addr {
                    s6_addr: g.octets(),
                },
                ipv6mr_interface: idx,
            };
            let r = unsafe {
                libc::setsockopt(
                    fd,
                    libc::IPPROTO_IPV6,
                    libc::IPV6_ADD_MEMBERSHIP,
                    &mreq as *const _ as *const libc::c_void,
                    std::mem::size_of::<libc::ipv6_mreq>() as libc::socklen_t,
                )
            };
            if r != 0 {
                fatal(&format!("IPV6_ADD_MEMBERSHIP {g}"));
            }
            setsockopt_int(fd, libc::IPPROTO_IPV6, 29 /* IPV6_MULTICAST_ALL */, 0);
        }
        None => {}
    }
    (fd, rcvbuf)
}

const RX_BATCH: usize = 64;
const RX_BUF: usize = 65536;
const CMSG_SPACE: usize = 128;

fn cmd_recv(argv: Vec<String>) {
    let o = parse_recv(argv);
    install_signals();
    let (fd, rcvbuf) = setup_recv_socket(&o);
    let bound = local_addr(fd).unwrap_or(o.bind);

    let mut csv = o.per_packet.as_ref().map(|p| {
        let f = std::fs::File::create(p).unwrap_or_else(|e| {
            eprintln!("dtnc-traffic recv: --per-packet {p}: {e}");
            exit(1);
        });
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        let _ = writeln!(w, "seq,tx_ns,rx_ns,len,corrupt_bits");
        w
    });

    let mut bufs = vec![0u8; RX_BATCH * RX_BUF];
    let mut cbufs = vec![0u64; RX_BATCH * CMSG_SPACE / 8]; // u64 for alignment
    let mut iov: Vec<libc::iovec> = (0..RX_BATCH)
        .map(|j| libc::iovec {
            iov_base: bufs[j * RX_BUF..].as_mut_ptr() as *mut libc::c_void,
            iov_len: RX_BUF,
        })
        .collect();
    let mut hdrs: Vec<libc::mmsghdr> = (0..RX_BATCH)
        .map(|_| unsafe { std::mem::zeroed() })
        .collect();

    let ip_overhead = if bound.is_ipv6() { 48 } else { 28 };
    let mut st = RecvStats::new(ip_overhead);
    let early_ns = o.min_delay_us.map(|d| (d * 1e3) as i64);
    let idle_ns = (o.idle * 1e9) as u64;
    let start = mono_ns();
    let end = o.duration.map(|d| start + (d * 1e9) as u64);
    let mut last_pkt_mono = 0u64;
    let mut line = String::new();
    let cpu0 = cpu_seconds();
    eprintln!("listening on {bound}");

    let stopped_by = loop {
        if STOP.load(Ordering::Relaxed) {
            break "signal";
        }
        let now = mono_ns();
        if end.is_some_and(|e| now >= e) {
            break "duration";
        }
        if o.count.is_some_and(|c| st.received >= c) {
            break "count";
        }
        if idle_ns > 0 && st.received > 0 && now.saturating_sub(last_pkt_mono) >= idle_ns {
            break "idle";
        }
        for j in 0..RX_BATCH {
            let h = &mut hdrs[j].msg_hdr;
            h.msg_name = std::ptr::null_mut();
            h.msg_namelen = 0;
            h.msg_iov = &mut iov[j];
            h.msg_iovlen = 1;
            h.msg_control = cbufs[j * CMSG_SPACE / 8..].as_mut_ptr() as *mut libc::c_void;
            h.msg_controllen = CMSG_SPACE as _;
            h.msg_flags = 0;
            hdrs[j].msg_len = 0;
        }
        let want = match o.count {
            Some(c) => (c - st.received).min(RX_BATCH as u64) as u32,
            None => RX_BATCH as u32,
        };
        let r = unsafe {
            libc::recvmmsg(
                fd,
                hdrs.as_mut_ptr(),
                want,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = errno();
            if e == libc::EAGAIN || e == libc::EINTR {
                continue;
            }
            fatal("recvmmsg");
        }
        let fallback_now = real_ns();
        last_pkt_mono = mono_ns();
        for j in 0..r as usize {
            let len = hdrs[j].msg_len as usize;
            let h = &hdrs[j].msg_hdr;
            if h.msg_flags & libc::MSG_TRUNC != 0 {
                st.truncated += 1;
            }
            let mut rx_ns = None;
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(h);
                while !c.is_null() {
                    let data = libc::CMSG_DATA(c);
                    if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == SO_TIMESTAMPNS {
                        let ts: libc::timespec =
                            std::ptr::read_unaligned(data as *const libc::timespec);
                        rx_ns = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                    } else if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == SO_RXQ_OVFL {
                        st.kernel_drops = std::ptr::read_unaligned(data as *const u32) as u64;
                    }
                    c = libc::CMSG_NXTHDR(h, c);
                }
            }
            let rx_ns = rx_ns.unwrap_or_else(|| {
                st.ts_fallback += 1;
                fallback_now
            });
            let pkt = &bufs[j * RX_BUF..j * RX_BUF + len.min(RX_BUF)];
            let v = st.packet(pkt, rx_ns, &o, early_ns);
            if let Some(w) = csv.as_mut() {
                line.clear();
                if v.header != Header::Foreign {
                    if let Some(s) = v.seq {
                        let _ = write!(line, "{s}");
                    }
                    line.push(',');
                    if let Some(t) = v.tx_ns {
                        let _ = write!(line, "{t}");
                    }
                    let _ = writeln!(line, ",{rx_ns},{len},{}", v.flipped);
                } else {
                    let _ = writeln!(line, ",,{rx_ns},{len},");
                }
                let _ = w.write_all(line.as_bytes());
            }
        }
    };
    if let Some(mut w) = csv {
        if let Err(e) = w.flush() {
            eprintln!("dtnc-traffic recv: --per-packet: {e}");
        }
    }
    let cpu = cpu_seconds() - cpu0;
    if let Some(d) = proc_udp_drops(fd) {
        st.kernel_drops = st.kernel_drops.max(d);
    }
    println!("{}", st.summary(&o, &bound, rcvbuf, stopped_by, cpu));
}

fn main() {
    let mut argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.is_empty() {
        eprint!("{USAGE}");
        exit(2);
    }
    let cmd = argv.remove(0);
    match cmd.as_str() {
        "send" => cmd_send(argv),
        "recv" => cmd_recv(argv),
        "-h" | "--help" | "help" => print!("{USAGE}"),
        other => {
            eprintln!("dtnc-traffic: unknown command {other:?} (send or recv)");
            eprint!("{USAGE}");
            exit(2);
        }
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(size: usize, seed: u64, seq: u64, tx: u64) -> Vec<u8> {
        let mut p = vec![0u8; size];
        encode(&mut p, seed, seq, tx);
        p
    }

    #[test]
    fn clean_packet_verifies() {
        for size in [24, 25, 31, 32, 33, 1024, 1500] {
            let p = pkt(size, 7, 123_456, 1_700_000_000_123_456_789);
            let v = verify(&p, 7);
            assert_eq!(v.header, Header::Ok, "size {size}");
            assert_eq!(v.seq, Some(123_456));
            assert_eq!(v.tx_ns, Some(1_700_000_000_123_456_789));
            assert_eq!(v.flipped, 0);
            assert_eq!(v.checked, size as u64 * 8);
        }
    }

    #[test]
    fn filler_depends_on_seed_and_seq() {
        let a = pkt(1024, 1, 5, 0);
        let b = pkt(1024, 2, 5, 0);
        let c = pkt(1024, 1, 6, 0);
        assert_ne!(a[HDR_LEN..], b[HDR_LEN..]);
        assert_ne!(a[HDR_LEN..], c[HDR_LEN..]);
        // Wrong seed: header fine, about half the filler bits "flipped".
        let v = verify(&a, 2);
        assert_eq!(v.header, Header::Ok);
        let fb = (1024 - HDR_LEN) as u64 * 8;
        assert!(
            v.flipped > fb * 4 / 10 && v.flipped < fb * 6 / 10,
            "{}",
            v.flipped
        );
    }

    #[test]
    fn counts_flipped_filler_bits() {
        let mut p = pkt(1024, 3, 99, 42);
        let bits = [24 * 8, 24 * 8 + 1, 500 * 8 + 3, 1023 * 8 + 7, 700 * 8];
        for b in bits {
            p[b / 8] ^= 0x80 >> (b % 8);
        }
        let v = verify(&p, 3);
        assert_eq!(v.header, Header::Ok);
        assert_eq!(v.flipped, bits.len() as u64);
        assert_eq!(v.tx_ns, Some(42));
        // Flipping the same bit twice is no flip; a whole byte is 8.
        p[600] ^= 0xFF;
        assert_eq!(verify(&p, 3).flipped, bits.len() as u64 + 8);
        // Odd tail (remainder of the 8-byte words).
        let mut q = pkt(29, 3, 1, 1);
        q[28] ^= 0x11;
        assert_eq!(verify(&q, 3).flipped, 2);
    }

    #[test]
    fn repairs_any_single_header_bit() {
        let orig = pkt(200, 9, 0xABCDEF, 1_700_000_000_000_000_000);
        for b in 0..HDR_LEN * 8 {
            let mut p = orig.clone();
            p[b / 8] ^= 0x80 >> (b % 8);
            p[100] ^= 0x03; // plus two filler bits
            let v = verify(&p, 9);
            assert_eq!(v.header, Header::Repaired, "bit {b}");
            assert_eq!(v.seq, Some(0xABCDEF), "bit {b}");
            assert_eq!(v.tx_ns, None);
            assert_eq!(v.flipped, 3, "bit {b}");
        }
    }

    #[test]
    fn multi_bit_header_damage() {
        let orig = pkt(1024, 9, 77, 5_000);
        // Two bits in the time field: seq still trusted through the filler.
        let mut p = orig.clone();
        p[13] ^= 0x81;
        let v = verify(&p, 9);
        assert_eq!(v.header, Header::Bad);
        assert_eq!(v.seq, Some(77));
        assert_eq!(v.tx_ns, None);
        // Two bits in the sequence: the filler no longer matches.
        let mut p = orig.clone();
        p[11] ^= 0x03;
        let v = verify(&p, 9);
        assert_eq!(v.header, Header::Bad);
        assert_eq!(v.seq, None);
        assert_eq!((v.flipped, v.checked), (0, 32));
        // Not ours at all.
        assert_eq!(verify(&[0u8; 100], 9).header, Header::Foreign);
        assert_eq!(verify(&orig[..20], 9).header, Header::Foreign);
    }

    #[test]
    fn bucket_roundtrip() {
        for v in (0..5000u64).chain([
            1 << 20,
            (1 << 20) + 12345,
            999_999_999,
            u64::MAX / 3,
            u64::MAX,
        ]) {
            let b = bucket_of(v);
            let r = bucket_value(b);
            let err = r.abs_diff(v) as f64;
            assert!(
                err <= (v as f64) / 2048.0 + 0.5,
                "v {v} -> bucket {b} -> {r}"
            );
            if v < EXACT {
                assert_eq!(r, v);
            }
        }
        // Buckets are contiguous and monotonic.
        let mut prev = bucket_of(EXACT - 100);
        for v in EXACT - 99..EXACT * 64 {
            let b = bucket_of(v);
            assert!(b == prev || b == prev + 1, "v {v}");
            prev = b;
        }
    }

    fn exact_percentile(sorted: &[i64], p: f64) -> i64 {
        let n = sorted.len() as f64;
        let rank = ((p / 100.0 * n).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    #[test]
    fn percentiles_match_exact_within_resolution() {
        // Deterministic pseudo-random delays, 20 us .. 20 ms, plus negatives.
        let mut vals: Vec<i64> = (0..100_000u64)
            .map(|i| 20_000 + (mix(i) % 20_000_000) as i64)
            .collect();
        vals.extend((0..500u64).map(|i| -((mix(i ^ 77) % 50_000) as i64)));
        let mut h = Hist::new();
        for &v in &vals {
            h.add(v);
        }
        vals.sort();
        for p in [0.0, 0.1, 1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0] {
            let e = exact_percentile(&vals, p);
            let g = h.percentile(p).unwrap();
            let tol = (e.unsigned_abs() as f64 / 2048.0).max(1.0);
            assert!((g - e).abs() as f64 <= tol, "p{p}: exact {e} hist {g}");
        }
        assert_eq!(h.percentile(0.0), Some(vals[0]));
        assert_eq!(h.percentile(100.0), Some(*vals.last().unwrap()));
        let mean = vals.iter().map(|&v| v as f64).sum::<f64>() / vals.len() as f64;
        assert!((h.mean().unwrap() - mean).abs() < 1e-6 * mean.abs());
    }

    #[test]
    fn small_exact_percentiles() {
        let mut h = Hist::new();
        for v in 1..=100 {
            h.add(v);
        }
        assert_eq!(h.percentile(50.0), Some(50));
        assert_eq!(h.percentile(99.0), Some(99));
        assert_eq!(h.percentile(99.9), Some(100));
        assert_eq!(h.percentile(1.0), Some(1));
        assert_eq!(Hist::new().percentile(50.0), None);
        let mut one = Hist::new();
        one.add(123_456_789);
        assert_eq!(one.percentile(50.0), Some(123_456_789)); // clamped to min/max
    }

    #[test]
    fn seqset_and_stats_accounting() {
        let o = RecvOpts {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            group: None,
            mcast_if: None,
            duration: None,
            count: None,
            idle: 2.0,
            expect: Some(10),
            size: Some(64),
            seed: 1,
            min_delay_us: Some(5.0),
            rcvbuf: 1 << 20,
            per_packet: None,
        };
        let mut st = RecvStats::new(28);
        let base = 1_000_000_000u64;
        // 0,1,3,2(reordered),3(dup),5,12(out of range); 4,6..9 lost
        for (seq, d) in [
            (0u64, 10_000u64),
            (1, 20_000),
            (3, 1_000),
            (2, 30_000),
            (3, 1),
            (5, 40_000),
            (12, 1),
        ] {
            let p = pkt(64, 1, seq, base + seq * 1000);
            st.packet(&p, base + seq * 1000 + d, &o, Some(5_000));
        }
        assert_eq!(st.received, 7);
        assert_eq!(st.unique, 5);
        assert_eq!(st.duplicates, 1);
        assert_eq!(st.reordered, 1);
        assert_eq!(st.reorder_max, 1);
        assert_eq!(st.out_of_range, 1);
        assert_eq!(st.delay.n, 5);
        assert_eq!(st.early, 1);
        assert_eq!(st.delay.min, 1_000);
        let s = st.summary(&o, &o.bind, 0, "test", 0.0);
        assert_eq!(s["lost"], 5);
        assert_eq!(s["expected"], 10);
        let mut big = SeqSet::new();
        assert!(big.insert(u64::MAX));
        assert!(!big.insert(u64::MAX));
        assert!(big.insert(0));
    }
}
