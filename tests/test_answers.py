"""Short answers: the box, its published files, and the checklist built from them."""

import pytest

from perfguide.report.publishing import answers
from perfguide.report.publishing.answers import Change, Recommendation, ShortAnswer
from perfguide.report.tables.table import Table
from perfguide.report.verdicts.claims import Claim

HELD = Claim(
    "a is faster than b",
    True,
    "a is 2.00x faster",
    effect="2.00x faster",
    interval="1.80x to 2.20x faster",
    measured="a was 2.00x faster than b",
)
UNSURE = Claim("c is faster than d", None, "too close to call", effect="1.05x faster")
USE_A = Change("the way", "a", work="small ops")


def make_answer():
    return ShortAnswer(
        "Because of <overhead>.",
        [Recommendation("Use a", HELD, USE_A), Recommendation("Prefer c", UNSURE, USE_A)],
        Table("their run", ["variant", "theirs", "here"], [["a", "4 s", "1.2 s"]]),
    )


def test_box_shows_each_recommendation_with_what_was_measured_verdict_and_link():
    html = make_answer()._repr_html_()
    assert "Short answer" in html and "Because of &lt;overhead&gt;." in html
    assert "a was 2.00x faster than b here" in html and "perfguide-verdict-held" in html
    assert "perfguide-verdict-inconclusive" in html
    assert f'href="#{HELD.anchor}"' in html and "<caption>their run</caption>" in html


def test_the_terms_a_box_uses_link_to_their_definitions():
    html = make_answer()._repr_html_()
    assert '<a href="../../reading.html#rerun-interval">rerun interval</a>' in html
    assert 'href="../../reading.html#claims-and-verdicts"' in html


def test_an_effect_short_of_its_claim_shows_what_was_claimed():
    missed = Claim(
        "a is at least 10x faster than b",
        False,
        "…",
        "7.58x faster",
        "at least 10x faster",
        measured="a was 7.58x faster than b",
    )
    answer = ShortAnswer(
        "Why.", [Recommendation("Use a", missed, USE_A), Recommendation("Use a", HELD, USE_A)]
    )
    box = answer._repr_html_()
    assert "a was 7.58x faster than b here (claimed: at least 10x faster)" in box
    assert "claimed" not in box.partition("Did not hold")[0]  # a bare direction needs nothing


def test_what_was_measured_reads_subject_first_in_the_direction_of_the_advice():
    # takes_at_most("naive", "prefetch", 1.25): the advice is not to count on prefetch.
    claim = Claim("naive takes at most 1.25x the time of prefetch", True, "…", "1.07x faster")
    claim = Claim(**{**claim.__dict__, "measured": "naive was 1.07x faster than prefetch"})
    line = str(ShortAnswer("Why.", [Recommendation("Skip prefetch", claim, USE_A)]))
    assert "- Skip prefetch: naive was 1.07x faster than prefetch here (HELD)" in line


def test_published_answers_feed_the_checklist_in_the_order_chapters_ran(tmp_path, monkeypatch):
    monkeypatch.setenv(answers.ANSWERS_DIR_ENV, str(tmp_path))
    make_answer().publish("tf_function")
    ShortAnswer("First.", [Recommendation("Use a", HELD, USE_A)]).publish("linear_regression")
    assert (tmp_path / "tf_function.answer.html").read_text().startswith("<div")
    checklist = answers.load_checklist(tmp_path)
    assert [c["topic"] for c in checklist] == ["tf_function", "linear_regression"]
    # Each under its title in the table of chapters.
    assert checklist[0]["title"] == "Why is my tf.function fast, slow, or wrong?"
    (use_a, prefer_c) = checklist[0]["recommendations"]
    assert use_a == {
        "advice": "Use a",
        "advised": True,
        "finding": "",
        "change": {"setting": "the way", "to": "a", "when": {"work": "small ops"}},
        "measured": "a was 2.00x faster than b here (rerun interval: 1.80x to 2.20x faster)",
        "verdict": "HELD",
        "claim": "a is faster than b",
        "evidence": "a is 2.00x faster",
        "anchor": HELD.anchor,
        "caveats": [],
        "recipe": "",
        "requires": [],
        "chapter": "",
        "gain": 0.0,
        "why_not": "",
    }
    assert prefer_c["verdict"] == "INCONCLUSIVE"
    assert Change.from_dict(use_a["change"]) == USE_A


def test_advice_needs_every_claim_it_requires_and_carries_its_caveats_on_their_own_lines():
    close = Claim("its answers lie within 0.05 of Keras's", True, "0.01 apart")
    far = Claim("its answers lie within 0.05 of Keras's", False, "0.07 apart")
    kept = Recommendation("Use int8", HELD, USE_A, requires=(close,), caveats=("slower at 256",))
    dropped = Recommendation("Use int8", HELD, USE_A, requires=(far,))
    answer = ShortAnswer("Why.", [kept, dropped])
    assert answer.advice == [kept] and answer.findings == [dropped]
    assert dropped.finding == "its answers lie within 0.05 of Keras's"
    assert dropped.to_dict()["verdict"] == "DID NOT HOLD"
    box = answer._repr_html_()
    assert "; but" not in box
    assert '<br><span class="perfguide-caveat">Measured against it: slower at 256' in box
    assert "\n  Measured against it: slower at 256" in str(answer)
    assert kept.to_dict()["requires"][0]["verdict"] == "HELD"


def test_a_held_claim_beaten_by_other_advice_is_no_advice_and_its_record_says_why():
    beaten = Recommendation(
        "Use a", HELD, USE_A, chapter="tf_function", gain=2.0, why_not="b was clearly faster"
    )
    record = beaten.to_dict()
    assert not beaten.advised and record["advised"] is False
    assert (record["chapter"], record["gain"], record["why_not"]) == (
        "tf_function",
        2.0,
        "b was clearly faster",
    )


