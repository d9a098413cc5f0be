"""A page's measurements, recorded as a build takes them and replayed to render the page again.

Nearly all of a chapter's minutes go to fresh processes measuring; everything its page shows is
computed from what those processes answered. So a docs build records each answer, in the order
the page asked for it, in a file of the page's own, and a later build (after a prose edit, say)
can replay them: every line of the page's logic runs again, in seconds, and nothing is measured
(such a site says so on every page). The answers are taken where the measuring is:
:class:`~perfguide.processes.pool.Workers`' calls, clusters, processes forked from a server, and
the one measurement the timing page takes in its own process.

:data:`RECORDING_ENV` names the file of the page being built (the docs configuration sets it for
each chapter and notebook) and :data:`REPLAY_ENV` ``=1`` replays it instead of measuring. With
neither, as when a reader runs a chapter, everything is measured and nothing is recorded.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from perfguide.processes.fresh import ChildError
from perfguide.report.publishing.results import write_atomically

#: Names the file of recorded measurements of the page being built.
RECORDING_ENV = "PERFGUIDE_RECORDING"
#: Set to 1, the page's measurements are read from that file instead of taken.
REPLAY_ENV = "PERFGUIDE_REPLAY"
#: What a complete recording of a build holds beside its pages' files: when, what, how.
COMPLETE = "complete.json"
#: The package's folders whose code runs where the measuring is: a change there makes a
#: recording stale even where a page asks for the same measurements.
MEASURING = ("measure", "processes", "workloads", "diagnose")
PACKAGE = Path(__file__).resolve().parents[1]

T = TypeVar("T")


class RecordingError(RuntimeError):
    """A page asked a replay for a measurement its recording does not hold (the page changed
    what it measures since the recording: measure it again)."""


@dataclasses.dataclass(frozen=True)
class Answer:
    """One recorded measurement: what was asked (``key``), what it returned or raised (a
    failed process is an answer a page shows), and the seconds it took (where a page's minutes
    go)."""

    key: str
    value: Any = None
    error: ChildError | None = None
    seconds: float = 0.0

    def given(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


class Recording:
    """The recorded answers of one page, in ``path``: taken and written as they come, or, with
    ``replay``, read from it and handed back in the same order."""

    def __init__(self, path: Path, replay: bool):
        self.path, self.replay = Path(path), replay
        self.answers: list[Answer] = self._read() if replay else []
        self.position = 0
        self._measuring = False

    def _read(self) -> list[Answer]:
        try:
            return pickle.loads(self.path.read_bytes())
        except FileNotFoundError:
            raise RecordingError(f"nothing was recorded for this page ({self.path})") from None

    def take(self, key: str, measure: Callable[[], T]) -> T:
        """What ``measure()`` returns (or raises: a :class:`ChildError`), recorded under
        ``key``, or, replaying, the answer recorded there. A measurement taken inside another
        is part of that one's answer, not an answer of its own."""
        if self._measuring:
            return measure()
        key = without_temporary_folders(key)
        if self.replay:
            return self._replayed(key).given()
        self._measuring, started = True, time.monotonic()
        try:
            answer = Answer(key, measure())
        except ChildError as error:
            answer = Answer(key, error=error)
        finally:
            self._measuring = False
        answer = dataclasses.replace(answer, seconds=time.monotonic() - started)
        self.answers.append(answer)
        write_atomically(self.path, pickle.dumps(self.answers))
        return answer.given()

    def _replayed(self, key: str) -> Answer:
        if self.position >= len(self.answers):
            raise RecordingError(
                f"{self.path.name}: the page asks for more than its {len(self.answers)} recorded "
                f"measurements (next: {key}); measure it again"
            )
        answer = self.answers[self.position]
        if answer.key != key:
            raise RecordingError(
                f"{self.path.name}: measurement {self.position + 1} is not what was recorded "
                f"({first_difference(answer.key, key)}); measure it again"
            )
        self.position += 1
        return answer

    def unused(self) -> int:
        """Recorded answers a replay has not handed back (none when recording)."""
        return len(self.answers) - self.position if self.replay else 0


