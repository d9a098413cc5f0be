"""``python -m perfguide``: rerun any chapter's measurements on your own hardware.

Bad input ends with one line on stderr and exit status 2, never a traceback. ``run`` measures in
several fresh processes (``--processes``, see :mod:`perfguide.processes.pool`), started with any
``--env NAME=VALUE`` settings. TensorFlow's
own log lines are silenced unless ``--verbose`` is given; while measuring, a progress line on
stderr says what is being timed, on a terminal only.

One idea at some length: the command line, one small function a command; what the commands
do lives in the layers below.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.live import Live
from rich.text import Text

from perfguide.diagnose import api
from perfguide.diagnose.parent import projection
from perfguide.diagnose.target import InputSpec, Target, TargetError
from perfguide.measure import calibrate, calibration, environment, runner
from perfguide.measure.cpu import machine_name
from perfguide.measure.measurement import Measurement
from perfguide.measure.timer import no_progress
from perfguide.processes import fresh
from perfguide.processes.noise import NoiseFloor
from perfguide.processes.pool import PROCESSES, Workers
from perfguide.report.format import format_count
from perfguide.report.publishing import results
from perfguide.report.publishing.chapters import CHAPTERS, chapter
from perfguide.report.tables.comparison import Comparison
from perfguide.report.tables.table import text_table
from perfguide.report.verdicts.compare_files import SideBySide, Source

if TYPE_CHECKING:  # for annotations only: the workloads are imported when needed
    from perfguide.workloads.base import Workload

EXIT_USAGE = 2
#: A fresh process that failed for another reason than bad input.
EXIT_FAILURE = 1
#: TensorFlow's C++ logging threshold when not ``--verbose``: errors only (2 hides its INFO and
#: WARNING lines). Read when TensorFlow loads; the lines it logs while loading ignore it (see
#: :func:`_silence_native_stderr`).
QUIET_TF_LOG_LEVEL = "2"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are a single line (argparse prints the usage too)."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


class UsageError(Exception):
    """Bad input from the user: reported in one line, exit status 2."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


