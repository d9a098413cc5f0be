"""The package's layers import only downwards, and no module imports itself round a circle."""

import ast
import collections
from pathlib import Path

import perfguide
from perfguide.report.publishing.chapters import CHAPTERS

PACKAGE = Path(perfguide.__file__).parent
#: The layers, lowest first, as perfguide/__init__.py states them.
LAYERS = ("measure", "report", "workloads", "processes", "diagnose", "pages", "cli")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p) for p in PACKAGE.rglob("*.py")}


def imports(path: Path) -> set[str]:
    """Every perfguide module ``path`` imports, at its top, in a function or for types
    (``from package import module`` imports that module, not all of the package)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in MODULES else node.module)
    return found & MODULES


def layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


GRAPH = {module_name(p): imports(p) for p in PACKAGE.rglob("*.py")}


def test_the_layers_are_the_ones_the_package_states():
    assert " → ".join(f"``{name}``" for name in LAYERS) in perfguide.__doc__.replace("\n", " ")


def test_no_module_imports_from_a_layer_above_its_own():
    upwards = [
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if layer(module) is not None and layer(target) is not None and layer(target) > layer(module)
    ]
    assert upwards == []


def test_no_module_imports_itself_round_a_circle():
    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for target in GRAPH.get(start, ()):
            if target == goal or (target not in seen and reaches(target, goal, seen | {target})):
                return True
        return False

    # A package's __init__ imports its own modules by design; they are not a circle.
    circles = [
        module
        for module in GRAPH
        if not module.endswith(tuple(LAYERS) + ("perfguide",)) and reaches(module, module, set())
    ]
    assert circles == []


def test_diagnoses_worker_and_parent_sides_import_nothing_of_each_other():
    # They run in different processes: the parent names the worker's functions as strings.
    sides = {"perfguide.diagnose.worker", "perfguide.diagnose.parent"}

    def side(module: str) -> str | None:
        return next((s for s in sides if module == s or module.startswith(s + ".")), None)

    crossing = [
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if side(module) and side(target) and side(module) != side(target)
    ]
    assert crossing == []
    assert {side(m) for m in GRAPH} >= sides  # both sides exist, so the check checks something


def test_no_module_is_named_after_a_layer_but_the_diagnose_chapters_own():
    # The diagnose chapter's topic is the diagnose layer's name (docs/development.md says why).
    chapter_modules = {"perfguide.workloads.diagnose", "perfguide.pages.diagnose"}
    named_like_a_layer = {m for m in MODULES if m.count(".") > 1 and m.rsplit(".", 1)[1] in LAYERS}
    assert named_like_a_layer == chapter_modules


def test_only_a_chapters_topic_names_more_than_one_module_file():
    # A topic has one name in every layer; any other name says what one module holds.
    names = collections.Counter(p.stem for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE)
    del names["__init__"]
    shared = {name for name, count in names.items() if count > 1}
    assert shared <= {c.topic for c in CHAPTERS}, shared - {c.topic for c in CHAPTERS}


def test_a_module_over_450_lines_says_why_in_its_docstring():
    reasons = ("One idea at some length", "Long as its chapter is")
    unexplained = [
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if len(p.read_text().splitlines()) > 450
        and not any(r in (ast.get_docstring(ast.parse(p.read_text())) or "") for r in reasons)
    ]
    assert unexplained == []
