"""A comparison that no number of processes decides, for tests of the processes a pool adds
while a claim is undecided."""

from collections.abc import Sequence

from perfguide.measure.measurement import Measurement


class NeverSettled:
    """Undecided on any measurements: its ``labels`` are timed in every process allowed."""

    def __init__(self, *labels: str):
        self.labels = labels

    def settled(self, measurements: Sequence[Measurement], at_most: int) -> bool:
        return False