def test_advice_links_the_recipe_that_puts_it_in_code_and_a_finding_does_not():
    advised = Recommendation("Use a", HELD, USE_A, recipe="use-a")
    unsure = Recommendation("Prefer c", UNSURE, USE_A, recipe="prefer-c")
    box = ShortAnswer("Why.", [advised, unsure])._repr_html_()
    assert '<a href="#use-a">recipe</a>' in box and "#prefer-c" not in box


def test_each_recipe_opens_with_whether_this_build_advises_it(tmp_path, monkeypatch):
    monkeypatch.setenv(answers.ANSWERS_DIR_ENV, str(tmp_path))
    answer = ShortAnswer(
        "Why.",
        [
            Recommendation("Use a", HELD, USE_A, recipe="use-a"),
            Recommendation("Prefer c", UNSURE, USE_A, recipe="prefer-c"),
        ],
    )
    answer.publish("timing")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "timing.answer.html",
        "timing.answer.json",
        "timing.recipe.prefer-c.html",
        "timing.recipe.use-a.html",
    ]
    advised = (tmp_path / "timing.recipe.use-a.html").read_text()
    assert 'data-advised="true"' in advised and "<strong>Advised here</strong>" in advised
    assert "a was 2.00x faster than b here" in advised
    unsure = (tmp_path / "timing.recipe.prefer-c.html").read_text()
    assert 'data-advised="false"' in unsure and "Not advised here" in unsure
    assert "c is faster than d: 1.05x faster here" in unsure and "INCONCLUSIVE" in unsure


def test_a_recipe_of_advice_held_and_not_says_which_is_which():
    status = answers.recipe_status(
        [Recommendation("Use a", HELD, USE_A), Recommendation("Prefer c", UNSURE, USE_A)]
    )
    advised, unsure = status.split("<br>")
    assert 'data-advised="true"' in advised and "<strong>Advised here</strong>" in advised
    assert "a was 2.00x faster than b here" in advised and "c is faster" not in advised
    assert "Not advised here</strong>, its claim was too close to call in this build" in unsure
    assert "c is faster than d: 1.05x faster here" in unsure and "INCONCLUSIVE" in unsure


def test_text_form_lists_the_recommendations():
    text = str(make_answer())
    assert text.startswith("Short answer: Because of <overhead>.")
    assert "- Use a: a was 2.00x faster than b here (rerun interval: 1.80x to 2.20x faster)" in text


@pytest.mark.parametrize("verdict", ["HELD", "DID NOT HOLD", "INCONCLUSIVE"])
def test_verdict_badges_have_a_class_per_verdict(verdict):
    slug = verdict.lower().replace(" ", "-")
    assert f"perfguide-verdict-{slug}" in answers.verdict_badge(verdict)
    assert "href" not in answers.verdict_badge(verdict, None)


def test_only_a_claim_that_held_is_given_as_advice():
    failed = Claim("e is faster than f", False, "…", effect="3.40x slower")
    answer = ShortAnswer(
        "Why.",
        [
            Recommendation("Use a", HELD, USE_A),
            Recommendation("Prefer c", UNSURE, USE_A),
            Recommendation("Use e", failed, USE_A, instead="e was not faster than f"),
        ],
    )
    box = answer._repr_html_()
    advice, _, findings = box.partition("Did not hold here:")
    assert "<strong>Use a</strong>" in advice and "Prefer c" not in box and "Use e" not in box
    # What is no advice is one click away, the advice in view.
    assert "<details><summary>Checked here, no advice (2)</summary>" in box
    failed_part, _, unsure_part = findings.partition("Too close to call here:")
    assert "e was not faster than f: 3.40x slower here" in failed_part
    assert "c is faster than d" in unsure_part
    # No line reads as a double negative: the heading says the verdict, the line the claim.
    assert "not advised" not in box and "did not hold here" not in findings
    assert [r.advice for r in answer.advice] == ["Use a"]
    text = str(answer)
    assert "- Use a:" in text and "Use e" not in text and "e was not faster than f" in text


def test_advice_beaten_by_another_way_advised_is_no_advice_and_says_why():
    beaten = Recommendation("Use b", HELD, Change("the way", "b"), why_not="2x slower than a")
    assert not beaten.advised and beaten.deciding is HELD
    text = str(ShortAnswer("Why.", [Recommendation("Use a", HELD, USE_A), beaten]))
    assert "Held, and another way advised was clearly faster here:" in text
    status = answers.recipe_status([beaten])
    assert "another way advised was measured clearly faster in this build" in status


def test_an_answer_with_no_held_claim_says_nothing_paid_off():
    box = ShortAnswer("Why.", [Recommendation("Prefer c", UNSURE, USE_A)])._repr_html_()
    assert "No practice this page checked paid off here." in box
    assert "perfguide-advice" not in box


def test_advice_on_one_setting_two_ways_needs_a_condition_that_tells_them_apart():
    on = Change("jit_compile", "True", work="a loop of small ops")
    assert on.contradicts(Change("jit_compile", "False"))  # no condition at all
    assert on.contradicts(Change("jit_compile", "False", policy="mixed_bfloat16"))
    assert not on.contradicts(Change("jit_compile", "False", work="a convolutional step"))
    assert not on.contradicts(Change("jit_compile", "True"))  # the same way
    assert not on.contradicts(Change("steps_per_execution", "raised"))
    assert on.condition == "work: a loop of small ops"
