"""This machine's noise floor: how far fresh processes of identical code land apart.

An A/A check, as the field calls it: a few probes (a NumPy call, an eager op, a ``tf.function``
call, a large matrix product: the kinds of cost the chapters time) are timed in two sets of
fresh processes, taking turns, and the two sets are compared as ``perfguide compare`` compares
two results files. Nothing differs between the sets but the processes, so a row called faster or
slower is a false alarm. The same data give how much blocks vary within a process and how much
processes add on top (Kalibera and Jones's two levels), and from those, how many processes a
median needs here to be known within 5 %.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import statistics
from collections.abc import Callable, Sequence

from perfguide.measure import stats
from perfguide.measure.environment import quick_everywhere
from perfguide.measure.measurement import Measurement
from perfguide.measure.timer import no_progress
from perfguide.processes.pool import Workers
from perfguide.report.format import format_count, format_seconds, format_speedup
from perfguide.report.tables.table import html_table, text_table
from perfguide.report.verdicts.compare_files import verdicts

#: (workload, variants, size): one probe per kind of cost the chapters time.
PROBES = (
    ("eager-add", ("numpy", "eager"), 1000),
    ("eager-call", ("tf-function",), None),
    ("matmul", ("numpy", "tf-function"), 1024),
)
#: Processes in each of the two sets.
PER_SET = 3
#: How close to its true value a median should be: the precision the processes needed are for.
PRECISION = 0.05


def time_probes(workers: Workers, quick: bool = False) -> list[Measurement]:
    """The :data:`PROBES`, each timed in every one of ``workers``."""
    return [
        m
        for workload, variants, size in PROBES
        for m in workers.run(workload, variants, size=size, quick=quick)
    ]


@dataclasses.dataclass(frozen=True)
class Probe:
    """One probe's measurement over both sets of processes, and what it says about them."""

    measurement: Measurement
    #: The A/A verdict: the first set of processes against the second.
    verdict: str

    @property
    def sets(self) -> tuple[Measurement, Measurement]:
        """The measurement as the first set of processes timed it, and as the second did."""
        count = self.measurement.processes
        return (
            self.measurement.of_processes(range(0, count, 2)),
            self.measurement.of_processes(range(1, count, 2)),
        )

    @property
    def spread(self) -> float:
        """The slowest process's median over the fastest's, less one (0.2: 20 % apart)."""
        medians = self.measurement.process_median_s
        return max(medians) / min(medians) - 1

    @functools.cached_property
    def variances(self) -> tuple[float, float]:
        """Variances of log time within a process and between processes (see
        :func:`perfguide.measure.stats.variance_components`)."""
        return stats.variance_components(self.measurement.by_process)

    @property
    def levels(self) -> tuple[float, float]:
        """Standard deviations (relative) of a block within a process, and of a process's mean
        beyond what its blocks explain."""
        within, between = self.variances
        return within**0.5, between**0.5

    @property
    def processes_needed(self) -> int:
        """Processes of this many blocks each whose median is known within :data:`PRECISION`."""
        blocks = round(statistics.median(self.measurement.blocks_per_process))
        return stats.processes_needed(*self.variances, blocks, PRECISION)


class NoiseFloor:
    """The probes' A/A comparison and the spread between processes, as a table."""

    HEADER = (
        "workload", "variant", "size", "time", "apart", "block sd", "process sd",
        f"for ±{PRECISION:.0%}", "B vs A", "A/A verdict",
    )  # fmt: skip

    def __init__(self, probes: Sequence[Probe]):
        self.probes = list(probes)

    @classmethod
    def measure(
        cls,
        per_set: int = PER_SET,
        *,
        quick: bool = False,
        progress: Callable[[str], None] = no_progress,
    ) -> NoiseFloor:
        """Time the :data:`PROBES` in two sets of ``per_set`` fresh processes each (``quick``,
        or under :data:`~perfguide.measure.environment.QUICK_ENV`: in short blocks; as many
        processes, since their spread is what is measured)."""
        with Workers(2 * per_set, progress=progress, quick=False) as workers:
            measured = time_probes(workers, quick or quick_everywhere())
        probes = [Probe(m, "") for m in measured]
        judged = verdicts([probe.sets for probe in probes])
        return cls([dataclasses.replace(p, verdict=v) for p, v in zip(probes, judged, strict=True)])

    @property
    def false_alarms(self) -> int:
        """Probes whose two sets of processes were called apart."""
        return sum(probe.verdict in ("faster", "slower") for probe in self.probes)

    @property
    def typical_process_sd(self) -> float:
        """The median over the probes of how much a process adds (relative sd)."""
        return statistics.median(probe.levels[1] for probe in self.probes)

    def rows(self) -> list[list[str]]:
        rows = []
        for probe in self.probes:
            m = probe.measurement
            a, b = probe.sets
            within, between = probe.levels
            rows.append(
                [
                    m.workload,
                    m.label,
                    "" if m.size is None else format_count(m.size),
                    format_seconds(m.median_s),
                    f"{probe.spread:.0%}",
                    f"{within:.1%}",
                    f"{between:.1%}",
                    str(probe.processes_needed),
                    format_speedup(a.median_s / b.median_s),
                    probe.verdict,
                ]
            )
        return rows

    def summary(self) -> str:
        processes = self.probes[0].measurement.processes if self.probes else 0
        return (
            f"{processes} fresh processes per probe, in two sets: processes of identical code "
            f"differed by a typical {self.typical_process_sd:.1%} (sd) beyond their blocks; "
            f"{self.false_alarms} of {len(self.probes)} probes called apart between the sets"
        )

    def __str__(self) -> str:
        return f"{text_table(self.HEADER, self.rows())}\n{self.summary()}"

    def _repr_html_(self) -> str:
        # The summary under the table, not as its caption: a wide table scrolls on a phone, and
        # its caption would scroll out of sight with it.
        table = html_table(self.HEADER, self.rows(), text_columns=(0, 1, 9))
        return f"{table}<p>{html.escape(self.summary())}.</p>"
