//! A harness socket's receive buffer, raised so that a burst from the peer
//! waits in the kernel instead of being dropped there (each Rust harness
//! includes this file with `#[path]`; suts/sockbuf.py is the same rule for
//! the Python harnesses and our tester). A datagram dropped at a
//! full socket is one the capture shows arriving: the run is then an
//! `error` (conformance/runner.py `socket_overflowed`), so the buffer is
//! made large enough for any burst a scenario sends.

use std::net::UdpSocket;
use std::os::fd::AsRawFd;

/// The receive buffer asked for: 16 MiB, room for over 10,000 datagrams of
/// 1,500 octets.
pub const RCVBUF: i32 = 16 << 20;

// Linux's <asm-generic/socket.h> numbers (the same on x86-64 and arm64);
// std links the C library, so its setsockopt needs no crate.
const SOL_SOCKET: i32 = 1;
const SO_RCVBUF: i32 = 8;
const SO_RCVBUFFORCE: i32 = 33;

extern "C" {
    fn setsockopt(fd: i32, level: i32, name: i32, value: *const i32, len: u32) -> i32;
}

fn set(sock: &UdpSocket, name: i32, bytes: i32) -> bool {
    // SAFETY: the descriptor is the socket's own, and the value is an int
    // that outlives the call.
    unsafe { setsockopt(sock.as_raw_fd(), SOL_SOCKET, name, &bytes, 4) == 0 }
}

/// Raises `sock`'s receive buffer to `RCVBUF`: past net.core.rmem_max where
/// the process may (SO_RCVBUFFORCE needs CAP_NET_ADMIN, which a run's
/// namespaces give it), else as far as rmem_max lets it.
pub fn raise_receive_buffer(sock: &UdpSocket) {
    if !set(sock, SO_RCVBUFFORCE, RCVBUF) {
        set(sock, SO_RCVBUF, RCVBUF);
    }
}
