//! The payload pattern every run sends, for the Rust harnesses (each
//! includes this file with `#[path]`; the Python side is
//! conformance/core/wire.py's `payload`). Byte i of the data is
//! (i * multiplier + increment) % modulus, the numbers in the `payload`
//! entry of the protocol's specs/<proto>/wire.json, which each harness
//! compiles in.

/// A protocol's payload pattern, as its wire.json gives it.
pub struct Payload {
    multiplier: u64,
    increment: u64,
    modulus: u64,
}

impl Payload {
    /// The `payload` entry of `wire` (the text of `file`, named in panics:
    /// a bad entry is a build-time fact gone wrong, found on first use).
    pub fn from_wire(wire: &str, file: &str) -> Payload {
        let wire: serde_json::Value =
            serde_json::from_str(wire).unwrap_or_else(|_| panic!("{file} is JSON"));
        let number = |key: &str| {
            wire["payload"][key]
                .as_u64()
                .unwrap_or_else(|| panic!("{file}: payload.{key} is a number"))
        };
        let payload = Payload {
            multiplier: number("multiplier"),
            increment: number("increment"),
            modulus: number("modulus"),
        };
        // every value must fit the byte it becomes
        assert!(
            (1..=256).contains(&payload.modulus),
            "{file}: payload.modulus is 1..=256"
        );
        payload
    }

    /// Byte `i` of the data.
    pub fn byte(&self, i: u64) -> u8 {
        #[allow(clippy::cast_possible_truncation)] // value < modulus <= 256
        let b =
            ((i.wrapping_mul(self.multiplier).wrapping_add(self.increment)) % self.modulus) as u8;
        b
    }
}

/// The hex sha256 of `data`, by coreutils' sha256sum (no hashing crate is a
/// dependency of either harness, and they run on Linux only): the harnesses'
/// tests pin the pattern's digest with it.
#[cfg(test)]
pub fn sha256_hex(data: &[u8]) -> String {
    use std::io::Write;
    use std::process::{Command, Stdio};

    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum runs");
    child
        .stdin
        .take()
        .expect("a stdin")
        .write_all(data)
        .expect("sha256sum reads");
    let out = child.wait_with_output().expect("sha256sum ends");
    let text = String::from_utf8(out.stdout).expect("sha256sum prints text");
    text.split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}
