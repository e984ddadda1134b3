"""cfdp-rs under test: its endpoint file (endpoint.toml) and Rust harness; no
Python adapter. This file makes its tests a package of their own."""
