//! The data path: two AF_PACKET sockets per interface pair, batched receive
//! (recvmmsg) and send (sendmmsg), a timer heap of frames in flight, and one
//! event loop that serves both directions.
//!
//! One thread for both directions keeps the decision order of each
//! direction a function of its arrivals only (determinism), and leaves the
//! second core of a small machine to the endpoints.

use std::collections::{BinaryHeap, HashMap};
use std::io::{self, Write};
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;

use crate::classify::{Fields, Protocol};
use crate::config::{Config, Dir};
use crate::frame;
use crate::link::{Decision, Link, Verdict};
use crate::log::{self, ReplayLog};
use crate::rules::RuleSet;
use crate::timeline::Timeline;

pub use crate::sys::{install_signal_handlers, mono_ns, real_ns, STOP};

const ETH_P_ALL: u16 = 0x0003;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const BATCH: usize = 64;
const BUF: usize = 16 * 1024;
/// Wake this long before a release is due and spin the rest: a sleeping
/// thread wakes tens of microseconds late, a frame must never leave early.
const SPIN_NS: u64 = 80_000;

fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    // SAFETY: v lives across the call; the length matches.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn ifindex(name: &str) -> io::Result<libc::c_int> {
    let c = std::ffi::CString::new(name).map_err(|_| io::Error::other("bad interface name"))?;
    // SAFETY: c is a valid NUL-terminated string.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        Err(io::Error::other(format!(
            "no interface {name:?} in this network namespace"
        )))
    } else {
        Ok(idx as libc::c_int)
    }
}

/// An AF_PACKET socket bound to one interface. `rx`: receives every frame
/// arriving on it (ETH_P_ALL), not our own transmissions; otherwise a send
/// socket (protocol 0 receives nothing) that bypasses the qdisc.
fn packet_socket(name: &str, rx: bool) -> io::Result<RawFd> {
    let proto = if rx { ETH_P_ALL.to_be() } else { 0 };
    // SAFETY: plain syscalls on a descriptor we own.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::c_int::from(proto),
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EPERM) {
            return Err(io::Error::other(
                "opening an AF_PACKET socket needs CAP_NET_RAW: run dtnc-emu as root",
            ));
        }
        return Err(e);
    }
    let idx = ifindex(name).inspect_err(|_| {
        // SAFETY: closing the descriptor opened above.
        unsafe { libc::close(fd) };
    })?;
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto;
    sll.sll_ifindex = idx;
    // SAFETY: sll is a valid sockaddr_ll of the given size.
    let r = unsafe {
        libc::bind(
            fd,
            &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    if rx {
        // Best effort: older kernels lack it; outgoing frames are then
        // recognised by their packet type instead.
        let _ = setsockopt_int(fd, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1);
        if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 64 << 20).is_err() {
            setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, 64 << 20)?;
        }
        setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
    } else {
        let _ = setsockopt_int(fd, libc::SOL_PACKET, PACKET_QDISC_BYPASS, 1);
        if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, 16 << 20).is_err() {
            setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, 16 << 20)?;
        }
    }
    Ok(fd)
}

/// Receive buffers for one recvmmsg call.
struct RxBatch {
    bufs: Vec<u8>,
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    names: Vec<libc::sockaddr_ll>,
    ctrl: Vec<u8>,
}

const CTRL: usize = 64;

