import ast
from pathlib import Path

from perfguide.measure.timer import Measurement
from perfguide.report.claims import falls, share_of_time
from perfguide.report.page_checks import unseparated_winners
from perfguide.report.ranking import AHEAD, rank

ROOT = Path(__file__).resolve().parent.parent
PROCESSES = ("p1", "p2", "p3")


def timed(label, per_process):
    """A variant timed by the same three processes as the others, one block each."""
    return Measurement(
        label,
        "call",
        1,
        1,
        0.0,
        tuple(per_process),
        blocks_per_process=(1, 1, 1),
        process_ids=PROCESSES,
    )


def test_a_fastest_way_is_named_only_where_every_other_is_clearly_slower():
    ranking = rank([timed("slow", (9e-6, 10e-6, 11e-6)), timed("fast", (1e-6, 1.1e-6, 0.9e-6))])
    assert ranking.leader == "fast" and ranking.separated
    sentence = ranking.sentence(" on the model")
    assert sentence.startswith("fast was fastest on the model") and AHEAD in sentence
    assert unseparated_winners(sentence + ".") == []


def test_ways_within_noise_of_the_fastest_are_tied_and_none_is_named():
    ms = [
        timed("litert", (1.17e-6, 1.3e-6, 1.1e-6)),
        timed("int8", (1.21e-6, 1.15e-6, 1.3e-6)),
        timed("onnx", (12e-6, 13e-6, 12.5e-6)),
    ]
    ranking = rank(ms)
    assert not ranking.separated
    assert set(ranking.tied) == {"litert", "int8"}
    sentence = ranking.sentence()
    assert "are tied here" in sentence and "fastest" not in sentence
    assert "onnx" not in sentence  # clearly slower: not part of the tie


def test_a_ranking_of_some_labels_leaves_the_others_out():
    ms = [timed("a", (1e-6,) * 3), timed("b", (5e-6,) * 3), timed("c", (0.1e-6,) * 3)]
    assert rank(ms, ["a", "b"]).order == ("a", "b")


def test_the_site_check_flags_every_winner_named_without_a_separation():
    page = (
        "The fastest path on the small model was tf1-session. "
        "The change worth most: compile it with jit_compile=True, 26.2x here. "
        "mlp was answered fastest by litert-1-thread (1.17 µs a request). "
        "a, b and c are tied here (a against b: 1.05x faster). "
        "xla was fastest, 2.10x to 2.90x ahead of the runner-up, eager (…)."
    )
    assert len(unseparated_winners(page)) == 3


def test_a_value_falls_only_where_its_intervals_lie_apart():
    assert falls("x falls", (3.0, 2.5, 3.5), (1.5, 1.2, 1.8), "x").held is True
    assert falls("x falls", (1.5, 1.2, 1.8), (3.0, 2.5, 3.5), "x").held is False
    assert falls("x falls", (3.0, 2.5, 3.5), (2.4, 2.0, 2.8), "x").held is None


def test_a_share_of_op_time_is_judged_on_the_next_call_not_on_its_median():
    steady = share_of_time("products dominate", [0.99, 0.985, 0.99, 0.995, 0.99], at_least=0.9)
    assert steady.held is True
    # A median above the bound, with calls that spread across it: too close to tell.
    spread = share_of_time("products dominate", [0.95, 0.85, 0.97, 0.88, 0.93], at_least=0.9)
    assert spread.held is None
    assert share_of_time("casts are cheap", [0.2, 0.22, 0.21], at_most=0.1).held is False


def _hand_built_claims(path):
    tree = ast.parse(path.read_text(), str(path))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Claim"
    ]


def test_no_chapter_or_module_judges_a_claim_by_hand():
    # A Claim built by hand is judged on whatever its author compared: a bare comparison of
    # estimates, where the guide judges measured quantities on their intervals. Counts and
    # exact values go through claims.exact, which says so.
    sources = [*ROOT.glob("examples/*/*.py"), *ROOT.glob("perfguide/**/*.py")]
    allowed = {ROOT / "perfguide" / "report" / name for name in ("claims.py", "memory_claims.py")}
    found = [hit for path in sources if path not in allowed for hit in _hand_built_claims(path)]
    assert found == []
