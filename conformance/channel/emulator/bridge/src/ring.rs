//! AF_PACKET sockets bound to one interface, with PACKET_MMAP rings: the
//! kernel writes received frames into a TPACKET_V3 ring we read in place,
//! and sends the frames we write into a TPACKET_V2 ring, many per system
//! call, straight to the driver (PACKET_QDISC_BYPASS).
//!
//! The send ring copies: each frame carries a virtio-net header whose
//! `hdr_len` is the whole frame, so the kernel copies the frame into the
//! buffer it sends (PACKET_VNET_HDR). Without it, a frame sent from a ring
//! is passed on by reference to the ring's pages; on a veth the receiving
//! stack releases the ring slot (orphans the buffer) as soon as IP takes the
//! frame, while the UDP payload can still sit unread in the receiving
//! socket's queue, so the next frame written into that slot would change a
//! datagram already delivered. Where a send ring cannot be set up, sendmmsg
//! (which copies too) is used instead.

use std::io;
use std::os::fd::RawFd;

const ETH_P_ALL: u16 = 0x0003;

fn setsockopt<T>(fd: RawFd, level: libc::c_int, opt: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: v points to a live T of the given size for the call.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (v as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Map the `len` bytes of the ring the kernel just allocated for `fd`.
fn map_ring(fd: RawFd, len: usize) -> io::Result<*mut u8> {
    // SAFETY: a fresh shared mapping of fd's ring; nothing else maps it.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            fd,
            0,
        )
    };
    if map == libc::MAP_FAILED {
        Err(io::Error::last_os_error())
    } else {
        Ok(map.cast())
    }
}

fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    setsockopt(fd, level, opt, &v)
}

/// The index of interface `name` in this network namespace.
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

/// An AF_PACKET socket that receives nothing yet (protocol 0).
fn packet_socket() -> io::Result<Fd> {
    // SAFETY: a plain syscall; the descriptor is owned by the Fd.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EPERM) {
            return Err(io::Error::other(
                "opening an AF_PACKET socket needs CAP_NET_RAW: run dtnc-emu as root",
            ));
        }
        return Err(e);
    }
    Ok(Fd(fd))
}

