"""The suite runs in as many pytest-xdist workers as this process may use cores (``-n auto``);
tests that start processes all run in one of them, in turn, so that two pools of worker
processes never compete for the cores."""

import os

import pytest


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    # The cores this process may run on (taskset, a container's cpuset), not the machine's.
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("processes"):
            item.add_marker(pytest.mark.xdist_group("processes"))
