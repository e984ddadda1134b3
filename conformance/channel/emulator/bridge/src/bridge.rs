//! The I/O around the core: two receive rings and two send sockets, one
//! event loop for both directions. It reads frames, hands them to
//! [`dtnc_core::Channel`], sends what the channel releases and sleeps until
//! the channel's next timeout or the next frame.
//!
//! One thread for both directions keeps the decision order of each
//! direction a function of its arrivals only (determinism), and leaves the
//! second core of a small machine to the endpoints. The decision log is
//! written by a thread of its own ([`crate::logwriter`]).

use std::io;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use dtnc_core::log::ReplayLog;
use dtnc_core::{Arrival, Channel, Config, Dir, Instant};

use crate::logwriter::LogWriter;
use crate::ring::{socket_error, RxRing, Tx};
use dtnc_sys::{mono_ns, real_ns, STOP};

/// Wake this long before a release is due and spin the rest: a sleeping
/// thread wakes tens of microseconds late, a frame must never leave early.
const SPIN_NS: u64 = 80_000;
/// Longest sleep (the stop flag and the log are looked at this often).
const IDLE_NS: u64 = 100_000_000;
/// Ring blocks read per direction before sending what is due.
const BLOCKS_PER_TURN: usize = 4;
/// Hand the log to its writer at this size, or after IDLE_NS.
const LOG_CHUNK: usize = 256 << 10;

/// What a run writes besides the frames it forwards.
pub struct Options {
    /// The decision log, or none.
    pub log: Option<std::fs::File>,
    /// Decisions to replay instead of drawing them.
    pub replay: Option<ReplayLog>,
    /// Written with the scenario clock's zero once bridging.
    pub ready: Option<PathBuf>,
    /// Written with the counters at the end.
    pub stats: Option<PathBuf>,
}

/// The bridge between the config's two interfaces.
pub struct Bridge {
    cfg: Config,
    /// forward reads on a, return reads on b
    rx: [RxRing; 2],
    /// forward leaves on b, return leaves on a
    tx: [Tx; 2],
    opts: Options,
    chan: Option<Channel>,
    /// Frames each ring dropped unread (forward, return), read at the end.
    ring_drops: [u64; 2],
}

impl Bridge {
    /// Open the sockets (this is where a missing CAP_NET_RAW shows).
    pub fn open(cfg: Config, opts: Options) -> io::Result<Bridge> {
        let (a, b) = (&cfg.interfaces.a, &cfg.interfaces.b);
        let rx = [RxRing::open(a)?, RxRing::open(b)?];
        let tx = [Tx::open(b)?, Tx::open(a)?];
        Ok(Bridge {
            cfg,
            rx,
            tx,
            opts,
            chan: None,
            ring_drops: [0; 2],
        })
    }

