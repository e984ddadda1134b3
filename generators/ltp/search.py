"""LTP's search space (the ``search_space`` capability): what the Hypothesis
search (conformance/search.py) impairs, and the block every example
transfers.

A data segment is named by its kind and the byte it starts with on the
block's grid (its rule matches the segment that holds that byte, whatever
the segmentation), a control segment by its type, as the model names them
(specs/ltp/LTP.tla); the bytes are those of the block below.
"""

from __future__ import annotations

from conformance.core.types import Scenario
from conformance.protocols.ltp import LtpBlock
from generators.ltp.outcomes import holding

# What each channel direction can impair.
FORWARD = (
    "red_data@0",
    "red_data@1000",
    "red_data@2000",
    "green_data@3000",
    "RA",
    "CS",
    "CAR",
)
RETURN = ("RS", "CR", "CAS")


# The block every example transfers (base_scenario).
BLOCK = LtpBlock(block_len=4000, red_len=3000, segment_size=1000)


def match_of(unit: str) -> dict[str, str | int]:
    """ "red_data@1000" -> {kind, holds}: the data segment holding that byte,
    whatever the segmentation, named as generated rules name it (the
    checkpoint "red_data@2000" by the red part's last byte, 2999:
    outcomes.holding); "RS" -> {type}."""
    if "@" in unit:
        kind, offset = unit.split("@")
        return {"kind": kind, "holds": holding(kind, int(offset), BLOCK)}
    return {"type": unit}


def short(unit: str) -> str:
    """ "red_data@1000" -> "red1000"; "RS" -> "RS"."""
    return unit.replace("_data@", "")


def base_scenario(name: str, limit: int) -> Scenario:
    """The block every example transfers: 3 red segments and 1 green, 1000
    bytes each (the model's CI geometry), the given retransmission limit."""
    return Scenario.model_validate(
        {
            "name": name,
            "protocol": "ltp",
            "description": "Hypothesis search (conformance/search.py)",
            "params": BLOCK.model_copy(update={"retransmission_limit": limit}),
            "expect": {
                "red_bytes_delivered": 0,
                "green_bytes_delivered": 0,
                "sender_outcome": "cancelled",
                "receiver_outcome": "cancelled",
            },
            "time_limit_s": 30,
        }
    )
