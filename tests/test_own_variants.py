"""A reader's own variants: a workload in their module, named ``module:NAME``, timed in fresh
processes; the API page's example runs as shown."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from perfguide.processes import worker

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "own_variants"


@pytest.fixture
def row_norms(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    import row_norms

    return row_norms


def test_a_module_reference_names_the_workload_it_holds(row_norms):
    assert worker._workload("row_norms:WORKLOAD", {}, {}) is row_norms.WORKLOAD


def test_a_reference_that_cannot_be_loaded_says_why():
    with pytest.raises(ValueError, match="cannot load workload no_such_module:WORKLOAD"):
        worker._workload("no_such_module:WORKLOAD", {}, {})


def test_the_examples_variants_compute_the_same(row_norms):
    x = row_norms.make_call("loop", 8).args[0]
    expected = np.linalg.norm(x.numpy(), axis=1).sum()
    for variant in row_norms.WORKLOAD.variants:
        np.testing.assert_allclose(row_norms.VARIANTS[variant](x), expected, rtol=1e-5)


def test_the_example_prints_its_table_and_verdict():
    env = os.environ | {"PERFGUIDE_QUICK": "1"}
    done = subprocess.run(
        [sys.executable, "row_norms.py"], cwd=EXAMPLE, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "one-op" in done.stdout and "vs loop" in done.stdout
    assert "one-op is faster than loop (" in done.stdout
