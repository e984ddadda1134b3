"""LTP's interoperability configurations (the ``interop`` capability,
conformance/interop.py): what two engines must agree on (the block's red and
green parts, the segment size, the retransmission limit), and each
configuration's scenarios: the nominal block and the losses of
:data:`LOSSES`, their outcome sets computed by the model
(:func:`generators.ltp.outcomes.expectation_for`).

Every loss names what holds for any segmentation (the first data segment,
the first report, the first report acknowledgment), so engines that cut a
block differently (ION counts the header in its segment size) meet the
same impairment. The retransmission limit is 3: ION's least
(suts/ltp/ion/README.md), and any engine can take it.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from conformance.core.capabilities import InteropConfig
from conformance.core.types import Scenario
from conformance.protocols.ltp import LtpBlock
from generators.ltp import outcomes
from generators.outcomes import PlannedLoss, interop_scenarios

_LIMIT = {"retransmission_limit": 3, "client_service_id": 1}

# A red block, a block of both colours and a green one; the first runs
# every loss.
CONFIGS = (
    InteropConfig("red-10000-s1000", {"block_len": 10000, "red_len": 10000,
                  "segment_size": 1000, **_LIMIT}, losses=True),
    InteropConfig("mixed-4000-r3000-s1000", {"block_len": 4000, "red_len": 3000,
                  "segment_size": 1000, **_LIMIT}),
    InteropConfig("green-3000-s1000", {"block_len": 3000, "red_len": 0,
                  "segment_size": 1000, **_LIMIT}),
)  # fmt: skip

# (direction, wire key, model segment): lost once, the first of its kind
LOSSES: tuple[tuple[str, str, int], ...] = (
    ("forward", "red_data", 0),  # the first data segment: at offset 0 in any segmentation
    ("return", "RS", 0),
    ("forward", "RA", 0),
)


def config_plans(cfg: InteropConfig) -> dict[str, list[PlannedLoss]]:
    """A configuration's scenarios by name (no TLC): the nominal block and,
    for a configuration with ``losses`` (a red one), each loss."""
    plans: dict[str, list[PlannedLoss]] = {f"ltp-interop-{cfg.name}-nominal": []}
    if cfg.losses:
        for d, k, o in LOSSES:
            plans[f"ltp-interop-{cfg.name}-lost-{k.replace('_', '')}.1"] = [PlannedLoss(d, k, o, 1)]
    return plans


def config_names(cfg: InteropConfig) -> list[str]:
    """The configuration's scenario names (:func:`config_plans`, no TLC)."""
    return list(config_plans(cfg))


def config_scenarios(
    cfg: InteropConfig, workdir: Path, names: Collection[str] | None = None
) -> list[Scenario]:
    """The nominal block and the loss scenarios of one configuration
    (``names``: those of them only), each with the outcome set the model
    computes for it."""
    block = LtpBlock.model_validate(cfg.params)
    return interop_scenarios(
        cfg,
        config_plans(cfg),
        block,
        lambda x: outcomes.impairment_of(x, block, note="interop loss"),
        outcomes.expectation_for,
        workdir,
        names,
    )