impl RxBatch {
    fn new() -> RxBatch {
        RxBatch {
            bufs: vec![0u8; BATCH * BUF],
            iov: vec![
                libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0
                };
                BATCH
            ],
            // SAFETY: all-zero mmsghdr/sockaddr_ll are valid values.
            hdrs: vec![unsafe { std::mem::zeroed() }; BATCH],
            names: vec![unsafe { std::mem::zeroed() }; BATCH],
            ctrl: vec![0u8; BATCH * CTRL],
        }
    }

    /// Receive up to BATCH frames without blocking; returns how many.
    fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        for i in 0..BATCH {
            self.iov[i] = libc::iovec {
                iov_base: self.bufs[i * BUF..].as_mut_ptr() as *mut libc::c_void,
                iov_len: BUF,
            };
            let h = &mut self.hdrs[i].msg_hdr;
            h.msg_name = &mut self.names[i] as *mut libc::sockaddr_ll as *mut libc::c_void;
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            h.msg_iov = &mut self.iov[i];
            h.msg_iovlen = 1;
            h.msg_control = self.ctrl[i * CTRL..].as_mut_ptr() as *mut libc::c_void;
            h.msg_controllen = CTRL;
            h.msg_flags = 0;
            self.hdrs[i].msg_len = 0;
        }
        // SAFETY: every header points into buffers owned by self.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                self.hdrs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(0),
                _ => Err(e),
            };
        }
        Ok(n as usize)
    }

    fn frame(&self, i: usize) -> &[u8] {
        let len = (self.hdrs[i].msg_len as usize).min(BUF);
        &self.bufs[i * BUF..i * BUF + len]
    }

    fn truncated(&self, i: usize) -> bool {
        self.hdrs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0
    }

    fn outgoing(&self, i: usize) -> bool {
        self.names[i].sll_pkttype == libc::PACKET_OUTGOING
    }

    /// The kernel's receive timestamp (CLOCK_REALTIME ns), if present.
    fn timestamp(&self, i: usize) -> Option<u64> {
        let h = &self.hdrs[i].msg_hdr;
        // SAFETY: walking the control buffer the kernel filled, with the
        // CMSG_* helpers and the length it reported.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(h);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                    return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                }
                c = libc::CMSG_NXTHDR(h, c);
            }
        }
        None
    }
}

/// Reusable sendmmsg headers.
struct TxBatch {
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

impl TxBatch {
    fn new() -> TxBatch {
        TxBatch {
            iov: vec![
                libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0
                };
                BATCH
            ],
            // SAFETY: an all-zero mmsghdr is a valid value.
            hdrs: vec![unsafe { std::mem::zeroed() }; BATCH],
        }
    }

    /// Send the frames with sendmmsg, in order; returns how many failed.
    fn send_all(&mut self, fd: RawFd, frames: &[Vec<u8>]) -> u64 {
        let mut failed = 0;
        for chunk in frames.chunks(BATCH) {
            let n = chunk.len();
            for (i, f) in chunk.iter().enumerate() {
                self.iov[i] = libc::iovec {
                    iov_base: f.as_ptr() as *mut libc::c_void,
                    iov_len: f.len(),
                };
                let h = &mut self.hdrs[i];
                h.msg_hdr.msg_iov = &mut self.iov[i];
                h.msg_hdr.msg_iovlen = 1;
                h.msg_len = 0;
            }
            let mut done = 0usize;
            let mut retries = 0;
            while done < n {
                // SAFETY: headers and buffers live across the call.
                let r = unsafe {
                    libc::sendmmsg(fd, self.hdrs[done..n].as_mut_ptr(), (n - done) as u32, 0)
                };
                if r > 0 {
                    done += r as usize;
                    continue;
                }
                let e = io::Error::last_os_error().raw_os_error();
                if matches!(e, Some(libc::EINTR))
                    || (matches!(e, Some(libc::ENOBUFS) | Some(libc::EAGAIN)) && retries < 100)
                {
                    retries += 1;
                    std::thread::yield_now();
                    continue;
                }
                // this frame cannot be sent (e.g. larger than the MTU): skip it
                failed += 1;
                done += 1;
            }
        }
        failed
    }
}

struct Pending {
    release: u64,
    seq: u64,
    dir: Dir,
    hold: u32,
    hold_timeout: u64,
    data: Vec<u8>,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.release, self.seq) == (o.release, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    // BinaryHeap is a max-heap: the earliest release compares greatest.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.release, o.seq).cmp(&(self.release, self.seq))
    }
}

struct Held {
    remaining: u32,
    deadline: u64,
    data: Vec<u8>,
}

/// Per-direction counters, written to the stats file at the end.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub frames: u64,
    pub bytes: u64,
    pub segments: u64,
    pub passed: u64,
    pub corrupted: u64,
    pub duplicated: u64,
    pub reordered: u64,
    pub dropped: HashMap<String, u64>,
    pub send_failed: u64,
    pub replay_mismatch: u64,
}

impl Stats {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "frames": self.frames, "bytes": self.bytes, "segments": self.segments,
            "passed": self.passed, "corrupted": self.corrupted,
            "duplicated": self.duplicated, "reordered": self.reordered,
            "dropped": self.dropped, "send_failed": self.send_failed,
            "replay_mismatch": self.replay_mismatch,
        })
    }
}

