//! Ethernet / IPv4 / UDP framing: just enough to find the UDP payload of a
//! frame and to repair the UDP checksum after bit errors.

/// What a frame is, as far as the emulator cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Not IPv4 (ARP, IPv6, ...): forwarded with delay and rate only.
    NonIp,
    /// An IPv4 fragment (MF set or offset > 0): never classified.
    Fragment,
    /// Unfragmented IPv4 that is not UDP.
    Ipv4,
    /// Unfragmented IPv4/UDP.
    Udp,
}

impl Kind {
    /// The name written in the decision log.
    pub fn name(self) -> &'static str {
        match self {
            Kind::NonIp => "non-ip",
            Kind::Fragment => "fragment",
            Kind::Ipv4 => "ipv4",
            Kind::Udp => "udp",
        }
    }
}

/// Byte positions inside one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// What the frame is.
    pub kind: Kind,
    /// Start of the IP header.
    pub ip: usize,
    /// Start of the IP payload (the L4 header and data).
    pub l4: usize,
    /// End of the IP payload (of the UDP datagram for `Udp`).
    pub end: usize,
    /// UDP source port (0 unless `Udp`).
    pub src_port: u16,
    /// UDP destination port (0 unless `Udp`).
    pub dst_port: u16,
}

impl Layout {
    /// Start of the UDP payload (only meaningful for Kind::Udp).
    pub fn payload(&self) -> usize {
        self.l4 + 8
    }

    /// The byte range bit errors fall in: the UDP payload of a UDP frame,
    /// the IP payload of other IPv4 frames, nothing for non-IP frames.
    pub fn error_range(&self) -> (usize, usize) {
        match self.kind {
            Kind::Udp => (self.payload(), self.end),
            Kind::Ipv4 | Kind::Fragment => (self.l4, self.end),
            Kind::NonIp => (0, 0),
        }
    }
}

const ETH_HLEN: usize = 14;

/// Locate the layers of an Ethernet frame.
pub fn layout(f: &[u8]) -> Layout {
    let non_ip = Layout {
        kind: Kind::NonIp,
        ip: 0,
        l4: 0,
        end: f.len(),
        src_port: 0,
        dst_port: 0,
    };
    if f.len() < ETH_HLEN + 20 || f[12] != 0x08 || f[13] != 0x00 {
        return non_ip;
    }
    let ip = ETH_HLEN;
    let ihl = usize::from(f[ip] & 0x0f) * 4;
    if f[ip] >> 4 != 4 || ihl < 20 || f.len() < ip + ihl {
        return non_ip;
    }
    let total = usize::from(u16::from_be_bytes([f[ip + 2], f[ip + 3]]));
    let end = (ip + total).min(f.len());
    if end < ip + ihl {
        return non_ip;
    }
    let frag = u16::from_be_bytes([f[ip + 6], f[ip + 7]]) & 0x3fff;
    let l4 = ip + ihl;
    let mut out = Layout {
        kind: Kind::Ipv4,
        ip,
        l4,
        end,
        src_port: 0,
        dst_port: 0,
    };
    if frag != 0 {
        out.kind = Kind::Fragment;
        return out;
    }
    if f[ip + 9] != 17 || end < l4 + 8 {
        return out;
    }
    let ulen = usize::from(u16::from_be_bytes([f[l4 + 4], f[l4 + 5]]));
    if ulen < 8 || l4 + ulen > end {
        return out;
    }
    out.kind = Kind::Udp;
    out.end = l4 + ulen;
    out.src_port = u16::from_be_bytes([f[l4], f[l4 + 1]]);
    out.dst_port = u16::from_be_bytes([f[l4 + 2], f[l4 + 3]]);
    out
}

fn sum16(data: &[u8], mut acc: u32) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u32::from(*last) << 8;
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// The UDP checksum the frame should carry (RFC 768, pseudo-header with
/// the IPv4 addresses, protocol 17 and the UDP length).
pub fn udp_checksum(f: &[u8], lay: &Layout) -> u16 {
    let ip = lay.ip;
    let udp = &f[lay.l4..lay.end];
    let mut acc = sum16(&f[ip + 12..ip + 20], 0);
    acc += 17 + udp.len() as u32;
    acc = sum16(&udp[..6], acc);
    acc = sum16(&udp[8..], acc);
    match fold(acc) {
        0 => 0xffff, // RFC 768: a computed zero is sent as all ones
        c => c,
    }
}

