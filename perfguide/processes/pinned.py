"""``python -m perfguide.processes.pinned CORE PROGRAM [ARG ...]``: ``PROGRAM`` run on the CPU core
``CORE`` only.

The pin is set here, in a process of its own that ``PROGRAM`` then replaces (same process id,
same session), rather than in a ``preexec_fn`` hook of the parent: the parent runs threads
(TensorFlow's, JAX's), and running Python code in the forked child of a threaded process can
deadlock (JAX warns of it at every such fork).
"""

from __future__ import annotations

import os
import sys


def command(core: int, program: list[str]) -> list[str]:
    """The command that runs ``program`` pinned to ``core``."""
    return [sys.executable, "-m", __name__, str(core), *program]


def main(argv: list[str]) -> None:
    core, *program = argv[1:]
    os.sched_setaffinity(0, {int(core)})
    os.execvp(program[0], program)


if __name__ == "__main__":
    main(sys.argv)
