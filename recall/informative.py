"""How much a turn says: an inference question's evidence states something (design.md §issue-30,
round twenty-two).

"Would Mei enjoy a hot-air balloon ride?" is answered by what Mei said about heights ("Ladders are
the worst, I made my brother clean the gutters."), which shares no word with it; the semantic
channel ranks that turn among the person's others, and with it their small talk ("Thursday works
for me.", "The weather has been all over the place."), which is near any question naming them: a
short turn embeds mostly as its speaker's name. Small talk says little in this conversation's
terms: its words are the ones said all the time. A statement of a habit, a preference or a
constraint holds words said rarely (antihistamines, gutters, a deposit). On the tuning halves of
the hard sets the evidence of an inference question is in the top sixth of its speaker's turns by
the sum of its words' idf (median percentile 0.87 en / 0.89 zh), whatever the topic.

The same holds for any question that names one of the conversation's participants ("Can you list
Samuel's pets?", "What did Caroline research?", round twenty-four): their emptiest turns ("Barely.
Friday can't come soon enough.") are nearest it. So for an inference question, and for a question
naming a speaker of the pool (``NAMED``, ``names_one_of``), each pooled candidate gets a factor
from how much it says relative to the most informative one (``factor``):
``1 − WEIGHT × (1 − information / most)``, which multiplies the learned fusion's probability of
evidence (``recall.learned.rerank``: its trees were fitted before this and do not read it) or,
without the trees, the fused score. Pure functions over the terms and their idfs; the engine
applies them.

A turn's information depends on its words and on the tenant's document frequencies, which change
only when a document is added: ``informations`` keeps each document's per index (``KEPT``, dropped
when the index's document count moves), so a recall-heavy tenant does not count the same ~400
terms' document frequencies again for every inference question (~1 ms a recall, round twenty-two).
"""

from __future__ import annotations

import weakref

from hindbrain.recall.documents import FUNCTION_WORDS
from hindbrain.recall.lexical import BM25Index
from hindbrain.recall.tokenize import tokens

# The share of a candidate's rank its information decides (0: off). Tuning halves, inference R@5
# (bench/informative_ab.py, trees on): 0 → 38.3 en / 25.0 zh; 0.3 → 43.3 / 28.3; 0.5 → 45.0 / 28.3;
# 0.7 → 48.3 / 30.0; 1.0 → 53.3 / 30.0. Not the highest: the more weight, the more the longest turn
# with the rarest words wins whatever it says, and this generator's small talk is emptier than a
# real conversation's; at 0.5 a turn that says nothing keeps half its chance.
WEIGHT = 0.5


# A question naming a conversation's participant is ordered by the factor too (also an A/B switch for
# bench/informative_ab.py). Tuning halves, R@5 (all gold), WEIGHT 0.5, off → on: conv-en 76.7 → 78.6
# (multi-hop 57.7 → 59.3), conv-zh 77.0 → 78.6 (60.5 → 62.0); the hard sets unchanged (their questions
# are inferences or describe a person). 0.7 and 1.0 read higher still on conv-en (79.1, 79.7): one
# weight for both kinds of question, for the reason WEIGHT gives.
NAMED = True


def names_one_of(question: str, speakers: set[str]) -> bool:
    """Whether ``question`` names one of ``speakers``: a whole word in Latin script, the name's
    characters anywhere in Chinese/Japanese/Korean (no spaces between words)."""
    words = set(tokens(question))
    return any(words.issuperset(tokens(name)) if name.isascii() else name in question for name in speakers if name)


def said_terms(text: str, speaker: str | None) -> list[str]:
    """The distinct content terms of a turn's words: its speaker's name (which prefixes the text)
    and function words left out."""
    said = text.removeprefix(f"{speaker}: ") if speaker else text
    return [t for t in dict.fromkeys(tokens(said)) if t not in FUNCTION_WORDS]


def information(terms: list[str], idf: dict[str, float]) -> float:
    """What a turn says: the sum of its content terms' idfs."""
    return sum(idf.get(t, 0.0) for t in terms)


def factor(said: float, most: float, weight: float | None = None) -> float:
    """The factor of a turn whose information is ``said`` when the most informative candidate's is
    ``most``: 1 for the most informative, 1 − ``weight`` (default ``WEIGHT``) for one that says nothing."""
    weight = WEIGHT if weight is None else weight
    if most <= 0 or weight <= 0:
        return 1.0
    return 1.0 - weight * (1.0 - min(1.0, said / most))


KEEP = True  # an A/B switch for the cost bench (docs/recall-quality.md, round twenty-three)
KEPT_MOST = 65536  # documents (and terms) kept per index: beyond, start again
# index → (its document count when counted, document number → its information, term → its idf)
KEPT: weakref.WeakKeyDictionary[BM25Index, tuple[int, dict[int, float], dict[str, float]]] = \
    weakref.WeakKeyDictionary()


def informations(bm25: BM25Index, docs: list[tuple[int, str, str | None]]) -> list[float]:
    """Each document's information (``information`` of its ``said_terms``), ``docs`` as (number,
    text, speaker): read from ``KEPT`` for the index's current document count; the rest counted
    from their terms' idfs, themselves kept (a tenant's turns share most of their words, so a pool
    of turns never seen still finds most idfs known), and kept. Kept only when no document was
    added meanwhile: values counted at another count would outlive the next invalidation's check."""
    n = len(bm25)
    count, known, idf = KEPT.get(bm25, (-1, {}, {}))
    if not KEEP or count != n or len(known) > KEPT_MOST or len(idf) > KEPT_MOST:
        known, idf = {}, {}
    missing = [(no, said_terms(text, speaker)) for no, text, speaker in dict.fromkeys(docs) if no not in known]
    if not missing:
        return [known[no] for no, _, _ in docs]
    unseen = list(dict.fromkeys(t for _, ts in missing for t in ts if t not in idf))
    counted = dict(zip(unseen, bm25.idfs(unseen), strict=True))
    kept = KEEP and len(bm25) == n
    if kept:
        idf.update(counted)  # the same count's idfs: another recall's additions agree with these
    else:
        idf = {**idf, **counted}
    fresh = {no: information(ts, idf) for no, ts in missing}
    if kept:
        known.update(fresh)
        KEPT[bm25] = (n, known, idf)
    return [known.get(no, fresh.get(no)) for no, _, _ in docs]
