//! Minimal JSON writing for the hot path (the decision log): no allocation
//! beyond the caller's line buffer.

use std::fmt::Write as _;

/// Append `s` as a JSON string literal.
pub fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Append the decimal digits of `n` (no formatting machinery: this runs
/// several times per frame in the decision log).
pub fn write_u64(out: &mut String, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // SAFETY: only ASCII digits were written.
    out.push_str(unsafe { std::str::from_utf8_unchecked(&buf[i..]) });
}

/// Append `,"key":n`.
pub fn field_u64(out: &mut String, key: &str, n: u64) {
    out.push_str(",\"");
    out.push_str(key);
    out.push_str("\":");
    write_u64(out, n);
}

#[cfg(test)]
mod tests {
    #[test]
    fn integers() {
        for n in [0u64, 7, 10, 99, 1234567890, u64::MAX] {
            let mut s = String::new();
            super::write_u64(&mut s, n);
            assert_eq!(s, n.to_string());
        }
    }

    #[test]
    fn escapes_round_trip_through_serde() {
        let mut s = String::new();
        super::write_str(&mut s, "a\"b\\c\n\u{1}é");
        let back: String = serde_json::from_str(&s).unwrap();
        assert_eq!(back, "a\"b\\c\n\u{1}é");
    }
}
