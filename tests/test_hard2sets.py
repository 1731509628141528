"""The second set of hard conversations (``hard2-en`` / ``hard2-zh``, bench/hard2conv.py, written from the
brief apart from bench/hardconv.py): the committed files are the generator's output, every conversation
is a tuning one, and the files keep the rules they claim — evidence that exists and spans sessions,
multi-hop and inference questions sharing no content word with their evidence, decoys that do share
them, and many turn patterns rather than one a fact."""

from __future__ import annotations

import copy
import importlib
import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest
from by_path import module_at

from hindbrain.sim.third import _terms, bm25

BENCH = Path(__file__).resolve().parents[1] / "bench"
LANGS = ("en", "zh")
HOPS = {"multi-hop": 2, "multi-hop-3": 3}
NO_SHARED_WORD = ("multi-hop", "multi-hop-3", "inference")


@pytest.fixture(scope="module")
def gen():
    return module_at(BENCH / "hard2conv.py", "hard2conv")


def committed(lang: str) -> dict:
    return json.loads((BENCH / "data" / f"hard2-{lang}.json").read_text("utf-8"))


def session_of(turn_id: str) -> str:
    return turn_id.rsplit("-t", 1)[0]


@pytest.mark.parametrize("lang", LANGS)
def test_committed_file_is_the_generators_output(gen, lang):
    doc = committed(lang)
    assert doc["name"] == f"hard2-{lang}"
    assert doc["conversations"] == json.loads(json.dumps(gen.generate(lang, doc["seed"]), ensure_ascii=False))


def test_content_units_compare_stems_and_skip_function_words(gen):
    assert gen.content_units("Whoever repaired the bikes", "en") == {"repair", "bik"}
    assert gen.content_units("I repair a bike", "en") == gen.content_units("Whoever repaired the bikes", "en")
    assert gen.content_units("living", "en") == gen.content_units("lives", "en")
    assert gen.content_units("我把车借给他了。", "zh") == {"车", "借"}


@pytest.mark.parametrize("lang", LANGS)
def test_sets_have_the_briefs_shape(lang):
    convs = committed(lang)["conversations"]
    assert len(convs) == 10 and all(c["tuning"] is True for c in convs)  # tuning only: no held-out half
    categories = Counter(q["category"] for c in convs for q in c["questions"])
    assert set(categories) == {"multi-hop", "multi-hop-3", "inference", "temporal-change"}
    assert categories["multi-hop-3"] < categories["multi-hop"]
    for conv in convs:
        assert len(conv["speakers"]) == 2 and 12 <= len(conv["questions"]) <= 16
        assert 8 <= len(conv["sessions"]) <= 12
        dates = [s["date"] for s in conv["sessions"]]
        assert dates == sorted(set(dates))
        turns = [t for s in conv["sessions"] for t in s["turns"]]
        assert len({t["turn_id"] for t in turns}) == len(turns)
        assert {t["speaker"] for t in turns} == set(conv["speakers"])
        assert all(12 <= len(s["turns"]) <= 20 for s in conv["sessions"])


@pytest.mark.parametrize("lang", LANGS)
def test_evidence_exists_spans_sessions_and_shares_no_content_word(gen, lang):
    for conv in committed(lang)["conversations"]:
        texts = {t["turn_id"]: t["text"] for s in conv["sessions"] for t in s["turns"]}
        for q in conv["questions"]:
            evidence, category = q["evidence"], q["category"]
            assert set(evidence) <= set(texts), q["qid"]
            sessions = [session_of(e) for e in evidence]
            assert len(set(sessions)) == len(evidence) == HOPS.get(category, 2), q["qid"]
            if category in HOPS:  # the last hop names the answer
                assert q["answer"] in texts[evidence[-1]], q["qid"]
            if category == "temporal-change":  # before, then after: the old state answers
                assert sessions == sorted(sessions) and q["answer"].lower() in texts[evidence[0]].lower(), q["qid"]
            if category in NO_SHARED_WORD:
                asked = gen.content_units(q["question"], lang)
                assert asked and not asked & set().union(*(gen.content_units(texts[e], lang) for e in evidence)), \
                    q["qid"]


