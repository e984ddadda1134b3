"""ION-DTN under test: its endpoint file (endpoint.toml), role script and
client; no Python adapter. This file makes its tests a package of their own."""
