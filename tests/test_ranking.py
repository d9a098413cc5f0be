import ast
from pathlib import Path

from perfguide.measure.measurement import Measurement
from perfguide.report.publishing.page_checks import disagreements, unseparated_winners
from perfguide.report.verdicts.claims import falls, share_of_time
from perfguide.report.verdicts.ranking import AHEAD, rank

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
    short = "fast was fastest on the model, 7.75x to 12.9x ahead of the runner-up, slow"
    assert ranking.sentence(" on the model", evidence=False) == short
    sentence = ranking.sentence(" on the model")
    assert sentence == (
        f"{short} (fast is 10.0x faster than slow: 1.00 µs vs 10.0 µs per call over 3 processes)"
    )
    assert AHEAD in short
    assert unseparated_winners(sentence + ".") == unseparated_winners(short + ".") == []
    assert disagreements(sentence) == []  # the site check holds its speed-up to its medians


def test_ways_within_noise_of_the_fastest_are_tied_and_none_is_named():
    ms = [
        timed("litert", (1.17e-6, 1.3e-6, 1.1e-6)),
        timed("int8", (1.21e-6, 1.15e-6, 1.3e-6)),
        timed("onnx", (12e-6, 13e-6, 12.5e-6)),
    ]
    ranking = rank(ms)
    assert not ranking.separated
    assert set(ranking.tied) == {"litert", "int8"}
    # onnx is clearly slower: not part of the tie.
    assert ranking.sentence(evidence=False) == "litert and int8 are tied here"
    assert ranking.sentence() == (
        "litert and int8 are tied here (litert was 1.03x faster than int8, "
        "rerun interval: 1.20x slower to 1.28x faster)"
    )
    assert (
        ranking.sentence(" on the model", evidence=False) == "litert and int8 are tied on the model"
    )


def test_each_way_tied_with_the_fastest_gets_its_own_interval():
    ms = [
        timed("a", (1.0e-3, 1.1e-3, 1.05e-3)),
        timed("b", (1.05e-3, 1.0e-3, 1.1e-3)),
        timed("c", (1.1e-3, 1.02e-3, 1.06e-3)),
        timed("d", (5e-3,) * 3),
    ]
    ranking = rank(ms)
    assert ranking.sentence(evidence=False) == "a, b and c are tied here"
    assert ranking.sentence() == (
        "a, b and c are tied here (a was as fast as b, rerun interval: 1.14x slower to 1.14x "
        "faster; a was 1.01x faster than c, rerun interval: 1.13x slower to 1.15x faster)"
    )


def test_a_winner_timed_by_more_processes_says_its_median_is_theirs_in_common():
    fast = Measurement(
        "fast",
        "call",
        1,
        1,
        0.0,
        (1e-3, 1.1e-3, 0.9e-3, 1.2e-3),
        blocks_per_process=(1, 1, 1, 1),
        process_ids=(*PROCESSES, "p4"),
    )
    ranking = rank([fast, timed("slow", (5e-3, 5.1e-3, 4.9e-3))])
    assert ranking.sentence() == (
        "fast was fastest, 4.42x to 5.66x ahead of the runner-up, slow (fast is 5.00x faster "
        "than slow: 1.00 ms vs 5.00 ms per call in the 3 processes that timed both)"
    )


def test_a_single_way_is_not_called_fastest():
    ranking = rank([timed("only", (1e-6,) * 3)])
    assert ranking.sentence(" on the model") == "only was the only way measured on the model"
    assert ranking.sentence(" on the model", evidence=False) == ranking.sentence(" on the model")


def test_a_ranking_of_some_labels_leaves_the_others_out():
    ms = [timed("a", (1e-6,) * 3), timed("b", (5e-6,) * 3), timed("c", (0.1e-6,) * 3)]
    assert rank(ms, ["a", "b"]).order == ("a", "b")


def test_the_site_check_flags_every_winner_named_without_a_separation():
    page = (
        "The fastest path on the small model was tf1-session. "
        "The change worth most: compile it with jit_compile=True, 26.2x here. "
        "mlp was answered fastest by litert-1-thread (1.17 µs a request). "
        "a, b and c are tied here (a was 1.05x faster than b). "
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
    allowed = {
        ROOT / "perfguide" / "report" / "verdicts" / name
        for name in ("claims.py", "memory_claims.py")
    }
    found = [hit for path in sources if path not in allowed for hit in _hand_built_claims(path)]
    assert found == []


def test_a_way_tied_only_by_its_spread_is_said_to_be():
    steady = timed("steady", (2.0e-6, 2.1e-6, 1.9e-6))
    # Slower than steady by its median, yet not told apart from the fastest: its spread is wide.
    noisy = timed("noisy", (1.0e-6, 3.0e-6, 30e-6))
    ranking = rank([timed("fast", (1e-6, 1.05e-6, 0.95e-6)), steady, noisy])
    assert ranking.tied == ("fast", "noisy") and ranking.spread_wide == ("noisy",)
    assert ranking.sentence(evidence=False) == (
        "fast and noisy are tied here; noisy is among them only because its times spread widely"
    )
    assert rank([steady, noisy]).spread_wide == ()