def words(gen, text: str, lang: str) -> set[str]:
    """English content units; in Chinese two adjacent content characters (one shared character is
    chance: without decoys a fifth of the zh questions share a pair, all share a character)."""
    if lang == "en":
        return gen.content_units(text, lang)
    kept = [c if gen.content_units(c, lang) else " " for c in text]
    return {a + b for a, b in zip(kept, kept[1:], strict=False) if a != " " and b != " "}


@pytest.mark.parametrize("lang", LANGS)
def test_decoys_share_the_questions_words(gen, lang):
    questions = decoyed = 0
    for conv in committed(lang)["conversations"]:
        texts = {t["turn_id"]: t["text"] for s in conv["sessions"] for t in s["turns"]}
        for q in conv["questions"]:
            asked = words(gen, q["question"], lang)
            questions += 1
            decoyed += any(asked & words(gen, t, lang) for i, t in texts.items() if i not in q["evidence"])
    assert decoyed >= 0.85 * questions


def _templates(table: dict) -> set[str]:
    """Every planted turn's template: statements, facts, links, habits, changes and decoys."""
    out = set()
    for section in ("roles", "attrs", "relations", "traits", "changes"):
        for item in table[section].values():
            for key in ("says", "before", "after", "decoys"):
                out |= {t[1] if isinstance(t, tuple) else t for t in item.get(key, [])}
    return out


@pytest.mark.parametrize("lang", LANGS)
def test_planted_turns_use_many_patterns(gen, lang):
    texts = {t["text"] for c in committed(lang)["conversations"] for s in c["sessions"] for t in s["turns"]}
    used = 0
    for template in _templates(gen.TABLES[lang]):
        pattern = re.compile(re.sub(r"\\\{\w+\\\}", ".+?", re.escape(template)), re.IGNORECASE)
        used += any(pattern.fullmatch(t) for t in texts)
    assert used >= 100  # the brief asks for 30 a language


@pytest.mark.parametrize("lang", LANGS)
def test_an_exact_word_match_does_not_find_the_linked_evidence(lang):
    """Plain BM25 over the turns ranks multi-hop and inference evidence low: what is left to match is
    function words and names."""
    found = total = 0
    for conv in committed(lang)["conversations"]:
        turns = [(t["turn_id"], _terms(t["text"])) for s in conv["sessions"] for t in s["turns"]]
        df = Counter(w for _, terms in turns for w in set(terms))
        for q in conv["questions"]:
            if q["category"] not in NO_SHARED_WORD:
                continue
            scores = bm25(_terms(q["question"]), [terms for _, terms in turns], df)
            top = {turns[i][0] for i in sorted(range(len(turns)), key=lambda i: -scores[i])[:10] if scores[i] > 0}
            found += len(top & set(q["evidence"]))
            total += len(q["evidence"])
    assert found / total < 0.2


def test_a_phrasing_that_shares_a_word_is_refused(gen):
    """The generator checks its own claim: a description reusing the deed's words cannot be written."""
    def ask(table):
        draft = gen.Draft(random.Random(0), "en", ["Ana", "Bruno"], 8)
        gen.hop_question(draft, table, "Ana", "van", ["Piet"], None, "job", "florist")
        return draft.questions

    assert ask(gen.EN)  # the shipped phrasings pass
    leaky = copy.deepcopy(gen.EN)
    leaky["roles"]["van"]["desc"] = ["whoever let {s} borrow the van"]
    with pytest.raises(gen.PhrasingClash, match="role van"):
        ask(leaky)


def test_an_unknown_language_is_refused_by_name(gen):
    with pytest.raises(ValueError, match="lang"):
        gen.generate("fr")


def test_the_sets_are_registered_tuning_only(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    quality = importlib.import_module("quality")
    for name in ("hard2-en", "hard2-zh"):
        data = quality.load(name)
        assert data.name == name and len(data.questions) >= 120
        assert data.half("heldout") == [] and len(data.half("tuning")) == len(data.questions)
        assert name in quality.TUNING_ONLY and name not in quality.DEFAULT_SETS
