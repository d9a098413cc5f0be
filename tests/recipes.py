"""A chapter's recipe, run as a reader pastes it: its code, from its heading to the next cell."""

import linecache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_recipe(topic: str, heading: str) -> dict[str, Any]:
    """The names the recipe under ``heading`` in ``topic``'s chapter defines, once its code
    (its own checks included) has run."""
    lines = (ROOT / "examples" / topic / f"plot_{topic}.py").read_text().splitlines()
    start = lines.index(f"# {heading}")
    cell = []
    for line in lines[start + 1 :]:
        if line.startswith("# %%"):
            break
        cell.append(line)
    source, name = "\n".join(cell) + "\n", f"<{topic} recipe: {heading}>"
    # tf.function's autograph reads a function's source back, as it would from a file.
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    namespace: dict[str, Any] = {}
    exec(compile(source, name, "exec"), namespace)
    return namespace
