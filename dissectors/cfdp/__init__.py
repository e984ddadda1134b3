"""CFDP (CCSDS 727.0-B-5): the Scapy layer :mod:`dissectors.cfdp.layer`."""
