"""``python -m perfguide``: rerun any chapter's measurements on your own hardware.

Bad input ends with one line on stderr and exit status 2, never a traceback. ``run --env
NAME=VALUE`` measures in a fresh process (see :mod:`perfguide.measure.isolated`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from perfguide.measure import isolated, runner
from perfguide.measure.timer import Measurement
from perfguide.report import results
from perfguide.report.compare import Comparison
from perfguide.report.format import format_count

if TYPE_CHECKING:  # for annotations only: the workloads are imported when needed
    from perfguide.workloads.base import Workload

EXIT_USAGE = 2
#: A fresh process that failed for another reason than bad input.
EXIT_FAILURE = 1


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


def _setting(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` for a fresh process, its name one the process is passed."""
    name, equals, value = text.partition("=")
    if not (name and equals):
        raise argparse.ArgumentTypeError(f"not NAME=VALUE: {text!r}")
    try:
        isolated.check_settings({name: value})
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return name, value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="perfguide", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    commands.add_parser("list", help="list workloads and their variants")
    run = commands.add_parser("run", help="measure a workload's variants and print a table")
    run.add_argument("workload", help="workload name (see `list`)")
    run.add_argument("--variant", action="append", help="variant to run (repeatable; default all)")
    run.add_argument("--size", type=_positive_int, help="problem size (default: the chapter's)")
    run.add_argument("--quick", action="store_true", help="shorter timed blocks: a fast look")
    run.add_argument("--device", choices=runner.DEVICES, default="cpu", help="default: cpu")
    run.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    run.add_argument(
        "--env",
        metavar="NAME=VALUE",
        type=_setting,
        action="append",
        help="measure in a fresh process with this variable set (repeatable); "
        f"names start with {', '.join(isolated.PASSED_PREFIXES)}",
    )
    show = commands.add_parser("show", help="print the table of a saved results file")
    show.add_argument("path", help="a JSON file written by `run --json`")
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


def _list() -> None:
    for workload in _workloads().values():
        print(f"{workload.name}: {workload.question}")
        print(f"  variants: {', '.join(workload.variants)} (baseline {workload.baseline})")


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


def _run(args: argparse.Namespace) -> None:
    from perfguide.measure import environment

    workloads = _workloads()
    if args.workload not in workloads:
        raise UsageError(f"unknown workload {args.workload!r}; choose from {', '.join(workloads)}")
    workload = workloads[args.workload]
    size = workload.default_size if args.size is None else args.size
    try:
        runner.check_choices(workload, args.variant or workload.variants, size)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if args.json is not None:
        _check_writable(args.json)
    if args.env or workload.process_settings:
        # The fresh process measures and collects its own environment record.
        measurements, record = isolated.run_in_fresh_process(
            workload.name,
            args.variant,
            size=size,
            quick=args.quick,
            device=args.device,
            settings={**workload.process_settings, **dict(args.env or ())},
        )
    else:
        measurements = _run_here(workload, args, size)
        record = None
    baseline = (
        workload.baseline if any(m.label == workload.baseline for m in measurements) else None
    )
    print(Comparison(measurements, baseline=baseline))
    if args.json is not None:
        if record is None:
            record = environment.collect()
        try:
            results.save(args.json, record, measurements)
        except OSError as error:
            raise UsageError(f"cannot write {args.json}: {error.strerror}") from None
        print(f"wrote {args.json}")


def _run_here(workload: Workload, args: argparse.Namespace, size: int) -> list[Measurement]:
    """Measure in this process, its thread pools sized by ``PERFGUIDE_*_THREADS`` if set."""
    try:
        isolated.apply_thread_settings()
    except ValueError as error:
        raise UsageError(str(error)) from None
    try:
        return runner.run(workload, args.variant, size=size, quick=args.quick, device=args.device)
    except runner.DeviceError as error:
        raise UsageError(str(error)) from None
    except MemoryError:
        raise UsageError(f"{workload.size_name} {size} needs more memory than is free") from None


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


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "list":
            _list()
        elif args.command == "run":
            _run(args)
        else:
            _show(args)
    except UsageError as error:
        print(f"perfguide: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except isolated.ChildError as error:
        # Its stderr is already on ours; a child that found bad input exits as we would.
        print(f"perfguide: error: {error}", file=sys.stderr)
        return EXIT_USAGE if error.returncode == EXIT_USAGE else EXIT_FAILURE
    return 0