def _setting(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` for a fresh process, its name one the process is passed."""
    name, equals, value = text.partition("=")
    if not (name and equals):
        raise argparse.ArgumentTypeError(f"not NAME=VALUE: {text!r}")
    try:
        fresh.check_settings({name: value})
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return name, value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="perfguide", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--verbose", action="store_true", help="let TensorFlow print its own log lines"
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    commands.add_parser("list", help="list workloads and their variants")
    run = commands.add_parser("run", help="measure a workload's variants and print a table")
    run.add_argument(
        "workload", nargs="?", help="workload name, or a chapter's topic for all its workloads"
    )
    run.add_argument("--all", action="store_true", help="run every workload, at its own size")
    run.add_argument("--variant", action="append", help="variant to run (repeatable; default all)")
    run.add_argument("--size", type=_positive_int, help="problem size (default: the chapter's)")
    run.add_argument("--quick", action="store_true", help="shorter timed blocks: a fast look")
    run.add_argument("--device", choices=runner.DEVICES, default="cpu", help="default: cpu")
    run.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    run.add_argument(
        "--processes",
        type=_positive_int,
        metavar="N",
        help=f"fresh processes that each time every variant (default {PROCESSES}; memory: its "
        "chapter's, or 2 with --quick)",
    )
    run.add_argument(
        "--env",
        metavar="NAME=VALUE",
        type=_setting,
        action="append",
        help="start the fresh processes with this variable set (repeatable); "
        f"names start with {', '.join(fresh.PASSED_PREFIXES)}",
    )
    show = commands.add_parser("show", help="print the table of a saved results file")
    show.add_argument("path", help="a JSON file written by `run --json`")
    compare = commands.add_parser(
        "compare", help="set results files side by side, each judged against the first"
    )
    compare.add_argument(
        "paths", nargs="+", metavar="PATH", help="results files (or directories of them)"
    )
    compare.add_argument(
        "--any-device",
        action="store_true",
        help="match rows whatever device they ran on (a CPU run against a GPU run)",
    )
    compare.add_argument(
        "--reruns",
        action="store_true",
        help="the files are runs of the same code on one machine: count false alarms and "
        "medians inside the first file's intervals",
    )
    calibrate_command = commands.add_parser(
        "calibrate",
        help="fit the spreads every interval is built from to runs of the same code",
    )
    calibrate_command.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="two or more runs: `run --all --json` files, or a docs build's measurements folder; "
        "`run memory --json` files add memory runs, a docs build's build-state.json its host's "
        "probe",
    )
    calibrate_command.add_argument(
        "--json", metavar="PATH", required=True, help="where to write the calibration"
    )
    diagnose = commands.add_parser(
        "diagnose",
        help="measure your own function or Keras model: what bounds it, and which changes pay",
    )
    diagnose.add_argument(
        "target",
        help="path/to/file.py:function, package.module:function, or a saved model: "
        "model.keras, model.h5, a SavedModel directory or model.tflite",
    )
    diagnose.add_argument(
        "--input",
        action="append",
        metavar="SPEC",
        help="one positional argument, in order: a tensor as dtype[shape] (float32[32,128], "
        "int32[32], float32[] for a scalar, string[64] for text), a ragged batch by its rows' "
        "lengths (float32[32,1..20]), or a Python number (3, 0.5); a model's input may be "
        "named (tokens=int32[32,8]); repeatable",
    )
    diagnose.add_argument(
        "--inputs",
        metavar="FACTORY",
        help="file.py:function returning the arguments instead (for a model: x, or x and y)",
    )
    diagnose.add_argument(
        "--quick",
        action="store_true",
        help="shorter timed blocks, and no more processes for undecided comparisons",
    )
    diagnose.add_argument(
        "--workers",
        type=_positive_int,
        default=projection.WORKERS,
        metavar="N",
        help="for a model that trains: project its training step on up to N workers "
        f"(default {projection.WORKERS})",
    )
    diagnose.add_argument(
        "--network-gbps",
        type=_positive_float,
        default=projection.NETWORK_GBPS,
        metavar="GBPS",
        help=f"the network between those workers, in Gb/s (default {projection.NETWORK_GBPS:g})",
    )
    diagnose.add_argument(
        "--trace",
        metavar="DIR",
        help="also write a profiler trace of the graph calls into DIR, for TensorBoard's "
        "profile plugin or XProf",
    )
    diagnose.add_argument(
        "--no-backends",
        dest="backends",
        action="store_false",
        help="for a Keras file: do not also try it on Keras 3's other backends (JAX, OpenVINO)",
    )
    diagnose.add_argument("--json", metavar="PATH", help="also write a results file to PATH")
    diagnose.add_argument("--html", metavar="PATH", help="also write a one-page report to PATH")
    diagnose.add_argument(
        "--docs-url",
        metavar="URL",
        help="where the guide is hosted, for the links to its chapters "
        "(default $PERFGUIDE_DOCS_URL; else paths within the site)",
    )
    diagnose.add_argument(
        "--processes",
        type=_positive_int,
        default=PROCESSES,
        metavar="N",
        help=f"fresh processes that each time every form (default {PROCESSES})",
    )
    env = commands.add_parser(
        "env", help="print this machine's environment record, limits and noise floor"
    )
    env.add_argument("--quick", action="store_true", help="shorter blocks for the noise probes")
    return parser


def _workloads():
    try:
        from perfguide.workloads import WORKLOADS
    except ImportError as error:
        raise UsageError(
            f"cannot import {error.name or 'a dependency'}: install with "
            "`pip install perfguide[cpu]` (or [gpu])"
        ) from None
    return WORKLOADS


def _list(args: argparse.Namespace) -> None:
    for workload in _workloads().values():
        print(f"{workload.name}: {workload.question}")
        print(f"  variants: {', '.join(workload.variants)} (baseline {workload.baseline})")
        for variant, why in workload.missing.items():
            print(f"  not installed: {variant} ({why})")
    print("chapters (`run TOPIC` runs all of one's workloads):")
    for each in CHAPTERS:
        runs = each.runs != "nothing"
        print(f"  {each.topic}: {each.title}" + ("" if runs else " (no workloads to run)"))


def _check_writable(path: str) -> None:
    """Fail before measuring, not after, if the results file cannot be written."""
    target = Path(path)
    if not path or target.is_dir():
        raise UsageError(f"cannot write {path!r}: not a file name")
    directory = target.resolve().parent
    if not directory.is_dir():
        raise UsageError(f"cannot write {path}: its directory does not exist")
    if not os.access(directory, os.W_OK):
        raise UsageError(f"cannot write {path}: its directory is not writable")


@contextlib.contextmanager
def _progress(what: str, console: Console | None = None) -> Iterator[Callable[[str], None]]:
    """A progress line on stderr while measuring ``what``: the step being timed and the time
    since it began, redrawn only between steps (a redrawing thread would share the cores with
    what is timed); nothing when stderr is not a terminal."""
    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield no_progress
        return
    start = time.perf_counter()
    with Live(Text(what), console=console, auto_refresh=False, transient=True) as live:

        def report(step: str) -> None:
            elapsed = time.perf_counter() - start
            live.update(Text(f"{what}: {step} ({elapsed:.0f} s)"), refresh=True)

        yield report


def _chosen(args: argparse.Namespace) -> list[Workload]:
    """The workloads ``run`` was asked for, checked."""
    workloads = _workloads()
    if args.all:
        if args.workload or args.variant or args.size:
            raise UsageError("--all runs every workload at its own size: name none, no --variant")
        return list(workloads.values())
    if args.workload is None:
        raise UsageError("name a workload (see `perfguide list`) or give --all")
    from perfguide.workloads import TOPICS

    topic = args.workload.replace("-", "_")  # a topic spelled as workloads are: keras-backends
    if topic in TOPICS and args.workload not in workloads:
        if args.variant or args.size:
            raise UsageError(
                f"{args.workload} names a chapter, whose workloads run at their own sizes: "
                "name one workload to choose variants or a size"
            )
        return list(TOPICS[topic])
    if args.workload not in workloads:
        raise UsageError(f"unknown workload {args.workload!r}; choose from {', '.join(workloads)}")
    workload = workloads[args.workload]
    size = workload.default_size if args.size is None else args.size
    try:
        runner.check_choices(workload, args.variant or workload.variants, size)
    except ValueError as error:
        raise UsageError(str(error)) from None
    return [workload]


def _groups(chosen: list[Workload], args: argparse.Namespace) -> dict[tuple, list[Workload]]:
    """The workloads that can share fresh processes: one chapter's topic, started with the same
    settings (what one chapter's workloads leave behind in a process is what its page saw)."""
    from perfguide.workloads import TOPICS

    topic_of = {w.name: topic for topic, workloads in TOPICS.items() for w in workloads}
    groups: dict[tuple, list[Workload]] = {}
    for workload in chosen:
        if reason := workload.requires():
            print(f"skipped {workload.name}: {reason}", file=sys.stderr)
            continue
        for variant, why in workload.missing.items():
            print(f"skipped {workload.name} {variant}: {why}", file=sys.stderr)
        settings = {**workload.process_settings, **dict(args.env or ())}
        key = (topic_of[workload.name], tuple(sorted(settings.items())))
        groups.setdefault(key, []).append(workload)
    return groups


def _own_run(name: str | None) -> Callable[[argparse.Namespace], None] | None:
    """How ``run`` measures the chapter ``name`` if the table of chapters says it runs other
    than its workloads in a pool (without importing the workloads, and so TensorFlow)."""
    try:
        runs = chapter(name.replace("-", "_")).runs if name else None
    except ValueError:  # a workload's name, or none there is: the workloads' lookup says which
        return None
    return OWN_RUNS.get(runs)


def _run(args: argparse.Namespace) -> None:
    if own := _own_run(args.workload):
        own(args)
        return
    args.processes = args.processes or PROCESSES
    chosen = _chosen(args)
    try:
        runner.check_device(args.device)  # here, not after a fresh process has started
    except runner.DeviceError as error:
        raise UsageError(str(error)) from None
    if args.json is not None:
        _check_writable(args.json)
    measured: list[Measurement] = []
    record = None
    groups = _groups(chosen, args)
    for (_, settings), workloads in groups.items():
        what = f"{', '.join(w.name for w in workloads)} in {args.processes} fresh processes"
        with _progress(what) as report, _workers(args, dict(settings), report) as workers:
            if record is None and args.json is not None:
                # Limits once, in the first processes: they take seconds to measure.
                record = workers.environment
            for workload in workloads:
                size = workload.default_size if args.size is None else args.size
                measurements = workers.run(workload.name, args.variant, size=size, quick=args.quick)
                if len(chosen) > 1:
                    print(f"{workload.name}: {workload.question}")
                has_baseline = any(m.label == workload.baseline for m in measurements)
                table = Comparison(
                    measurements, baseline=workload.baseline if has_baseline else None
                )
                print(table, end="\n\n" if len(chosen) > 1 else "\n")
                measured += measurements
    if args.json is not None:
        _save(args, _as_run(record, [dict(settings) for _, settings in groups]), measured)


#: What a results file's record says of a setting that its groups of processes started with
#: different values of.
VARIES = "varies by workload"


def _as_run(record: dict | None, settings: list[dict[str, str]]) -> dict | None:
    """``record`` (the first group of processes') with each setting the groups started with
    apart said to vary: one group's value (Keras 2's variable, say) is not the whole file's."""
    if record is None:
        return None
    varied = {key for group in settings for key in group if len({s.get(key) for s in settings}) > 1}
    shown = record.get("process_settings", {})
    return record | {
        "process_settings": {key: VARIES if key in varied else v for key, v in shown.items()}
    }


def _as_they_are(args: argparse.Namespace, what: str) -> None:
    """Refuse the options a chapter whose experiments run as they are has no use for."""
    if args.all or args.variant or args.size or args.env or args.device != "cpu":
        raise UsageError(
            f"{args.workload} runs the chapter's {what} as they are: no --variant, --size, "
            "--env or --device"
        )


def _run_memory(args: argparse.Namespace) -> None:
    """``run memory``: the memory chapter's experiments, each in its own fresh processes, with a
    table of growth rates each; ``--quick`` runs them as they are (their rates depend on how
    many calls, and which shapes, each way makes) in two processes each unless told how many."""
    _as_they_are(args, "experiments")
    if args.json is not None:
        _check_writable(args.json)
    from perfguide.measure.environment import collect
    from perfguide.processes import memory_processes
    from perfguide.report.publishing import memory_results
    from perfguide.report.tables.memory import growth_table, peak_table
    from perfguide.workloads import memory

    processes = args.processes or (2 if args.quick else memory.PROCESSES)
    with _progress(f"memory: every experiment, {processes} fresh processes each"):
        measured, peaks = memory_processes.measure(processes=processes)
    for name, experiment in measured.items():
        print(growth_table(name, experiment.growth, traces=experiment.traces))
        print()
    print(peak_table("a training step's peak memory", peaks))
    if args.json is not None:
        memory_results.save(args.json, collect(), measured, peaks)
        print(f"wrote {args.json}")


def _workers(
    args: argparse.Namespace, settings: dict[str, str], progress: Callable[[str], None]
) -> Workers:
    return Workers(
        args.processes,
        device=args.device,
        settings=settings,
        limits=args.json is not None,
        progress=progress,
        echo_stderr=args.verbose,
    )


def _save(args: argparse.Namespace, record: dict | None, measured: list[Measurement]) -> None:
    """Write ``run --json``'s file, with the environment record of the first fresh process (it
    says what that process saw, settings included)."""
    if not measured or record is None:
        raise UsageError(f"nothing was measured, so {args.json} was not written")
    try:
        results.save(args.json, record, measured)
    except OSError as error:
        raise UsageError(f"cannot write {args.json}: {error.strerror}") from None
    print(f"wrote {args.json}")


def _show(args: argparse.Namespace) -> None:
    try:
        measurements = results.load_measurements(args.path)
    except results.ResultsError as error:
        raise UsageError(str(error)) from None
    if not measurements:
        raise UsageError(f"{args.path} holds no measurements")
    # A chapter's file holds several workloads, sizes and devices: one table each.
    groups: dict[tuple, list[Measurement]] = {}
    for m in measurements:
        groups.setdefault((m.workload, m.size, m.device, m.unit), []).append(m)
    for (workload, size, device, _), group in groups.items():
        shown = "unknown" if size is None else format_count(size)
        print(f"{workload} at size {shown} on {device}:")
        print(Comparison(group), end="\n\n")


def _sources(paths: Sequence[str]) -> list[Source]:
    try:
        return [Source.load(path) for path in paths]
    except results.ResultsError as error:
        raise UsageError(str(error)) from None


def _compare(args: argparse.Namespace) -> None:
    try:
        table = SideBySide(_sources(args.paths), match_device=not args.any_device)
    except ValueError as error:
        raise UsageError(str(error)) from None
    print(table)
    if args.reruns:
        print("\n".join(table.rerun_lines()))


def _run_distributed(args: argparse.Namespace) -> None:
    """``run distributed``: every setup of the chapter in its clusters on 127.0.0.1 (``--quick``:
    one cluster each), a table each; a setup whose cluster fails is reported in one line, and
    the run ends with status 2 once the others are shown (and saved)."""
    _as_they_are(args, "setups")
    if args.json is not None:
        _check_writable(args.json)
    from perfguide.measure.environment import collect
    from perfguide.processes import distributed_setups

    with _progress("distributed: every setup, in clusters on 127.0.0.1"):
        measured, failures = distributed_setups.measure(quick=args.quick)
    every = [m for ms in measured.values() for m in ms]
    for setup, ms in measured.items():
        # A table for each thing a setup timed: a step at one global batch, the all-reduce alone…
        for (workload, size), timed in itertools.groupby(ms, lambda m: (m.workload, m.size)):
            print(f"{setup.name}, {workload} at {size}:\n{Comparison(list(timed))}\n")
    if args.json is not None and every:
        _save(args, collect(), every)
    if failures:
        raise UsageError("; ".join(f"{name}: {reason}" for name, reason in failures.items()))


#: How ``run`` measures a chapter that runs other than its workloads in a pool, by the table of
#: chapters' ``runs``: memory experiments measure memory, not time; setups run in clusters.
OWN_RUNS = {"experiments": _run_memory, "clusters": _run_distributed}


def _calibrate(args: argparse.Namespace) -> None:
    from perfguide.processes import build_state
    from perfguide.report.publishing import memory_results

    _check_writable(args.json)
    memory = [path for path in args.paths if memory_results.holds_growth(path)]
    states = [path for path in args.paths if build_state.holds_state(path)]
    runs = _sources([path for path in args.paths if path not in memory + states])
    if not runs:
        raise UsageError(
            "calibrate needs at least two runs of timings besides memory runs and build states"
        )
    growth_runs = [run.growth for run in runs if run.growth] + [
        memory_results.load(p) for p in memory
    ]
    env = runs[0].environment
    cpu = machine_name(
        env.get("cpu_model", "an unknown CPU"),
        env.get("usable_cores", "?"),
        env.get("cpu_vector_flags", ()),
    )
    names = ", ".join(Path(run.name).name for run in runs)
    source = (
        f"perfguide calibrate on {len(runs)} runs of the same workloads ({names}), "
        f"{env.get('date', 'undated')[:10]}"
    )
    if growth_runs:
        source += f"; memory growth on {len(growth_runs)} runs of the memory chapter"
    probes = [probed for path in states for probed in build_state.probes(build_state.load(path))]
    if probes:
        source += f"; the host by {len(probes)} probes of {len(states)} builds"
    try:
        measured = [run.measurements for run in runs]
        claimed = [run.per_process for run in runs]
        fitted = calibrate.fit(measured, cpu, source, growth_runs, claimed, probes)
    except ValueError as error:
        raise UsageError(str(error)) from None
    print(fitted.describe())
    results.write_atomically(Path(args.json), json.dumps(fitted.to_dict(), indent=2) + "\n")
    print(f"wrote {args.json}; use it with {calibration.CALIBRATION_ENV}={args.json}")


def _target(args: argparse.Namespace) -> Target:
    try:
        inputs = tuple(InputSpec.parse(text) for text in args.input or ())
        return Target(args.target, inputs, args.inputs)
    except TargetError as error:
        raise UsageError(str(error)) from None


def _diagnose(args: argparse.Namespace) -> None:
    target = _target(args)
    for path in filter(None, (args.json, args.html)):
        _check_writable(path)
    what = f"diagnosing {target.describe()} in {args.processes} fresh processes"
    with _progress(what) as report:
        diagnosis = api.run(
            target,
            quick=args.quick,
            processes=args.processes,
            workers=args.workers,
            network_gbps=args.network_gbps,
            docs_url=args.docs_url,
            trace=args.trace,
            backends=args.backends,
            progress=report,
            verbose=args.verbose,
        )
    print(diagnosis)
    try:
        if args.json:
            diagnosis.save_json(args.json)
            print(f"wrote {args.json}")
        if args.html:
            diagnosis.save_html(args.html)
            print(f"wrote {args.html}")
    except OSError as error:
        raise UsageError(f"cannot write {error.filename}: {error.strerror}") from None


def _env(args: argparse.Namespace) -> None:
    what = "measuring this machine's limits in a fresh process"
    with _progress(what) as report, Workers(1, limits=True, progress=report) as workers:
        record = workers.environment
    print(text_table(["", "this machine"], environment.as_rows(record)))
    with _progress("timing the noise probes in fresh processes") as report:
        floor = NoiseFloor.measure(quick=args.quick, progress=report)
    print(f"\nHow far apart fresh processes land here:\n{floor}")


COMMANDS = {
    "list": _list,
    "run": _run,
    "show": _show,
    "compare": _compare,
    "calibrate": _calibrate,
    "diagnose": _diagnose,
    "env": _env,
}


def _silence_native_stderr() -> None:
    """Send what compiled code writes to file descriptor 2 to the null device, and keep
    Python's ``sys.stderr`` (errors, progress, warnings) on the real one. TensorFlow 2.21 logs
    lines while it loads (abseil's "All log messages before absl::InitializeLog() is called…",
    oneDNN's notice) before any log level is read, so only this hides them."""
    sys.stderr.flush()
    real = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    os.close(null)
    sys.stderr = open(real, "w", buffering=1, errors="backslashreplace")  # noqa: SIM115


def main(argv: Sequence[str] | None = None, *, silence_native: bool = False) -> int:
    """Run the command line on ``argv``; ``silence_native`` (the installed command's) also
    hides what TensorFlow's compiled code prints, unless ``--verbose``."""
    args = build_parser().parse_args(argv)
    if not args.verbose:
        # Before TensorFlow loads; fresh processes inherit it (TF_* variables pass to them).
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", QUIET_TF_LOG_LEVEL)
        # TensorFlow's Python warnings (e.g. "triggered tf.function retracing", which the
        # retracing workloads cause on purpose) go through this logger, not the C++ one.
        logging.getLogger("tensorflow").setLevel(logging.ERROR)
        if silence_native:
            _silence_native_stderr()
    try:
        COMMANDS[args.command](args)
    except UsageError as error:
        print(f"perfguide: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except fresh.ChildError as error:
        # Its stderr is already on ours; a child that found bad input exits as we would.
        print(f"perfguide: error: {error}", file=sys.stderr)
        return EXIT_USAGE if error.usage else EXIT_FAILURE
    return 0


def entry() -> int:
    """The ``perfguide`` command and ``python -m perfguide``."""
    return main(silence_native=True)