/// Bind to the interface; with `ETH_P_ALL` the socket starts receiving
/// every frame arriving there.
fn bind(fd: RawFd, ifindex: libc::c_int, proto: u16) -> io::Result<()> {
    // SAFETY: an all-zero sockaddr_ll is valid; filled below.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto.to_be();
    sll.sll_ifindex = ifindex;
    // SAFETY: sll is a valid sockaddr_ll of the given size.
    let r = unsafe {
        libc::bind(
            fd,
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A descriptor closed on drop.
#[derive(Debug)]
pub struct Fd(pub RawFd);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: closing a descriptor we own.
        unsafe { libc::close(self.0) };
    }
}

/// The pending error of a socket (SO_ERROR), for a message.
pub fn socket_error(fd: RawFd) -> io::Error {
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

/// Ring geometry: 256 blocks of 256 KiB (64 MiB, about 58 000 frames of
/// 1 KB, or 0.25 s at 230 000 frames/s: room for the bridge to be kept off
/// its CPU a while; frames up to the block size, jumbo frames included).
const BLOCK_SIZE: usize = 1 << 18;
const BLOCK_NR: usize = 256;
/// The kernel hands over a block when it is full or this many ms after its
/// first frame (1 ms is the least it takes). So at low rates a frame is
/// seen up to 1 ms after it arrived: its decisions still use its arrival
/// stamp, so delays of more than 1 ms stay exact, while a link of less
/// than 1 ms delay (or none) forwards up to 1 ms late (0.5 ms on average).
/// The gain is one wake-up per block instead of one per frame, which is
/// what lets the bridge keep pace when it shares its CPUs with the
/// endpoints (`DTNC_BENCH_NOPIN=1` in `dtnconform bench emulator`).
const RETIRE_TOV_MS: u32 = 1;

/// One frame in a receive ring block.
#[derive(Debug, Clone, Copy)]
pub struct RxFrame<'a> {
    /// The Ethernet frame (cut short when `truncated`).
    pub data: &'a [u8],
    /// The frame was longer than what the ring kept.
    pub truncated: bool,
    /// The kernel's receive time, ns since the epoch (CLOCK_REALTIME).
    pub t_ns: u64,
}

/// A receive socket with a TPACKET_V3 ring.
pub struct RxRing {
    fd: Fd,
    map: *mut u8,
    len: usize,
    next: usize,
}

impl RxRing {
    /// Every frame arriving on interface `name` (ETH_P_ALL), not our own
    /// transmissions (PACKET_IGNORE_OUTGOING).
    pub fn open(name: &str) -> io::Result<RxRing> {
        let fd = packet_socket()?;
        let ifindex = ifindex(name)?;
        setsockopt_int(
            fd.0,
            libc::SOL_PACKET,
            libc::PACKET_VERSION,
            libc::tpacket_versions::TPACKET_V3 as libc::c_int,
        )?;
        // Best effort: older kernels lack it; outgoing frames are then
        // recognised by their packet type instead.
        let _ = setsockopt_int(fd.0, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, 1);
        let req = libc::tpacket_req3 {
            tp_block_size: BLOCK_SIZE as u32,
            tp_block_nr: BLOCK_NR as u32,
            tp_frame_size: 2048,
            tp_frame_nr: (BLOCK_SIZE / 2048 * BLOCK_NR) as u32,
            tp_retire_blk_tov: RETIRE_TOV_MS,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        setsockopt(fd.0, libc::SOL_PACKET, libc::PACKET_RX_RING, &req)?;
        let len = BLOCK_SIZE * BLOCK_NR;
        let map = map_ring(fd.0, len)?;
        let ring = RxRing {
            fd,
            map,
            len,
            next: 0,
        };
        bind(ring.fd.0, ifindex, ETH_P_ALL)?;
        Ok(ring)
    }

    /// The descriptor, to poll on.
    pub fn fd(&self) -> RawFd {
        self.fd.0
    }

    /// Frames the kernel dropped because the ring was full since the last
    /// call (PACKET_STATISTICS; reading them resets the kernel's counters).
    /// Such a frame never reached the channel: not decided, not logged.
    pub fn take_drops(&self) -> io::Result<u64> {
        let mut st = libc::tpacket_stats_v3 {
            tp_packets: 0,
            tp_drops: 0,
            tp_freeze_q_cnt: 0,
        };
        let mut len = std::mem::size_of_val(&st) as libc::socklen_t;
        // SAFETY: st and len are valid for the call and len is st's size.
        let r = unsafe {
            libc::getsockopt(
                self.fd.0,
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                std::ptr::addr_of_mut!(st).cast(),
                &mut len,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(u64::from(st.tp_drops))
    }

    fn block(&self, i: usize) -> *mut libc::tpacket_block_desc {
        // SAFETY: i < BLOCK_NR, inside the mapping.
        unsafe { self.map.add(i * BLOCK_SIZE).cast() }
    }

    /// The next block the kernel has filled, if any. Its frames are read
    /// in place; dropping it gives it back to the kernel.
    pub fn next_block(&mut self) -> Option<Block<'_>> {
        let b = self.block(self.next);
        // SAFETY: b is a block descriptor inside the mapping; the kernel
        // publishes a block by setting TP_STATUS_USER last, so the acquire
        // fence orders our reads of its frames after that.
        let h = unsafe {
            let status = std::ptr::addr_of!((*b).hdr.bh1.block_status);
            if std::ptr::read_volatile(status) & libc::TP_STATUS_USER == 0 {
                return None;
            }
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            std::ptr::read_volatile(std::ptr::addr_of!((*b).hdr.bh1))
        };
        Some(Block {
            ring: self,
            desc: b,
            left: h.num_pkts,
            off: h.offset_to_first_pkt as usize,
        })
    }
}

/// A block of received frames, owned by us until dropped.
pub struct Block<'a> {
    ring: &'a mut RxRing,
    desc: *mut libc::tpacket_block_desc,
    left: u32,
    off: usize,
}

impl Block<'_> {
    /// The next frame of the block (our own transmissions skipped).
    pub fn next_frame(&mut self) -> Option<RxFrame<'_>> {
        let base = self.desc.cast::<u8>();
        while self.left > 0
            && self.off + TPACKET3_HDR + std::mem::size_of::<libc::sockaddr_ll>() <= BLOCK_SIZE
        {
            self.left -= 1;
            // SAFETY: off stays inside this block, which the kernel handed
            // to us; the headers are read unaligned-safe.
            unsafe {
                let p = base.add(self.off);
                let th = std::ptr::read_unaligned(p.cast::<libc::tpacket3_hdr>());
                let sll = std::ptr::read_unaligned(p.add(TPACKET3_HDR).cast::<libc::sockaddr_ll>());
                let start = (self.off + th.tp_mac as usize).min(BLOCK_SIZE);
                let snap = (th.tp_snaplen as usize).min(BLOCK_SIZE.saturating_sub(start));
                self.off = match th.tp_next_offset {
                    0 => BLOCK_SIZE,
                    n => self.off + n as usize,
                };
                if sll.sll_pkttype == libc::PACKET_OUTGOING {
                    continue;
                }
                return Some(RxFrame {
                    data: std::slice::from_raw_parts(base.add(start), snap),
                    truncated: snap < th.tp_len as usize,
                    t_ns: u64::from(th.tp_sec) * 1_000_000_000 + u64::from(th.tp_nsec),
                });
            }
        }
        None
    }
}

