"""Every test session sees the registered protocols, as the CLI does:
importing conformance.protocols registers them (conformance.core.registry)."""

import conformance.protocols  # noqa: F401
