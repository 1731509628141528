"""The harder held-out conversational sets (design.md §issue-30 point 4; bench/hardconv.py): the committed files
are what the generator makes, and they have the properties they claim — evidence across sessions,
no content word shared with the question, decoys that do share them, a marked tuning half."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from by_path import module_at

from hindbrain.sim.third import _terms, bm25

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def hardconv():
    return module_at(BENCH / "hardconv.py", "hardconv")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_committed_file_is_the_generators_output(hardconv, lang):
    committed = json.loads((BENCH / "data" / f"hard-{lang}.json").read_text("utf-8"))["conversations"]
    assert committed == json.loads(json.dumps(hardconv.generate(lang), ensure_ascii=False))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_sets_have_the_claimed_shape(hardconv, lang):
    convs = json.loads((BENCH / "data" / f"hard-{lang}.json").read_text("utf-8"))["conversations"]
    questions = [q for c in convs for q in c["questions"]]
    assert len(convs) >= 8 and len(questions) >= 120
    assert sum(c["tuning"] for c in convs) == len(convs) // 2
    assert set(Counter(q["category"] for q in questions)) == {"multi-hop", "multi-hop-3", "inference"}
    decoyed = 0
    for conv in convs:
        texts = {t["turn_id"]: t["text"] for s in conv["sessions"] for t in s["turns"]}
        dates = [s["date"] for s in conv["sessions"]]
        assert dates == sorted(dates) and len(set(dates)) == len(dates)
        for q in conv["questions"]:
            evidence = q["evidence"]
            assert len(evidence) == (3 if q["category"] == "multi-hop-3" else 2)
            assert len({e.rsplit("-t", 1)[0] for e in evidence}) >= 2, q["qid"]
            asked = hardconv.content_units(q["question"], lang)
            assert not asked & set().union(*(hardconv.content_units(texts[e], lang) for e in evidence)), q["qid"]
            decoyed += any(asked & hardconv.content_units(t, lang) for i, t in texts.items() if i not in evidence)
    assert decoyed >= 0.9 * len(questions)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_halves_share_no_inference_evidence_or_question(lang):
    """The held-out half meets phrasings the tuning half never had."""
    convs = json.loads((BENCH / "data" / f"hard-{lang}.json").read_text("utf-8"))["conversations"]
    seen = {True: set(), False: set()}
    for conv in convs:
        texts = {t["turn_id"]: t["text"] for s in conv["sessions"] for t in s["turns"]}
        for q in conv["questions"]:
            if q["category"] == "inference":
                seen[conv["tuning"]] |= {texts[e] for e in q["evidence"]}
            seen[conv["tuning"]].add(q["answer"] if q["category"] == "inference" else texts[q["evidence"][0]])
    assert seen[True] and seen[False] and not seen[True] & seen[False]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_exact_word_match_does_not_find_the_evidence(lang):
    """Plain BM25 over the turns (words, CJK characters) ranks the evidence low: the sets measure
    something a keyword index cannot do."""
    convs = json.loads((BENCH / "data" / f"hard-{lang}.json").read_text("utf-8"))["conversations"]
    found = total = 0
    for conv in convs:
        turns = [(t["turn_id"], _terms(t["text"])) for s in conv["sessions"] for t in s["turns"]]
        df = Counter(w for _, terms in turns for w in set(terms))
        for q in conv["questions"]:
            scores = bm25(_terms(q["question"]), [terms for _, terms in turns], df)
            top = {turns[i][0] for i in sorted(range(len(turns)), key=lambda i: -scores[i])[:10] if scores[i] > 0}
            found += len(top & set(q["evidence"]))
            total += len(q["evidence"])
    assert found / total < 0.15