impl Drop for Block<'_> {
    fn drop(&mut self) {
        // SAFETY: handing the block back: our reads of it are done (release
        // fence), then the kernel may fill it again.
        unsafe {
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            std::ptr::write_volatile(
                std::ptr::addr_of_mut!((*self.desc).hdr.bh1.block_status),
                libc::TP_STATUS_KERNEL,
            );
        }
        self.ring.next = (self.ring.next + 1) % BLOCK_NR;
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping made in open.
        unsafe { libc::munmap(self.map.cast(), self.len) };
    }
}

/// Where the sockaddr_ll follows a frame header (TPACKET_ALIGN of its size).
const TPACKET3_HDR: usize = (std::mem::size_of::<libc::tpacket3_hdr>() + libc::TPACKET_ALIGNMENT
    - 1)
    & !(libc::TPACKET_ALIGNMENT - 1);

/// Frames per sendmmsg call.
const BATCH: usize = 64;

/// A send socket on one interface: frames go straight to the driver
/// (PACKET_QDISC_BYPASS), a batch per system call.
pub struct TxSocket {
    fd: Fd,
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

impl TxSocket {
    /// A send socket bound to interface `name` (protocol 0: it receives
    /// nothing).
    pub fn open(name: &str) -> io::Result<TxSocket> {
        let fd = packet_socket()?;
        bind(fd.0, ifindex(name)?, 0)?;
        let _ = setsockopt_int(fd.0, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, 1);
        if setsockopt_int(fd.0, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, 16 << 20).is_err() {
            setsockopt_int(fd.0, libc::SOL_SOCKET, libc::SO_SNDBUF, 16 << 20)?;
        }
        Ok(TxSocket {
            fd,
            iov: vec![
                libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0
                };
                BATCH
            ],
            // SAFETY: an all-zero mmsghdr is a valid value.
            hdrs: vec![unsafe { std::mem::zeroed() }; BATCH],
        })
    }

