"""CFDP's interoperability configurations (the ``interop`` capability,
conformance/interop.py): what two implementations must agree on (entity-ID
and sequence-number widths, checksum type, PDU CRC, segment size,
transmission mode), and each configuration's scenarios: the nominal
transfer and the loss scenarios of :data:`LOSSES` for its mode, their
expectations computed by the model (:func:`generators.cfdp.outcomes.expectation_for`).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from conformance.core.capabilities import InteropConfig
from conformance.core.contract import field_int
from conformance.core.types import Scenario
from generators.cfdp import catalogue, outcomes
from generators.outcomes import PlannedLoss, interop_scenarios

# Each width, checksum, CRC setting, segment size and class at least once;
# the first configuration runs every loss scenario of its mode.
CONFIGS = (
    InteropConfig("c2-e2-s32-modular", {"mode": "class2", "entity_id_len": 2,
                  "sequence_number_len": 4, "checksum_type": "modular", "pdu_crc": False,
                  "segment_size": 1024}, losses=True),
    InteropConfig("c1-e1-s8-null", {"mode": "class1", "entity_id_len": 1,
                  "sequence_number_len": 1, "checksum_type": "null", "pdu_crc": False,
                  "segment_size": 512}),
    InteropConfig("c2-e4-s16-crc32-crc", {"mode": "class2", "entity_id_len": 4,
                  "sequence_number_len": 2, "checksum_type": "crc32", "pdu_crc": True,
                  "segment_size": 2048}, mtu=9000),
    InteropConfig("c1c-e2-s32-crc32c-crc", {"mode": "class1-closure", "entity_id_len": 2,
                  "sequence_number_len": 4, "checksum_type": "crc32c", "pdu_crc": True,
                  "segment_size": 4096}, mtu=9000),
    InteropConfig("c2-e1-s8-crc32c", {"mode": "class2", "entity_id_len": 1,
                  "sequence_number_len": 1, "checksum_type": "crc32c", "pdu_crc": False,
                  "segment_size": 4096}, mtu=9000),
    # what every implementation can take (LibreCube's narrow range among them)
    InteropConfig("c2-e1-s8-modular-deferred", {"mode": "class2", "entity_id_len": 1,
                  "sequence_number_len": 1, "checksum_type": "modular", "pdu_crc": False,
                  "segment_size": 1024, "nak_mode": "deferred"}),
)  # fmt: skip

# The loss scenarios of each mode, as (wire key, segment) of the first
# transmission lost (generators.cfdp.outcomes); a configuration without
# ``losses`` runs the first only.
LOSSES: dict[str, tuple[tuple[str, str, int], ...]] = {
    "class2": (("forward", "file_data", 0), ("forward", "metadata", 0), ("forward", "eof", 0),
               ("return", "ack_eof", 0), ("return", "finished", 0),
               ("forward", "ack_finished", 0)),
    "class1": (("forward", "file_data", 1),),
    "class1-closure": (("forward", "file_data", 0), ("return", "finished", 0)),
}  # fmt: skip


def config_plans(cfg: InteropConfig) -> dict[str, list[PlannedLoss]]:
    """A configuration's scenarios by name (no TLC): the nominal transfer
    and its loss scenarios, each with its planned losses."""
    losses = LOSSES[str(cfg.params["mode"])]
    losses = losses if cfg.losses else losses[:1]
    plans: dict[str, list[PlannedLoss]] = {f"cfdp-interop-{cfg.name}-nominal": []}
    for x in (PlannedLoss(d, k, o, 1) for d, k, o in losses):
        plans[f"cfdp-interop-{cfg.name}-{catalogue._short(x)}"] = [x]
    return plans


def config_names(cfg: InteropConfig) -> list[str]:
    """The configuration's scenario names (:func:`config_plans`, no TLC)."""
    return list(config_plans(cfg))


def config_scenarios(
    cfg: InteropConfig, workdir: Path, names: Collection[str] | None = None
) -> list[Scenario]:
    """The nominal transfer and the loss scenarios of one configuration
    (``names``: those of them only), each with the outcome set the model
    computes for it."""
    seg = field_int(cfg.params["segment_size"])
    t = catalogue.Bound(str(cfg.params["mode"]), 0).transfer()
    t = t.model_copy(update={**cfg.params, "file_len": 2 * seg - 100})
    return interop_scenarios(
        cfg,
        config_plans(cfg),
        t,
        lambda x: outcomes.impairment_of(x, t, note="interop loss"),
        outcomes.expectation_for,
        workdir,
        names,
    )