    /// Bridge until SIGINT or SIGTERM, or until an interface goes away.
    pub fn run(&mut self) -> io::Result<()> {
        let start = mono_ns();
        let epoch_offset = real_ns() - (mono_ns() - start);
        let since_start = || Instant::from_nanos(mono_ns().saturating_sub(start));
        let mut writer = self.opts.log.take().map(LogWriter::start).transpose()?;
        let chan = self.chan.insert(Channel::new(
            &self.cfg,
            dtnc_core::Options {
                log: writer.is_some(),
                replay: self.opts.replay.take(),
                epoch_offset_ns: epoch_offset,
            },
        ));
        if let Some(p) = &self.opts.ready {
            // the scenario clock's zero, ns since the epoch
            std::fs::write(p, format!("ready {epoch_offset}\n"))?;
        }
        let mut fds = [self.rx[0].fd(), self.rx[1].fd()].map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        let mut last_log = 0u64;
        let result = loop {
            if STOP.load(Ordering::Relaxed) {
                break Ok(());
            }
            for (k, dir) in [Dir::Forward, Dir::Return].into_iter().enumerate() {
                for _ in 0..BLOCKS_PER_TURN {
                    let Some(mut block) = self.rx[k].next_block() else {
                        break;
                    };
                    // read after the block was handed over: no frame in it
                    // arrived later than this
                    let now = since_start();
                    while let Some(fr) = block.next_frame() {
                        let at = Instant::from_nanos(fr.t_ns.saturating_sub(epoch_offset));
                        chan.handle_frame(
                            now,
                            Arrival {
                                dir,
                                at,
                                data: fr.data,
                                truncated: fr.truncated,
                            },
                        );
                    }
                }
            }
            let now = since_start();
            while let Some(t) = chan.poll_transmit(now) {
                match &mut self.tx[t.dir.idx()] {
                    Tx::Ring(r) => {
                        if !r.push(&t.data) {
                            chan.count_send_failures(t.dir, 1);
                        }
                        chan.recycle(t.data);
                    }
                    Tx::Socket(_, queue) => queue.push(t.data),
                }
            }
            let mut sent = Ok(());
            for (k, dir) in [Dir::Forward, Dir::Return].into_iter().enumerate() {
                match &mut self.tx[k] {
                    Tx::Ring(r) => {
                        if let Err(e) = r.flush() {
                            let side = if k == 0 { "b" } else { "a" };
                            sent = Err(io::Error::new(
                                e.kind(),
                                format!("{dir:?} way out (interface {side}) unusable: {e}"),
                            ));
                        }
                    }
                    Tx::Socket(s, queue) if !queue.is_empty() => {
                        let failed = s.send_all(queue);
                        chan.count_send_failures(dir, failed);
                        for buf in queue.drain(..) {
                            chan.recycle(buf);
                        }
                    }
                    Tx::Socket(..) => {}
                }
            }
            if sent.is_err() {
                break sent;
            }
            if let Some(w) = writer.as_mut() {
                let n = now.as_nanos();
                if chan.log_len() >= LOG_CHUNK || n.saturating_sub(last_log) >= IDLE_NS {
                    w.write(chan.take_log(w.spare()))?;
                    last_log = n;
                }
            }
            let n = now.as_nanos();
            let wait = match chan.poll_timeout().map(Instant::as_nanos) {
                Some(t) if t <= n + SPIN_NS => 0,
                Some(t) => (t - n - SPIN_NS).min(IDLE_NS),
                None => IDLE_NS,
            };
            let ts = libc::timespec {
                tv_sec: (wait / 1_000_000_000) as libc::time_t,
                tv_nsec: (wait % 1_000_000_000) as libc::c_long,
            };
            for p in &mut fds {
                p.revents = 0;
            }
            // SAFETY: fds and ts are valid for the call.
            let r = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                break Err(e);
            }
            // An error condition without data to read: the interface went
            // away (its namespace was deleted, or it went down). poll()
            // would report it at once forever, so stop here instead of
            // spinning.
            let bad = libc::POLLERR | libc::POLLHUP | libc::POLLNVAL;
            if let Some(k) =
                (0..2).find(|&k| fds[k].revents & bad != 0 && fds[k].revents & libc::POLLIN == 0)
            {
                let d = [Dir::Forward, Dir::Return][k];
                break Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    format!("{d:?} interface unusable: {}", socket_error(fds[k].fd)),
                ));
            }
        };
        for (k, drops) in self.ring_drops.iter_mut().enumerate() {
            *drops += self.rx[k].take_drops()?;
        }
        if let Some(mut w) = writer {
            w.write(chan.take_log(String::new()))?;
            w.finish()?;
        }
        result
    }

    /// The counters (all zero before [`Bridge::run`]), and how frames were
    /// sent each way.
    pub fn stats_json(&self) -> serde_json::Value {
        let mut v = match &self.chan {
            Some(c) => c.stats_json(),
            None => Channel::new(&self.cfg, dtnc_core::Options::default()).stats_json(),
        };
        let how = |t: &Tx| match t {
            Tx::Ring(_) => "tx_ring",
            Tx::Socket(..) => "sendmmsg",
        };
        v["send"] = serde_json::json!({"forward": how(&self.tx[0]), "return": how(&self.tx[1])});
        // frames lost before the channel saw them: a run over them is ours
        // to answer for (conformance.runner: `channel-missed`)
        for (k, d) in ["forward", "return"].into_iter().enumerate() {
            v[d]["ring_drops"] = self.ring_drops[k].into();
        }
        v
    }

    /// Write the stats file, if asked for.
    pub fn finish(&mut self) -> io::Result<()> {
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
