"""Short answers: the box, its published files, and the checklist built from them."""

import json

import pytest

from perfguide.report import answers
from perfguide.report.answers import Recommendation, ShortAnswer
from perfguide.report.claims import Claim
from perfguide.report.compare import Table

HELD = Claim("a is faster than b", True, "a is 2.00x faster", effect="2.00x faster")
UNSURE = Claim("c is faster than d", None, "too close to call", effect="1.05x faster")


def make_answer():
    return ShortAnswer(
        "Because of <overhead>.",
        [Recommendation("Use a", HELD), Recommendation("Prefer c", UNSURE)],
        Table("their run", ["variant", "theirs", "here"], [["a", "4 s", "1.2 s"]]),
    )


def test_box_shows_each_recommendation_with_effect_verdict_and_link():
    html = make_answer()._repr_html_()
    assert "Short answer" in html and "Because of &lt;overhead&gt;." in html
    assert "2.00x faster" in html and "perfguide-verdict-held" in html
    assert "perfguide-verdict-inconclusive" in html
    assert f'href="#{HELD.anchor}"' in html and "<caption>their run</caption>" in html


def test_an_effect_short_of_its_claim_shows_what_was_claimed():
    missed = Claim(
        "a is at least 10x faster than b", False, "…", "7.58x faster", "at least 10x faster"
    )
    answer = ShortAnswer("Why.", [Recommendation("Use a", missed), Recommendation("Use a", HELD)])
    box = answer._repr_html_()
    assert "7.58x faster here (claimed: at least 10x faster)" in box
    assert "2.00x faster here <span" in box  # a bare "faster" claim needs nothing beside it


def test_published_answers_feed_the_checklist_in_the_order_chapters_ran(tmp_path, monkeypatch):
    monkeypatch.setenv(answers.ANSWERS_DIR_ENV, str(tmp_path))
    make_answer().publish("tf_function")
    ShortAnswer("First.", [Recommendation("Use a", HELD)]).publish("linear_regression")
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
        "effect": "2.00x faster",
        "target": "",
        "verdict": "HELD",
        "claim": "a is faster than b",
        "evidence": "a is 2.00x faster",
        "anchor": HELD.anchor,
        "caveats": [],
        "recipe": "",
        "requires": [],
    }
    assert prefer_c["verdict"] == "INCONCLUSIVE"


def test_advice_needs_every_claim_it_requires_and_carries_its_caveats():
    close = Claim("its answers lie within 0.05 of Keras's", True, "0.01 apart")
    far = Claim("its answers lie within 0.05 of Keras's", False, "0.07 apart")
    kept = Recommendation("Use int8", HELD, requires=(close,), caveats=("slower at 256",))
    dropped = Recommendation("Use int8", HELD, requires=(far,))
    answer = ShortAnswer("Why.", [kept, dropped])
    assert answer.advice == [kept] and answer.findings == [dropped]
    assert dropped.finding == "its answers lie within 0.05 of Keras's"
    assert dropped.to_dict()["verdict"] == "DID NOT HOLD"
    assert "Use int8</strong>; but slower at 256" in answer._repr_html_()
    assert kept.to_dict()["requires"][0]["verdict"] == "HELD"


def test_advice_links_the_recipe_that_puts_it_in_code():
    box = ShortAnswer("Why.", [Recommendation("Use a", HELD, recipe="use-a")])._repr_html_()
    assert '<a href="#use-a">recipe</a>' in box


def test_published_files_are_valid_json_and_nothing_else_is_left(tmp_path, monkeypatch):
    monkeypatch.setenv(answers.ANSWERS_DIR_ENV, str(tmp_path))
    make_answer().publish("timing")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "timing.answer.html",
        "timing.answer.json",
    ]
    title = json.loads((tmp_path / "timing.answer.json").read_text())["title"]
    assert title == "Why do my TensorFlow timings disagree?"


def test_text_form_lists_the_recommendations():
    text = str(make_answer())
    assert text.startswith("Short answer: Because of <overhead>.")
    assert "- Use a: 2.00x faster (HELD: a is faster than b)" in text


@pytest.mark.parametrize("verdict", ["HELD", "DID NOT HOLD", "INCONCLUSIVE"])
def test_verdict_badges_have_a_class_per_verdict(verdict):
    slug = verdict.lower().replace(" ", "-")
    assert f"perfguide-verdict-{slug}" in answers.verdict_badge(verdict)


def test_only_a_claim_that_held_is_given_as_advice():
    failed = Claim("e is faster than f", False, "…", effect="3.40x slower")
    answer = ShortAnswer(
        "Why.",
        [
            Recommendation("Use a", HELD),
            Recommendation("Prefer c", UNSURE),
            Recommendation("Use e", failed, instead="e ran 3.40x slower here"),
        ],
    )
    box = answer._repr_html_()
    advice, _, findings = box.partition("Did not hold here:")
    assert "<strong>Use a</strong>" in advice and "Prefer c" not in box and "Use e" not in box
    failed_part, _, unsure_part = findings.partition("Too close to call here:")
    assert "e ran 3.40x slower here" in failed_part and "c is faster than d" in unsure_part
    # No line reads as a double negative: the heading says the verdict, the line the claim.
    assert "not advised" not in box and "did not hold here" not in findings
    assert [r.advice for r in answer.advice] == ["Use a"]
    text = str(answer)
    assert "- Use a:" in text and "Use e" not in text and "e ran 3.40x slower here" in text


def test_an_answer_with_no_held_claim_says_nothing_paid_off():
    box = ShortAnswer("Why.", [Recommendation("Prefer c", UNSURE)])._repr_html_()
    assert "No practice this page checked paid off here." in box
    assert "perfguide-advice" not in box
