"""Tests of the CFDP Scapy layer."""
