"""Tests of the NORM Scapy layer."""
