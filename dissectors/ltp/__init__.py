"""LTP (RFC 5326): the Lua dissector ``ltp.lua`` and the Scapy layer :mod:`dissectors.ltp.layer`."""