pub struct Options {
    pub log: Option<std::fs::File>,
    pub replay: Option<ReplayLog>,
    pub ready: Option<std::path::PathBuf>,
    pub stats: Option<std::path::PathBuf>,
}

pub struct Emulator {
    cfg: Config,
    rx: [RawFd; 2],
    tx: [RawFd; 2],
    links: [Link; 2],
    rules: RuleSet,
    ports: HashMap<u16, Protocol>,
    heap: BinaryHeap<Pending>,
    held: [Vec<Held>; 2],
    seq: u64,
    index: [u64; 2],
    segs: [u64; 2],
    stats: [Stats; 2],
    in_flight: u64,
    start: u64,
    epoch_offset: u64,
    logbuf: String,
    opts: Options,
    out: [Vec<Vec<u8>>; 2],
    txb: TxBatch,
    /// ns since start at the last receive batch (for the direct path).
    now: u64,
}

impl Emulator {
    pub fn new(cfg: Config, opts: Options) -> io::Result<Emulator> {
        // forward: read on a, leave on b; return: read on b, leave on a
        let rx = [
            packet_socket(&cfg.interfaces.a, true)?,
            packet_socket(&cfg.interfaces.b, true)?,
        ];
        let tx = [
            packet_socket(&cfg.interfaces.b, false)?,
            packet_socket(&cfg.interfaces.a, false)?,
        ];
        let links = [
            Link::new(
                Dir::Forward,
                cfg.seed,
                Timeline::new(&cfg.forward, cfg.time_scale),
            ),
            Link::new(
                Dir::Return,
                cfg.seed,
                Timeline::new(&cfg.return_, cfg.time_scale),
            ),
        ];
        let ports = cfg
            .protocols
            .iter()
            .map(|p| {
                (
                    p.udp_port,
                    Protocol::from_name(&p.protocol).expect("validated"),
                )
            })
            .collect();
        let rules = RuleSet::new(&cfg.rules);
        Ok(Emulator {
            cfg,
            rx,
            tx,
            links,
            rules,
            ports,
            heap: BinaryHeap::new(),
            held: [Vec::new(), Vec::new()],
            seq: 0,
            index: [0; 2],
            segs: [0; 2],
            stats: [Stats::default(), Stats::default()],
            in_flight: 0,
            start: 0,
            epoch_offset: 0,
            logbuf: String::with_capacity(1 << 20),
            opts,
            out: [Vec::new(), Vec::new()],
            txb: TxBatch::new(),
            now: 0,
        })
    }

    fn since_start(&self) -> u64 {
        mono_ns().saturating_sub(self.start)
    }

    fn drain_rx(&mut self, d: Dir, batch: &mut RxBatch) -> io::Result<()> {
        for _ in 0..16 {
            let n = batch.recv(self.rx[d.idx()])?;
            if n == 0 {
                return Ok(());
            }
            let now = self.since_start();
            self.now = now;
            for i in 0..n {
                if batch.outgoing(i) {
                    continue;
                }
                // the kernel's arrival stamp, on our monotonic scale
                let arrival = batch
                    .timestamp(i)
                    .map(|t| t.saturating_sub(self.epoch_offset).min(now))
                    .unwrap_or(now);
                let data = batch.frame(i).to_vec();
                let trunc = batch.truncated(i);
                self.handle(d, arrival, data, trunc);
            }
            if n < BATCH {
                return Ok(());
            }
        }
        Ok(())
    }

