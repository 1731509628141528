"""The third set of hard conversations (``hard3-en`` / ``hard3-zh``, bench/hard3conv.py, written from a brief
alone): the committed files are the generator's output for their seed, the generator is deterministic, and
every question's evidence shares no content unit with the question — the generator refuses a draw that does."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from by_path import module_at

BENCH = Path(__file__).resolve().parents[1] / "bench"
LANGS = ("en", "zh")


@pytest.fixture(scope="module")
def gen():
    return module_at(BENCH / "hard3conv.py", "hard3conv")


def committed(lang: str) -> dict:
    return json.loads((BENCH / "data" / f"hard3-{lang}.json").read_text("utf-8"))


def evidence_overlaps(gen, conversations: list[dict], lang: str) -> list[tuple[str, set[str]]]:
    """Every (question id, shared units) where a question shares a content unit with one of its evidence turns."""
    texts = {t["turn_id"]: t["text"] for c in conversations for s in c["sessions"] for t in s["turns"]}
    return [(q["qid"], shared) for c in conversations for q in c["questions"]
            if (shared := gen.shared_units(q["question"], [texts[e] for e in q["evidence"]], lang))]


def test_content_units_compare_stems_and_skip_function_words(gen):
    assert gen.content_units("Whoever repaired the bikes?", "en") == {"whoever", "repair", "bik"}
    assert gen.content_units("I repair a bike", "en") <= gen.content_units("Whoever repaired the bikes", "en")
    assert gen.content_units("谁修好了车？", "zh") == {"修", "好", "车"}


@pytest.mark.parametrize("lang", LANGS)
def test_committed_file_is_the_generators_deterministic_output(gen, lang):
    doc = committed(lang)
    assert doc["name"] == f"hard3-{lang}"
    first = gen.generate(lang, doc["seed"])
    assert first == gen.generate(lang, doc["seed"])
    assert doc["conversations"] == json.loads(json.dumps(first, ensure_ascii=False))
    assert gen.generate(lang, doc["seed"] + 1) != first


@pytest.mark.parametrize("lang", LANGS)
def test_every_question_shares_no_content_unit_with_its_evidence(gen, lang):
    assert evidence_overlaps(gen, committed(lang)["conversations"], lang) == []


@pytest.mark.parametrize("lang", LANGS)
def test_shape_categories_and_where_the_hops_sit(gen, lang):
    convs = committed(lang)["conversations"]
    assert len(convs) == 10 and sum(c["tuning"] for c in convs) == 5
    for conv in convs:
        assert 8 <= len(conv["sessions"]) <= 12
        assert all(12 <= len(s["turns"]) <= 20 for s in conv["sessions"])
        assert len({t["speaker"] for s in conv["sessions"] for t in s["turns"]}) == 2
        assert Counter(q["category"] for q in conv["questions"]) == Counter(gen.PER_CONVERSATION)
        order = [s["session_id"] for s in conv["sessions"]]
        for q in conv["questions"]:
            sessions = [order.index(e.rsplit("-t", 1)[0]) for e in q["evidence"]]
            hops = {"after": 2, "change": 2, "chain3": 3, "described": 2, "single": 1}.get(q["category"])
            if hops:
                assert len(set(sessions)) == hops, q  # each hop in a session of its own
            if q["category"] in ("after", "change"):
                assert sessions == sorted(sessions), q  # the deed (the before) comes first


def test_a_template_that_repeats_the_question_is_refused_not_kept(gen):
    data = gen.runpy.run_path(str(BENCH / "hard3_lines.py"))["LINES"]["en"]
    echo = {"q": ["What instrument does {X} play?"], "ev": "I play an instrument", "contrast": "{O} sings"}
    cast = gen.Cast(("Ada", "Ben"), ["Cy"], ["Dee"], ["Oslo"])
    with pytest.raises(ValueError, match="single"):
        gen.checked_plot(gen.random.Random(0), {**data, "singles": [echo]}, cast, 8, "single", {}, "en")
