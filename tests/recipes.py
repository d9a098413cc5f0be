"""A chapter's recipe, run as a reader pastes it: the imports that open the chapter's Recipes
section, then the recipe's code, from its heading to the next cell."""

import ast
import linecache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RECIPES = "# Recipes"


def run_recipe(topic: str, heading: str) -> dict[str, Any]:
    """The names the recipe under ``heading`` in ``topic``'s chapter defines, once its code
    (its own checks included) has run after the imports of the recipes before it."""
    lines = (ROOT / "examples" / topic / f"plot_{topic}.py").read_text().splitlines()
    start = lines.index(f"# {heading}")
    cell = []
    for line in lines[start + 1 :]:
        if line.startswith("# %%"):
            break
        cell.append(line)
    before = ast.parse("\n".join(lines[lines.index(RECIPES) : start]))
    imports = [node for node in before.body if isinstance(node, ast.Import | ast.ImportFrom)]
    source = "\n".join([*(ast.unparse(node) for node in imports), *cell]) + "\n"
    name = f"<{topic} recipe: {heading}>"
    # tf.function's autograph reads a function's source back, as it would from a file.
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    namespace: dict[str, Any] = {}
    exec(compile(source, name, "exec"), namespace)
    return namespace