    fn handle(&mut self, d: Dir, arrival: u64, mut f: Vec<u8>, truncated: bool) {
        let di = d.idx();
        self.index[di] += 1;
        let index = self.index[di];
        let st = &mut self.stats[di];
        st.frames += 1;
        st.bytes += f.len() as u64;
        let lay = frame::layout(&f);
        let mut proto = None;
        let mut fields: Option<Fields> = None;
        if lay.kind == frame::Kind::Udp {
            let p = self
                .ports
                .get(&lay.dst_port)
                .or_else(|| self.ports.get(&lay.src_port))
                .copied();
            if let Some(p) = p {
                fields = p.classify(&f[lay.payload()..lay.end]);
                if fields.is_some() {
                    proto = Some(p);
                    self.segs[di] += 1;
                    st.segments += 1;
                }
            }
        }
        let logged = self
            .opts
            .replay
            .as_ref()
            .and_then(|r| r.get(d, index))
            .cloned();
        let mismatch = logged
            .as_ref()
            .is_some_and(|l| l.len != f.len() || (!l.kind.is_empty() && l.kind != lay.kind.name()));
        if mismatch {
            st.replay_mismatch += 1;
        }
        let action = match (&fields, &logged, proto) {
            (Some(fl), None, Some(p)) => self.rules.decide(d, p, fl),
            _ => None,
        };
        // A frame that was cut short, or that would take the frames in
        // flight past the memory guard, never reaches the link model: it
        // draws no random numbers and occupies no transmitter time.
        let dec: Decision = if truncated {
            Decision::dropped("oversize", None)
        } else if self.in_flight + f.len() as u64 > self.cfg.max_in_flight_bytes {
            Decision::dropped("memory", None)
        } else {
            self.links[di].decide(arrival, &mut f, &lay, action, logged.as_ref())
        };
        if self.opts.log.is_some() {
            log::format(
                &log::Entry {
                    t_ns: arrival + self.epoch_offset,
                    dir: d,
                    index,
                    len: f.len(),
                    kind: lay.kind.name(),
                    proto: proto.map(Protocol::name),
                    seg: self.segs[di],
                    fields: fields.as_ref(),
                    decision: &dec,
                    epoch_offset: self.epoch_offset,
                    mismatch,
                },
                &mut self.logbuf,
            );
        }
        let st = &mut self.stats[di];
        match dec.verdict {
            Verdict::Drop => {
                let cause = dec.cause.clone().unwrap_or_default();
                *st.dropped.entry(cause).or_insert(0) += 1;
                return;
            }
            Verdict::Corrupt => st.corrupted += 1,
            Verdict::Pass => {}
        }
        st.passed += 1;
        if dec.hold > 0 {
            st.reordered += 1;
        }
        let timeout = (self.links[di].settings().reorder.timeout_ms * 1e6) as u64;
        if dec.copies > 1 {
            st.duplicated += 1;
            self.push(d, dec.release_dup, 0, 0, f.clone());
        }
        // Direct path: due already, nothing due before it, nothing held
        // (the common case of an unimpaired or zero-delay link).
        if dec.hold == 0
            && dec.release <= self.now
            && self.held[di].is_empty()
            && self.heap.peek().is_none_or(|p| p.release > dec.release)
        {
            self.in_flight += f.len() as u64;
            self.emit(d, f);
            return;
        }
        self.push(d, dec.release, dec.hold, timeout, f);
    }

    fn push(&mut self, dir: Dir, release: u64, hold: u32, hold_timeout: u64, data: Vec<u8>) {
        self.seq += 1;
        self.in_flight += data.len() as u64;
        self.heap.push(Pending {
            release,
            seq: self.seq,
            dir,
            hold,
            hold_timeout,
            data,
        });
    }

    /// Queue a frame for sending. Every frame that leaves, held ones
    /// included, counts down the reordered frames held behind it; those that
    /// reach zero leave right after it (and count down the rest in turn).
    fn emit(&mut self, dir: Dir, data: Vec<u8>) {
        let di = dir.idx();
        let mut leaving = std::collections::VecDeque::from([data]);
        while let Some(d) = leaving.pop_front() {
            self.in_flight -= d.len() as u64;
            self.out[di].push(d);
            let held = &mut self.held[di];
            let mut i = 0;
            while i < held.len() {
                held[i].remaining -= 1;
                if held[i].remaining == 0 {
                    leaving.push_back(held.remove(i).data);
                } else {
                    i += 1;
                }
            }
        }
    }

    /// Move every frame due by `now` to the send lists, then send them.
    fn release_due(&mut self, now: u64) {
        while self.heap.peek().is_some_and(|p| p.release <= now) {
            let p = self.heap.pop().expect("peeked");
            if p.hold > 0 {
                self.held[p.dir.idx()].push(Held {
                    remaining: p.hold,
                    deadline: p.release + p.hold_timeout,
                    data: p.data,
                });
                continue;
            }
            self.emit(p.dir, p.data);
        }
        for d in [Dir::Forward, Dir::Return] {
            // held frames whose timeout passed leave without waiting longer
            while let Some(j) = self.held[d.idx()].iter().position(|h| h.deadline <= now) {
                let h = self.held[d.idx()].remove(j);
                self.emit(d, h.data);
            }
        }
        for di in 0..2 {
            if !self.out[di].is_empty() {
                let frames = std::mem::take(&mut self.out[di]);
                self.stats[di].send_failed += self.txb.send_all(self.tx[di], &frames);
            }
        }
    }

