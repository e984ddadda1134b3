"""Tests of the LibreCube cfdp 0.2.0 harness (a package so that pytest tells this
test_harness.py from suts/cfdp/cfdppy/tests/test_harness.py)."""