/// Recompute a UDP frame's checksum in place; a datagram sent without a
/// checksum (zero) stays without one.
pub fn fix_udp_checksum(f: &mut [u8], lay: &Layout) {
    if lay.kind != Kind::Udp {
        return;
    }
    let at = lay.l4 + 6;
    if f[at] == 0 && f[at + 1] == 0 {
        return;
    }
    let c = udp_checksum(f, lay);
    f[at..at + 2].copy_from_slice(&c.to_be_bytes());
}

/// True when the frame's UDP checksum is absent or right.
pub fn udp_checksum_ok(f: &[u8], lay: &Layout) -> bool {
    let at = lay.l4 + 6;
    let have = u16::from_be_bytes([f[at], f[at + 1]]);
    have == 0 || have == udp_checksum(f, lay)
}

/// Flip the bits at the given positions (bit 0 = MSB of byte 0 of the frame).
pub fn flip(f: &mut [u8], bits: &[u32]) {
    for &b in bits {
        let byte = (b / 8) as usize;
        if byte < f.len() {
            f[byte] ^= 0x80 >> (b % 8);
        }
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A real IPv4/UDP frame, built by hand: 10.213.7.1:1113 -> 10.213.7.2:1113,
    /// payload b"hello", checksum as Linux computes it.
    pub fn udp_frame(payload: &[u8], sport: u16, dport: u16) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
        let total = 20 + 8 + payload.len();
        f.extend_from_slice(&[
            0x45,
            0,
            (total >> 8) as u8,
            total as u8,
            0,
            1,
            0x40,
            0,
            64,
            17,
            0,
            0,
        ]);
        f.extend_from_slice(&[10, 213, 7, 1, 10, 213, 7, 2]);
        let ulen = 8 + payload.len();
        f.extend_from_slice(&sport.to_be_bytes());
        f.extend_from_slice(&dport.to_be_bytes());
        f.extend_from_slice(&(ulen as u16).to_be_bytes());
        f.extend_from_slice(&[0xff, 0xff]);
        f.extend_from_slice(payload);
        let lay = layout(&f);
        fix_udp_checksum(&mut f, &lay);
        f
    }

    #[test]
    fn finds_udp_payload() {
        let f = udp_frame(b"hello", 1113, 1114);
        let lay = layout(&f);
        assert_eq!(lay.kind, Kind::Udp);
        assert_eq!((lay.src_port, lay.dst_port), (1113, 1114));
        assert_eq!(&f[lay.payload()..lay.end], b"hello");
        assert!(udp_checksum_ok(&f, &lay));
    }

    #[test]
    fn checksum_matches_known_value() {
        // RFC 768 / RFC 1071 arithmetic spelled out word by word: pseudo-header
        // (addresses, protocol, UDP length), UDP header without the checksum
        // field, payload padded with a zero byte; the checksum is the
        // complement of the folded sum.
        let f = udp_frame(b"hello", 1113, 1113);
        let lay = layout(&f);
        let mut acc: u32 = 0x0ad5 + 0x0701 + 0x0ad5 + 0x0702 + 17 + 13;
        acc += 0x0459 + 0x0459 + 13 + 0x6865 + 0x6c6c + 0x6f00;
        while acc >> 16 != 0 {
            acc = (acc & 0xffff) + (acc >> 16);
        }
        assert_eq!(udp_checksum(&f, &lay), !(acc as u16));
    }

    #[test]
    fn flipped_payload_breaks_checksum_until_fixed() {
        let mut f = udp_frame(&[0u8; 64], 1, 2);
        let lay = layout(&f);
        flip(&mut f, &[(lay.payload() as u32) * 8 + 3]);
        assert_eq!(f[lay.payload()], 0x10);
        assert!(!udp_checksum_ok(&f, &lay));
        fix_udp_checksum(&mut f, &lay);
        assert!(udp_checksum_ok(&f, &lay));
    }

    #[test]
    fn fragments_and_arp_are_not_udp() {
        let mut f = udp_frame(b"x", 1, 2);
        f[14 + 6] = 0x20; // more fragments
        assert_eq!(layout(&f).kind, Kind::Fragment);
        let arp = [0xffu8; 42];
        let mut arp = arp.to_vec();
        arp[12] = 0x08;
        arp[13] = 0x06;
        assert_eq!(layout(&arp).kind, Kind::NonIp);
        assert_eq!(layout(&[0u8; 10]).kind, Kind::NonIp);
    }
}
