"""Implementations of CFDP (CCSDS 727.0-B-5) under test: one package each,
and what they share (:mod:`.common`)."""
