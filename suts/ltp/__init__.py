"""Implementations of LTP (RFC 5326) under test: one package each."""