    fn next_due(&self) -> Option<u64> {
        let h = self.heap.peek().map(|p| p.release);
        let d = self.held.iter().flatten().map(|h| h.deadline).min();
        match (h, d) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn flush_log(&mut self) -> io::Result<()> {
        if let Some(f) = self.opts.log.as_mut() {
            if !self.logbuf.is_empty() {
                f.write_all(self.logbuf.as_bytes())?;
                self.logbuf.clear();
            }
        }
        Ok(())
    }

    /// Run until SIGINT/SIGTERM.
    pub fn run(&mut self) -> io::Result<()> {
        let mut batch = RxBatch::new();
        self.start = mono_ns();
        self.epoch_offset = real_ns() - (mono_ns() - self.start);
        if let Some(p) = &self.opts.ready {
            // the scenario clock's zero, ns since the epoch
            std::fs::write(p, format!("ready {}\n", self.epoch_offset))?;
        }
        let mut last_flush = 0u64;
        let mut fds = [
            libc::pollfd {
                fd: self.rx[0],
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.rx[1],
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        while !STOP.load(Ordering::Relaxed) {
            let now = self.since_start();
            self.release_due(now);
            if self.logbuf.len() > (256 << 10) || now - last_flush > 100_000_000 {
                self.flush_log()?;
                last_flush = now;
            }
            let wait = match self.next_due() {
                Some(t) if t <= now + SPIN_NS => 0,
                Some(t) => (t - now - SPIN_NS).min(100_000_000),
                None => 100_000_000,
            };
            let ts = libc::timespec {
                tv_sec: (wait / 1_000_000_000) as libc::time_t,
                tv_nsec: (wait % 1_000_000_000) as libc::c_long,
            };
            fds[0].revents = 0;
            fds[1].revents = 0;
            // SAFETY: fds and ts are valid for the call.
            let r = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(e);
            }
            if r > 0 {
                for (k, d) in [Dir::Forward, Dir::Return].into_iter().enumerate() {
                    // An error condition without data to read: the interface
                    // went away (its namespace was deleted, or it went down).
                    // poll() would report it at once forever, so stop here
                    // instead of spinning.
                    let bad = libc::POLLERR | libc::POLLHUP | libc::POLLNVAL;
                    if fds[k].revents & bad != 0 && fds[k].revents & libc::POLLIN == 0 {
                        return Err(io::Error::new(
                            io::ErrorKind::BrokenPipe,
                            format!("{d:?} interface unusable: {}", socket_error(fds[k].fd)),
                        ));
                    }
                    if fds[k].revents & libc::POLLIN != 0 {
                        self.drain_rx(d, &mut batch)?;
                    }
                }
            }
        }
        self.flush_log()?;
        Ok(())
    }

    pub fn stats_json(&self) -> serde_json::Value {
        serde_json::json!({
            "forward": self.stats[0].json(),
            "return": self.stats[1].json(),
            "rules": self.rules.rules.iter().map(|r| serde_json::json!({
                "index": r.index, "matched": r.seen, "acted": r.fired
            })).collect::<Vec<_>>(),
            "in_flight_at_exit": self.heap.len() + self.held.iter().map(Vec::len).sum::<usize>(),
        })
    }

    pub fn finish(&mut self) -> io::Result<()> {
        self.flush_log()?;
        if let Some(f) = self.opts.log.as_mut() {
            f.flush()?;
        }
        if let Some(p) = &self.opts.stats {
            let tmp = p.with_extension("tmp");
            std::fs::write(
                &tmp,
                serde_json::to_string_pretty(&self.stats_json())? + "\n",
            )?;
            std::fs::rename(tmp, p)?;
        }
        Ok(())
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        for fd in self.rx.iter().chain(self.tx.iter()) {
            // SAFETY: closing descriptors we opened.
            unsafe { libc::close(*fd) };
        }
    }
}

/// The pending error of a socket (SO_ERROR), for a message.
fn socket_error(fd: libc::c_int) -> io::Error {
    let mut err: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: err and len are valid for the call.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut err as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r < 0 {
        io::Error::last_os_error()
    } else {
        io::Error::from_raw_os_error(err)
    }
}