def first_difference(recorded: str, asked: str, around: int = 60) -> str:
    """Where the ``asked`` key first departs from the ``recorded`` one, with up to ``around``
    characters of each side (keys run to thousands of characters).

    >>> print(first_difference("run Job(size=140, quick=True)", "run Job(size=1400)", around=6))
    after 'ze=140': recorded ', quic…', now '0)'
    """
    same = len(os.path.commonprefix([recorded, asked]))
    before = recorded[max(same - around, 0) : same]

    def shown(key: str) -> str:
        rest = key[same:]
        return repr(rest[:around] + "…" * (len(rest) > around))

    return f"after {before!r}: recorded {shown(recorded)}, now {shown(asked)}"


def without_temporary_folders(key: str) -> str:
    """``key`` with each temporary folder it names (made anew by every run) as one placeholder.

    >>> without_temporary_folders(f"load {tempfile.gettempdir()}/model-x1y2/saved, batch 32")
    'load <temporary folder>/saved, batch 32'
    """
    return re.sub(re.escape(tempfile.gettempdir()) + r"/[^/\s\"',]+", "<temporary folder>", key)


_open: dict[Path, Recording] = {}


def replaying() -> bool:
    """Whether :data:`REPLAY_ENV` asks for a replay; ValueError for a value other than 0 or 1."""
    value = os.environ.get(REPLAY_ENV, "")
    if value not in ("", "0", "1"):
        raise ValueError(f"{REPLAY_ENV}={value!r}: set it to 1 to replay a recording, or 0")
    return value == "1"


def current() -> Recording | None:
    """The recording of the page being built (:data:`RECORDING_ENV`), if any."""
    name = os.environ.get(RECORDING_ENV)
    if not name:
        return None
    path = Path(name)
    if path not in _open:
        _open[path] = Recording(path, replaying())
    return _open[path]


def recorded(key: str, measure: Callable[[], T]) -> T:
    """``measure()``, recorded under ``key`` for the page being built, or replayed from its
    recording; outside a build, just ``measure()``."""
    recording = current()
    return measure() if recording is None else recording.take(key, measure)


def finish(path: Path) -> None:
    """Close the recording in ``path``; RecordingError if a replay left answers unused (the
    page measures less than it did when recorded)."""
    recording = _open.pop(Path(path), None)
    if recording is not None and recording.unused():
        raise RecordingError(
            f"{recording.path.name}: the page used {recording.position} of its "
            f"{len(recording.answers)} recorded measurements; measure it again"
        )


def fingerprint(package: Path = PACKAGE) -> str:
    """A digest of the code in the package's :data:`MEASURING` folders."""
    digest = hashlib.sha256()
    for path in sorted(p for folder in MEASURING for p in (package / folder).rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def why_not_replayable(about: dict[str, Any], kind: str) -> str | None:
    """Why a build of ``kind`` ("quick" or "full") cannot replay the recording ``about`` (what
    :func:`mark_complete` was told) describes, or None if it can."""
    if about.get("measuring_code") != fingerprint():
        return f"the code that measures ({', '.join(MEASURING)}) changed since it was recorded"
    if about["kind"] != kind:
        return f"it is a {about['kind']} build's, and this build is a {kind} one"
    return None


def mark_complete(directory: Path, about: dict[str, Any]) -> None:
    """Mark the recordings in ``directory`` as a whole build's, described by ``about``."""
    write_atomically(Path(directory) / COMPLETE, json.dumps(about, indent=1))


def complete(directory: Path) -> dict[str, Any] | None:
    """What :func:`mark_complete` said of the recordings in ``directory``, or None if no build
    recorded all its pages there."""
    marker = Path(directory) / COMPLETE
    return json.loads(marker.read_text()) if marker.is_file() else None
