"""How far reruns land on a machine: the calibration in force, which every published interval
is built from.

A run of fresh processes shows how far its own processes spread, not how far the machine moves
between runs minutes or an hour apart. A :class:`Calibration` holds both, for times and for
ratios of two variants timed in the same processes, and how far memory growth rates move
between runs; :mod:`perfguide.measure.calibrate` fits one to several runs of the same code.
Workloads do not drift alike (most reruns of a workload agree closely, while some workloads
shift as a whole between runs), nor do the measurements within one, so a calibration also holds
each fitted workload's own drift and each fitted measurement's (a variant at a size, or a ratio
of two variants).

The package ships the calibration of each machine that has built the guide (its ``cpu_model``
names the machine, its ``source`` when and from what), and a run uses the one fitted on its own
machine; a machine without one gets the guide's first build machine's, which the build-machine
page then says is another CPU's. ``$PERFGUIDE_CALIBRATION`` names another file, such as your own
machine's.

A host can run a whole build slow or fast: a calibration's drift covers the host's moves over
the runs it was fitted on, not a run on an hour slower than all of them. So a calibration also
holds how long a fixed probe took in the runs it was fitted on (a docs build times it between
its chapters), and a run that timed the probe too (``$PERFGUIDE_HOST_PROBE``) widens its
intervals on times by how far its host stood from there, beyond how far the fitted runs' hosts
moved themselves (:attr:`Calibration.host_excess`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfguide.measure.cpu import this_machine
from perfguide.measure.stats import Spread

#: Names a calibration file to use instead of the one the package ships.
CALIBRATION_ENV = "PERFGUIDE_CALIBRATION"
#: The calibrations the package ships, a file for each machine that has built the guide.
SHIPPED = Path(__file__).with_name("calibrations")
#: The calibration a machine without one of its own is given: the first build machine's.
FALLBACK = SHIPPED / "amd-epyc.json"
#: Holds the probe's times this run took (JSON, seconds by probe), which its intervals widen by.
HOST_PROBE_ENV = "PERFGUIDE_HOST_PROBE"


def row_key(workload: str, label: str, size: object, device: str | None) -> str:
    """The name a calibration gives one measurement: a variant of a workload at a size.

    >>> row_key("eager-add", "numpy", 1000, "cpu")
    'eager-add|numpy|1000|cpu'
    """
    return "|".join(map(str, (workload, label, size, device)))


def ratio_key(workload: str, a: str, b: str, size: object, device: str | None) -> str:
    """The name a calibration gives the ratio of variants ``a`` and ``b`` (either way round:
    a ratio and its inverse drift alike) timed in the same processes.

    >>> ratio_key("w", "slow", "fast", 8, "cpu") == ratio_key("w", "fast", "slow", 8, "cpu")
    True
    """
    first, second = sorted((a, b))
    return row_key(workload, f"{first}/{second}", size, device)


#: The group a calibration fits ratios under that each process works out for itself, which a
#: claim judges (a hand-rolled timer's reading over the harness's, say): no workload times them.
PER_PROCESS = "per-process"


def per_process_key(statement: str) -> str:
    """The name a calibration gives a ratio each process works out for itself: the statement
    of the claim judged on it.

    >>> per_process_key("x misleads")
    'per-process|x misleads'
    """
    return f"{PER_PROCESS}|{statement}"


def host_shift(seen: Mapping[str, float], reference: Mapping[str, float]) -> float:
    """How far one timing of the probe (``seen``, seconds by probe) stood from ``reference``:
    the median over the probes both hold of the log of their time ratio (0 if they share none).

    >>> round(host_shift({"add": 2.0, "mul": 4.0, "new": 9.0}, {"add": 1.0, "mul": 1.0}), 3)
    1.04
    """
    shared = [label for label in seen if label in reference]
    if not shared:
        return 0.0
    return statistics.median(math.log(seen[label] / reference[label]) for label in shared)


@dataclasses.dataclass(frozen=True)
class Calibration:
    """The spreads of times and of ratios on one machine, and where they were measured."""

    time: Spread
    ratio: Spread
    #: The machine it was measured on, as :func:`~perfguide.measure.cpu.machine_name` names it.
    cpu_model: str
    #: When, and from what: a reader's "measured how?".
    source: str
    #: How the fit went: rows used, and the share of reruns its intervals covered.
    fit: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: Bytes a call: how far a memory growth rate moves between runs beyond its processes'
    #: spread (a standard deviation; 0 where no memory runs were fitted).
    growth_drift: float = 0.0
    #: Each workload's own drift between runs, for "time" and for "ratio" (a standard deviation
    #: of the log, as ``drift_sd``); a workload the fit did not see drifts as the machine does.
    workload_drift: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    #: Each measurement's own drift, as ``workload_drift``, by :func:`row_key` for "time" and
    #: :func:`ratio_key` for "ratio".
    measurement_drift: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    #: The probe's time in the fitted runs, seconds by probe (the median over their probes;
    #: empty: the fit saw no probe, and no run's intervals widen with its host).
    host_probe: dict[str, float] = dataclasses.field(default_factory=dict)
    #: How far the fitted runs' probes stood from ``host_probe`` (standard deviation of the
    #: log): the host's moves that the drifts above already hold.
    host_sd: float = 0.0
    #: The probe's times in this run, seconds by probe (empty: not timed).
    host_seen: dict[str, float] = dataclasses.field(default_factory=dict)

    @property
    def host_shift(self) -> float:
        """How far this run's host stood from the fitted runs' (the median over the probes both
        timed of the log of their time ratio; 0 where either did not time it).

        >>> fitted = Calibration(Spread(0.04, 5, 0.02), Spread(0.03, 8, 0.01), "CPU X", "runs",
        ...                      host_probe={"add": 1.0, "matmul": 2.0}, host_seen={"add": 2.0})
        >>> round(fitted.host_factor, 3)
        2.0
        """
        return host_shift(self.host_seen, self.host_probe)

    @property
    def host_factor(self) -> float:
        """This run's probe time over the fitted runs' (1: as fast, or not timed)."""
        return math.exp(self.host_shift)

    @property
    def host_excess(self) -> float:
        """The drift a time gains on this run's host (a standard deviation of the log): its
        distance from the fitted runs' host beyond how far theirs moved, 0 within that.

        >>> fitted = Calibration(Spread(0.04, 5, 0.02), Spread(0.03, 8, 0.01), "CPU X", "runs",
        ...                      host_probe={"add": 1.0}, host_sd=0.3, host_seen={"add": 1.65})
        >>> round(fitted.host_excess, 2)
        0.4
        """
        return math.sqrt(max(0.0, self.host_shift**2 - self.host_sd**2))

    def time_for(self, workload: str, key: str | None = None, on_host: bool = True) -> Spread:
        """The spread a time of ``workload`` is judged with: the machine's, with the
        measurement's own drift (``key``, its :func:`row_key`) where the fit saw it, else the
        workload's; widened for this run's host unless ``on_host`` is False (two times of one
        run in a ratio: its host moved both alike).

        >>> fitted = Calibration(Spread(0.04, 5, 0.02), Spread(0.03, 8, 0.01), "CPU X", "runs",
        ...                      workload_drift={"time": {"matmul": 0.05}},
        ...                      measurement_drift={"time": {"matmul|xla|8|cpu": 0.03}})
        >>> fitted.time_for("matmul").drift_sd, fitted.time_for("other").drift_sd
        (0.05, 0.02)
        >>> fitted.time_for("matmul", "matmul|xla|8|cpu").drift_sd
        0.03

        On a host that stood further from the fitted runs' than they moved, the drift widens by
        :attr:`host_excess`:

        >>> slow = dataclasses.replace(fitted, host_probe={"add": 1.0}, host_seen={"add": 1.5})
        >>> round(slow.time_for("other").drift_sd, 3)
        0.406
        """
        spread = self._own(self.time, "time", workload, key)
        if not on_host:
            return spread
        return dataclasses.replace(spread, drift_sd=math.hypot(spread.drift_sd, self.host_excess))

    def ratio_for(self, workload: str, key: str | None = None) -> Spread:
        """The spread a ratio of two of ``workload``'s variants timed in the same processes is
        judged with (``key``: its :func:`ratio_key`), as :meth:`time_for`, never widened for
        the host: it moves both variants alike."""
        return self._own(self.ratio, "ratio", workload, key)

    def per_process_for(self, statement: str) -> Spread:
        """The spread a ratio each process works out for itself is judged with (the claim's
        ``statement`` names it): the machine's ratio spread, with that ratio's own drift where
        the fit saw it; never another claim's, however its group drifted.

        >>> fitted = Calibration(Spread(0.04, 5, 0.02), Spread(0.03, 8, 0.01), "CPU X", "runs",
        ...                      measurement_drift={"ratio": {"per-process|x misleads": 0.4}})
        >>> fitted.per_process_for("x misleads").drift_sd, fitted.per_process_for("y").drift_sd
        (0.4, 0.01)
        """
        return self._own(self.ratio, "ratio", None, per_process_key(statement))

    def _own(self, spread: Spread, kind: str, workload: str | None, key: str | None) -> Spread:
        """``spread`` with the drift of the measurement ``key`` names where the fit saw it, else
        that of ``workload`` (None: no workload's)."""
        drift = self.measurement_drift.get(kind, {}).get(key)
        if drift is None and workload is not None:
            drift = self.workload_drift.get(kind, {}).get(workload)
        return spread if drift is None else dataclasses.replace(spread, drift_sd=drift)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def describe(self) -> str:
        """The spreads in a sentence, with where they were measured.

        >>> spreads = Spread(0.04, 5, 0.02), Spread(0.03, 8, 0.01)
        >>> print(Calibration(*spreads, "CPU X", "two runs").describe())
        times: a process 4.0 % from the others (weighed as 5 processes), runs drifting 2.0 %; \
ratios of variants timed together: 3.0 % (weighed as 8 processes), drifting 1.0 % (standard \
deviations of the log); measured on CPU X by two runs
        """
        time, ratio = self.time, self.ratio
        return (
            f"times: a process {time.process_sd:.1%} from the others (weighed as "
            f"{time.prior_df:.2g} processes), runs drifting {time.drift_sd:.1%}; ratios of "
            f"variants timed together: {ratio.process_sd:.1%} (weighed as {ratio.prior_df:.2g} "
            f"processes), drifting {ratio.drift_sd:.1%} (standard deviations of the log)"
            + self._workload_range()
            + f"; memory growth rates drifting {self.growth_drift:.0f} B a call"
            * bool(self.growth_drift)
            + f"; measured on {self.cpu_model} by {self.source}"
            + self._host()
        ).replace("%", " %")

    def _host(self) -> str:
        if not self.host_probe:
            return ""
        said = f"; the fitted runs' host moving {self.host_sd:.1%}"
        if self.host_seen.keys() & self.host_probe.keys():
            said += (
                f"; this run's host {self.host_factor:.2f}x the fitted runs' time, "
                f"times drifting {self.host_excess:.1%} more"
            )
        return said

    def _workload_range(self) -> str:
        return "".join(
            f"; each of {len(drifts)} {what} drifting on its own, "
            f"{min(drifts.values()):.1%} to {max(drifts.values()):.1%}"
            for what, drifts in (
                ("workloads' times", self.workload_drift.get("time", {})),
                ("measured times", self.measurement_drift.get("time", {})),
            )
            if drifts
        )

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> Calibration:
        return cls(
            Spread(**record["time"]),
            Spread(**record["ratio"]),
            record["cpu_model"],
            record["source"],
            record["fit"],
            record.get("growth_drift", 0.0),
            record.get("workload_drift", {}),
            record.get("measurement_drift", {}),
            record.get("host_probe", {}),
            record.get("host_sd", 0.0),
            record.get("host_seen", {}),
        )


@functools.cache
def load(path: Path) -> Calibration:
    """The calibration in ``path``; ValueError with a one-line reason if it is not one."""
    try:
        return Calibration.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
    except OSError as error:
        raise ValueError(f"cannot read calibration {path}: {error.strerror}") from None
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is not a calibration file ({error})") from None


@functools.cache
def shipped(machine: str) -> Path:
    """The shipped calibration fitted on ``machine`` (as
    :func:`~perfguide.measure.cpu.machine_name` names one), else :data:`FALLBACK`."""
    fitted = (path for path in sorted(SHIPPED.glob("*.json")) if load(path).cpu_model == machine)
    return next(fitted, FALLBACK)


@functools.cache
def _on_host(path: Path, probed: str) -> Calibration:
    fitted = load(path)
    return dataclasses.replace(fitted, host_seen=json.loads(probed)) if probed else fitted


def current() -> Calibration:
    """``$PERFGUIDE_CALIBRATION``'s calibration, or the one the package ships for this machine,
    on the host ``$PERFGUIDE_HOST_PROBE`` timed (if it is set)."""
    named = os.environ.get(CALIBRATION_ENV)
    path = Path(named) if named else shipped(this_machine())
    return _on_host(path, os.environ.get(HOST_PROBE_ENV, ""))
