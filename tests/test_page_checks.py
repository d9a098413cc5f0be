"""The site check's checks of the guide as a whole: advice that other advice contradicts,
recipes that do not say whether this build advises them, figures and names a short answer
quotes that its page does not back, and ratios quoted beside a check that printed another,
each on answers or pages made to fail it."""

from perfguide.measure.measurement import Measurement
from perfguide.report.format import format_speedup
from perfguide.report.publishing import answers
from perfguide.report.publishing.answers import Change, Recommendation, ShortAnswer, measured_here
from perfguide.report.publishing.page_checks import (
    contradictions,
    recipe_problems,
    subjectless_effects,
    unbacked_figures,
    undefined_names,
    unmatched_ratios,
)
from perfguide.report.verdicts.claims import Claim, Faster

HELD = Claim("xla is faster than graph", True, "…", "2.00x faster")
FAILED = Claim("graph is faster than xla", False, "…", "2.00x slower")


def publish(directory, monkeypatch, pages):
    """Each chapter's recommendations published as the docs build publishes them."""
    monkeypatch.setenv(answers.ANSWERS_DIR_ENV, str(directory))
    for topic, recommendations in pages.items():
        ShortAnswer("Why.", recommendations).publish(topic)
    return answers.load_checklist(directory)


def test_two_pages_advising_one_setting_two_ways_without_telling_them_apart_fail(
    tmp_path, monkeypatch
):
    published = publish(
        tmp_path,
        monkeypatch,
        {
            "linear_regression": [
                Recommendation("Compile with XLA", HELD, Change("jit_compile", "True"))
            ],
            "mixed_precision": [
                Recommendation(
                    "Leave XLA off", HELD, Change("jit_compile", "False", policy="mixed_bfloat16")
                )
            ],
        },
    )
    (problem,) = contradictions(published)
    assert "linear_regression: 'Compile with XLA' turns jit_compile to True" in problem
    assert "mixed_precision: 'Leave XLA off' to False" in problem


def test_conditions_that_tell_advice_apart_pass(tmp_path, monkeypatch):
    published = publish(
        tmp_path,
        monkeypatch,
        {
            "linear_regression": [
                Recommendation("Compile", HELD, Change("jit_compile", "True", work="a loop"))
            ],
            "mixed_precision": [
                Recommendation("Leave off", HELD, Change("jit_compile", "False", work="a step"))
            ],
        },
    )
    assert contradictions(published) == []


def test_what_was_not_advised_contradicts_nothing(tmp_path, monkeypatch):
    published = publish(
        tmp_path,
        monkeypatch,
        {
            "linear_regression": [Recommendation("Compile", HELD, Change("jit_compile", "True"))],
            "vectorization": [Recommendation("Leave off", FAILED, Change("jit_compile", "False"))],
        },
    )
    assert contradictions(published) == []


def test_a_recipe_on_a_claim_that_did_not_hold_must_say_so(tmp_path, monkeypatch):
    (chapter,) = publish(
        tmp_path,
        monkeypatch,
        {
            "memory": [
                Recommendation("Pad batches", FAILED, Change("batches", "padded"), recipe="pad"),
                Recommendation("Use XLA", HELD, Change("jit_compile", "True"), recipe="xla"),
            ]
        },
    )
    # A page whose recipes do not open with their status, or say the opposite, fails.
    assert recipe_problems(chapter, {}) == [
        "recipe #pad does not open with whether this build advises it",
        "recipe #xla does not open with whether this build advises it",
    ]
    assert recipe_problems(chapter, {"pad": True, "xla": True}) == [
        "recipe #pad reads as advised, but no claim it rests on held"
    ]
    # The status lines the chapter published say it right.
    shown = {
        anchor: 'data-advised="true"' in (tmp_path / f"memory.recipe.{anchor}.html").read_text()
        for anchor in ("pad", "xla")
    }
    assert recipe_problems(chapter, shown) == []


def test_a_short_answer_quoting_a_figure_its_page_does_not_print_fails():
    page = (
        "first-call overhead 346 ms; the first call against a steady one: 112x a steady call "
        "(rerun interval: 98.0x to 128x); 21.4 µs, 94 %"
    )
    # Another measurement of the same thing (349 ms), a ratio recomputed from rounded medians.
    answer = "the first call took 349 ms, 112x a steady call; with prefetch 0.898x, 94 %"
    assert unbacked_figures(answer, page) == ["349 ms", "0.898x"]
    assert unbacked_figures("its overhead was 346 ms (98.0x to 128x)", page) == []


def test_a_line_naming_a_variant_its_chapter_never_defines_fails():
    names = ["naive", "together", "together-prefetch", "FILE", "DATA"]
    line = "together-prefetch is faster than together: together-prefetch was 1.02x faster"
    assert undefined_names(line, names, defined=["together"]) == ["together-prefetch"]
    assert undefined_names(line, names, defined=["together", "together-prefetch"]) == []
    # A name is a whole word: "DATA" is not in "metadata", nor "naive" in "naively".
    assert undefined_names("metadata read naively", names, defined=[]) == []


def test_a_ratio_quoted_beside_its_check_but_worked_out_again_fails():
    spread = (0.9, 1.0, 1.1, 1.0, 1.05)
    timed = [
        Measurement("graph", "call", 1, 1, 0.0, tuple(s * 41.34e-3 for s in spread)),
        Measurement("eager", "call", 1, 1, 0.0, tuple(s * 110.4e-3 for s in spread)),
    ]
    checked = Faster("graph", "eager").check(timed)
    page = f"{checked.evidence}. In short, {measured_here(checked)}."
    assert unmatched_ratios(page) == []
    # The ratio worked out again from the medians as printed (41.3 ms and 110 ms), not quoted.
    recomputed = f"graph was {format_speedup(110e-3 / 41.3e-3)} than eager here"
    (problem,) = unmatched_ratios(f"{page} {recomputed}")
    assert problem.startswith("graph was 2.66x faster than eager here: the page checks graph")


def test_a_check_quoted_in_parentheses_counts_for_its_pair():
    # Two diagnoses on one page compare the same pair; the first's ranking quotes its check in
    # parentheses, and its later sentence quotes that check's ratio.
    page = (
        "eager was fastest, 3.36x to 6.92x ahead of the runner-up, jit-compile (eager is 4.82x "
        "faster than jit-compile: 34.7 µs vs 167 µs per call over 2 processes). "
        "jit-compile was 4.82x slower than eager here. "
        "(INCONCLUSIVE: jit-compile is 1.34x slower than eager: 9.90 ms vs 7.37 ms per call)"
    )
    assert unmatched_ratios(page) == []
    (problem,) = unmatched_ratios(f"{page} eager was 4.90x faster than jit-compile here")
    assert problem.endswith("the page checks eager against jit-compile at 1.34x, 4.82x")


def test_a_speed_up_quoted_without_its_subject_fails():
    checked = Faster("graph", "eager").check(
        [
            Measurement("graph", "call", 1, 1, 0.0, (1e-3, 1.1e-3, 0.9e-3)),
            Measurement("eager", "call", 1, 1, 0.0, (3e-3, 3.3e-3, 2.7e-3)),
        ]
    )
    assert subjectless_effects(f"In short, {checked.stated}.") == []
    page = f"A call in the graph against eager execution, {checked.quoted}."
    assert subjectless_effects(page) == ["against eager execution, 3.00x faster"]
