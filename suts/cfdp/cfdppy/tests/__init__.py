"""Tests of the cfdp-py harness."""
