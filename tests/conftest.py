"""The suite runs in as many pytest-xdist workers as the machine has cores (``-n auto``);
tests that start processes all run in one of them, in turn, so that two pools of worker
processes never compete for the cores."""

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("processes"):
            item.add_marker(pytest.mark.xdist_group("processes"))
