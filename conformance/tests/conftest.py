from __future__ import annotations

import os
import shutil

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = os.geteuid() == 0 and shutil.which("ip") is not None
    for item in items:
        if "netns" in item.keywords and not root:
            item.add_marker(pytest.mark.skip(reason="needs root for network namespaces"))
