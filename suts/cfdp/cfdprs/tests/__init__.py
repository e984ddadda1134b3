"""Tests of the cfdp-rs harness (a package so that pytest tells this
test_harness.py from suts/cfdp/cfdppy/tests/test_harness.py)."""
