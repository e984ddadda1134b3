"""Tests of the Yamcs harness."""
