"""The protocols dtnconform knows. Importing this package registers each of
them in :mod:`conformance.core.registry`: one import line per protocol, and
the protocol's module registers its ``SPEC`` (docs/adding-a-protocol.md).

The names below are the registry's and the contract's, re-exported for the
application layer (the CLI, the runner, the judge, the report).
"""

from __future__ import annotations

from conformance.core.contract import (
    Delivery,
    Dissector,
    FieldTypes,
    ProtocolParams,
    ProtocolSpec,
    Rule,
)
from conformance.core.registry import all_specs, get, names, on_change, register, unregister
from conformance.protocols import cfdp as cfdp  # registers CFDP
from conformance.protocols import ltp as ltp  # registers LTP
from conformance.protocols import norm as norm  # registers NORM

__all__ = [
    "Delivery",
    "Dissector",
    "FieldTypes",
    "ProtocolParams",
    "ProtocolSpec",
    "Rule",
    "all_specs",
    "get",
    "names",
    "on_change",
    "register",
    "unregister",
]