    /// Send the frames in order; returns how many could not be sent (too
    /// large for the interface, or the device queue stayed full).
    pub fn send_all(&mut self, frames: &[Vec<u8>]) -> u64 {
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
                    libc::sendmmsg(
                        self.fd.0,
                        self.hdrs[done..n].as_mut_ptr(),
                        (n - done) as u32,
                        0,
                    )
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

/// virtio-net header (`struct virtio_net_hdr`, little-endian on the
/// packet socket): no offload; `hdr_len` bytes are copied by the kernel.
#[repr(C)]
#[derive(Clone, Copy)]
struct VnetHdr {
    flags: u8,
    gso_type: u8,
    hdr_len: u16,
    gso_size: u16,
    csum_start: u16,
    csum_offset: u16,
}

/// Where a frame's data starts in a TPACKET_V2 send slot (the header,
/// aligned; the kernel's default without PACKET_TX_HAS_OFF).
const TX_DATA: usize = (std::mem::size_of::<libc::tpacket2_hdr>() + libc::TPACKET_ALIGNMENT - 1)
    & !(libc::TPACKET_ALIGNMENT - 1);
const VNET: usize = std::mem::size_of::<VnetHdr>();
const TX_BLOCK_NR: usize = 64;
const TX_FRAMES_PER_BLOCK: usize = 32;
/// Times to look again (flushing and yielding in between) for a free slot
/// before a frame counts as not sent.
const TX_RETRIES: u32 = 1000;

/// The MTU of interface `name`.
fn mtu(fd: RawFd, name: &str) -> io::Result<usize> {
    // SAFETY: an all-zero ifreq is valid; the name is copied in below.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req
        .ifr_name
        .iter_mut()
        .zip(name.bytes().take(libc::IFNAMSIZ - 1))
    {
        *d = s as libc::c_char;
    }
    // SAFETY: SIOCGIFMTU fills ifr_ifru.ifru_mtu of a valid ifreq.
    let r = unsafe { libc::ioctl(fd, libc::SIOCGIFMTU as _, &mut req) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the ioctl wrote the mtu member.
    Ok(unsafe { req.ifr_ifru.ifru_mtu } as usize)
}

/// A send socket with a TPACKET_V2 ring.
pub struct TxRing {
    fd: Fd,
    map: *mut u8,
    len: usize,
    slot: usize,
    slots: usize,
    block: usize,
    per_block: usize,
    next: usize,
    queued: usize,
    mtu: usize,
}

impl TxRing {
    /// A send ring on interface `name` sized for its MTU (protocol 0: the
    /// socket receives nothing).
    pub fn open(name: &str) -> io::Result<TxRing> {
        let fd = packet_socket()?;
        let ifindex = ifindex(name)?;
        let mtu = mtu(fd.0, name)?;
        setsockopt_int(
            fd.0,
            libc::SOL_PACKET,
            libc::PACKET_VERSION,
            libc::tpacket_versions::TPACKET_V2 as libc::c_int,
        )?;
        setsockopt_int(fd.0, libc::SOL_PACKET, libc::PACKET_VNET_HDR, 1)?;
        // a frame the kernel rejects is skipped, not left blocking the ring
        setsockopt_int(fd.0, libc::SOL_PACKET, libc::PACKET_LOSS, 1)?;
        let _ = setsockopt_int(fd.0, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, 1);
        if setsockopt_int(fd.0, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, 16 << 20).is_err() {
            setsockopt_int(fd.0, libc::SOL_SOCKET, libc::SO_SNDBUF, 16 << 20)?;
        }
        // header, virtio-net header, Ethernet header, a VLAN tag, the MTU
        let slot = (TX_DATA + VNET + 18 + mtu + 15) & !15;
        let page = 4096;
        let block = (slot * TX_FRAMES_PER_BLOCK).div_ceil(page) * page;
        let per_block = block / slot;
        let req = libc::tpacket_req {
            tp_block_size: block as u32,
            tp_block_nr: TX_BLOCK_NR as u32,
            tp_frame_size: slot as u32,
            tp_frame_nr: (per_block * TX_BLOCK_NR) as u32,
        };
        setsockopt(fd.0, libc::SOL_PACKET, libc::PACKET_TX_RING, &req)?;
        let len = block * TX_BLOCK_NR;
        let map = map_ring(fd.0, len)?;
        let ring = TxRing {
            fd,
            map,
            len,
            slot,
            slots: per_block * TX_BLOCK_NR,
            block,
            per_block,
            next: 0,
            queued: 0,
            mtu,
        };
        bind(ring.fd.0, ifindex, 0)?;
        Ok(ring)
    }

    fn slot_hdr(&self, i: usize) -> *mut libc::tpacket2_hdr {
        let at = (i / self.per_block) * self.block + (i % self.per_block) * self.slot;
        // SAFETY: at + slot <= len: i < slots, slots fit in their blocks.
        unsafe { self.map.add(at).cast() }
    }

    fn status(&self, i: usize) -> u32 {
        // SAFETY: the slot header is inside the mapping; the kernel writes
        // the status concurrently, hence the volatile read.
        let s =
            unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*self.slot_hdr(i)).tp_status)) };
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        s
    }

    /// Write one frame into the next slot, to go at the next
    /// [`TxRing::flush`]. False when it cannot be sent: larger than the
    /// interface takes, or no slot came free.
    pub fn push(&mut self, frame: &[u8]) -> bool {
        let vlan = frame.len() >= 14 && frame[12..14] == [0x81, 0x00];
        if frame.len() > self.mtu + 14 + if vlan { 4 } else { 0 } || frame.len() < 14 {
            return false;
        }
        let mut tries = 0;
        while self.status(self.next) != libc::TP_STATUS_AVAILABLE {
            if tries >= TX_RETRIES {
                return false;
            }
            tries += 1;
            let _ = self.flush();
            std::thread::yield_now();
        }
        let h = self.slot_hdr(self.next);
        let vnet = VnetHdr {
            flags: 0,
            gso_type: 0,
            hdr_len: (frame.len() as u16).to_le(),
            gso_size: 0,
            csum_start: 0,
            csum_offset: 0,
        };
        // SAFETY: the slot is ours (AVAILABLE) and large enough for the
        // header, the virtio-net header and a frame of at most mtu + 18
        // bytes; the release fence publishes the data before the status.
        unsafe {
            let data = h.cast::<u8>().add(TX_DATA);
            std::ptr::write_unaligned(data.cast::<VnetHdr>(), vnet);
            std::ptr::copy_nonoverlapping(frame.as_ptr(), data.add(VNET), frame.len());
            (*h).tp_len = (VNET + frame.len()) as u32;
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            std::ptr::write_volatile(
                std::ptr::addr_of_mut!((*h).tp_status),
                libc::TP_STATUS_SEND_REQUEST,
            );
        }
        self.next = (self.next + 1) % self.slots;
        self.queued += 1;
        true
    }

    /// Send every frame written since the last flush (one system call).
    pub fn flush(&mut self) -> io::Result<()> {
        if self.queued == 0 {
            return Ok(());
        }
        self.queued = 0;
        // SAFETY: a send with no buffer: the kernel takes the frames from
        // the ring.
        let r = unsafe {
            libc::sendto(
                self.fd.0,
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if !matches!(
                e.raw_os_error(),
                Some(libc::EAGAIN) | Some(libc::EINTR) | Some(libc::ENOBUFS)
            ) {
                return Err(e);
            }
        }
        Ok(())
    }
}

impl Drop for TxRing {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping made in open.
        unsafe { libc::munmap(self.map.cast(), self.len) };
    }
}

/// The way out of one interface: a send ring, or sendmmsg where a ring
/// cannot be set up.
pub enum Tx {
    /// PACKET_TX_RING.
    Ring(TxRing),
    /// sendmmsg batches.
    Socket(TxSocket, Vec<Vec<u8>>),
}

impl Tx {
    /// A send ring on `name`, or a sendmmsg socket if the ring fails.
    pub fn open(name: &str) -> io::Result<Tx> {
        match TxRing::open(name) {
            Ok(r) => Ok(Tx::Ring(r)),
            Err(e) if e.to_string().contains("CAP_NET_RAW") => Err(e),
            Err(_) => Ok(Tx::Socket(TxSocket::open(name)?, Vec::new())),
        }
    }
}
