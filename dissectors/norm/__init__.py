"""NORM (RFC 5740): the Scapy layer :mod:`dissectors.norm.layer`."""
