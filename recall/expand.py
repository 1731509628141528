"""Evidence that spans turns (design.md §issue-30): from the best hits, the turns that complete them.

A question whose answer needs two or three turns ("when did Samuel's cousin graduate?")
usually matches one of them: "my cousin Freya …" names the cousin, "Freya graduated last
Saturday" says when, and shares no word with the question but the name. So, from the best
``EXPAND_SEEDS`` hits, one step (depth 1) along three kinds of link:

* ``entity:<name>`` — a distinctive name in the hit (capitalised inside a sentence, or opening
  one and written capitalised in every document that holds it, and inside a sentence in one of
  them: "Wait", "Guess", "Classic" only ever open theirs; held by at most
  ``ENTITY_MAX_DF`` documents, not in the query, not the speaker; the rarest first): a
  person, a pet, a place. The query's own words are left out: they already reach what they
  match;
* ``term:<词>`` — the same for a rare Chinese/Japanese/Korean bigram, which has no capitals
  to say it is a name: a weaker link;
* ``speaker-neighbour`` — the same speaker's turns next to the hit in the same session
  (a story told over two turns);
* ``session-neighbour`` — the other speaker's turns next to it (a question and its answer).

Each expanded item scores ``seed score × GAIN × (MIX + (1 − MIX) × own / best)`` (both
per link kind): the link vouches for it, its own relevance to the query orders the expansions, and it
never outranks the hit it came from. The item keeps the better of that and its own score,
and at most ``EXPAND_SLOTS`` expansions stand among the best ``EXPAND_SEEDS`` places
(``within_slots``), none through a name that opens its seed's clause (``subject_link``: the seed tells of
another person's doing) but into the turn introducing that person by the role the question asks through
(``role_unslotted``: "My brother Rohan …" for "Henry's brother"): the second hop of a question comes in, the
first-hop hits stay.
Bounded: ``EXPAND_SEEDS`` seeds, ``ENTITY_TERMS`` terms each, ``NEIGHBOUR_SPAN`` turns
either side. Pure functions over the in-memory index; the engine applies them.

A question about a person it only describes ("the friend who fixed Mei's bike",
``recall.indirect.describes_someone``) needs two turns that each answer half of it: one says
who did the act, the other what is asked about them, joined by the name. For it, the seed and
name-linked item valued highest (``best_pair``: their own scores' sum, plus how much nearer one
is to the description and the other to the rest of the question, ``margin``) both stand among
the best places (``pair_placed``), in the expansion's slot. Not a name: a CJK bigram holding a pronoun or a
particle (``GRAMMATICAL_CHARS``); no link: a turn that repeats the seed's words. Pairs start
from the best hits and from the best turns of each part of the question (``clause_seeds``), each
part also read as the conversation's participants say it (``recall.indirect.in_person``). A
question about a described person's relative ("the flatmate of whoever cut Yuki's hair") needs
three turns joined by two names: the best chain (``chain_links``, ``best_chain``) stands among
the best places instead. A question naming two or more of the conversation's participants ("Name
a destination both Samuel and Henry have visited") gets the best pair of a turn of each sharing
two rare words (``joint_links``), placed the same way. A question asking for a state at the time of
an event ("Which city was Samuel living in when he went to a lantern festival?",
``indirect.state_clauses``) gets the asked person's event turn and the state told last before it
(``state_links``, ``state_then``), joined by their speaker, placed the same way.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from hindbrain.recall import informative
from hindbrain.recall.documents import FUNCTION_WORDS
from hindbrain.recall.indirect import asked_roles, names_a_role, role_before
from hindbrain.recall.tenant_index import TenantIndex
from hindbrain.recall.tokenize import tokens

EXPAND_SEEDS = 5  # the best hits expanded from (3 → 5: +1 point all-gold on conv-en tuning)
# Of the best EXPAND_SEEDS places, at most this many go to expansions: the rest stay the hits'
# own, so a link never pushes out more than one first-hop hit. Tuning halves, R@5 against no
# limit (bench/expand_ab.py): 1 → hard-zh +2.1, conv-zh +0.8, conv-en +0.2, hard-en ±0; 2 → −0.7
# / +0.8 / ±0 / ±0; 3 → ±0 but conv-zh +0.5. None: no limit. Round thirty, every tuning set: 0 gains
# hard3-zh +3 questions and hard2-zh +2 but loses conv-zh multi-hop 2 all-gold answers; 2 and None lose hard3.
EXPAND_SLOTS: int | None = 1
ENTITY_MAX_DF = 6  # a term held by more documents is not distinctive enough to bridge turns
ENTITY_TERMS = 3  # the rarest bridging terms followed from each seed
NEIGHBOUR_SPAN = 2  # turns either side of a seed, within its session
# Per link kind: its gain, and the part of an expanded item's score the link alone vouches
# for (the rest is the item's own relevance). A capitalised name is a sure link; a rare
# Chinese bigram may be half of any word, so its item must also be relevant on its own.
# Chosen on the tuning halves of the conversational sets (docs/recall-quality.md).
GAIN = {"entity": 1.0, "term": 0.9, "speaker-neighbour": 0.5, "session-neighbour": 0.4}
MIX = {"entity": 0.8, "term": 0.5, "speaker-neighbour": 0.5, "session-neighbour": 0.5}
VIA_KINDS = tuple(GAIN)


@dataclass(frozen=True)
class Expansion:
    no: int  # the expanded document's number
    source: int  # the seed's document number
    via: str  # "entity:<name>" | "term:<cjk term>" | "speaker-neighbour" | "session-neighbour"
    score: float
    pair: bool = False  # placed with ``source`` as a described person's pair (``best_pair``)
    clause: tuple[str, float] | None = None  # a pair's turn: the part of the question it was scored on, its cosine

    @property
    def kind(self) -> str:
        return self.via.split(":", 1)[0]

    def why(self, tenant: TenantIndex) -> dict:
        why = {"from": tenant.docs[self.source].id, "via": self.via, "depth": 1, "score": round(self.score, 6)}
        if self.pair:
            why["pair"] = "this turn and the other answer the question together"
        if self.clause is not None:
            why["clause"] = {"part": self.clause[0], "cosine": round(self.clause[1], 4)}
        return why


def expansion_score(seed_score: float, kind: str, own: float, best: float, strength: float = 1.0) -> float:
    """What the link lends an item: the seed's score, damped by the link's gain and by how far
    the item's own relevance is below the best candidate's (``strength``: how much the query
    is a question, ``1 − associative share``; a dialogue's memories are single events)."""
    own_share = min(1.0, own / best) if best > 0 else 0.0
    return seed_score * GAIN[kind] * strength * (MIX[kind] + (1.0 - MIX[kind]) * max(0.0, own_share))


def bridge_terms(tenant: TenantIndex, no: int, query_terms: set[str], inside: bool = False) -> list[str]:
    """The seed's distinctive terms, rarest first: at most ``ENTITY_TERMS``, each held by
    2..``ENTITY_MAX_DF`` documents (itself and at least one other). ``inside``: a Latin term that
    opens its sentence wherever it is written is no name (``_written_inside``)."""
    doc = tenant.docs[no]
    said = doc.text.split(": ", 1)[1] if doc.speaker and doc.text.startswith(f"{doc.speaker}: ") else doc.text
    found: list[tuple[int, str]] = []
    for term, sure in _name_terms(said, doc.speaker or ""):
        if term in query_terms:
            continue
        held = tenant.bm25.docs_with(term, max_df=ENTITY_MAX_DF)
        if held is not None and len(held) >= 2 and (sure or (
                _always_capitalised(tenant, held, term) and (not inside or _written_inside(tenant, held, term)))):
            found.append((len(held), term))
    return [term for _, term in sorted(found)[:ENTITY_TERMS]]


@lru_cache(maxsize=8192)
def _name_terms(said: str, speaker: str) -> tuple[tuple[str, bool], ...]:
    """The terms of a seed's words that may bridge, whatever the query: distinct, in order, not
    the speaker's, no function word, no short or non-alphabetic Latin term, and read as a name
    (``_named``), each with whether that is sure (False: it only opens sentences here, so the
    documents holding it decide). Cached: a fleet's recalls find the same seeds again, and this
    was most of an expansion."""
    skip = set(tokens(speaker))
    out = []
    for term in dict.fromkeys(tokens(said)):
        if term in skip or term in FUNCTION_WORDS or (term.isascii() and (len(term) < 3 or not term.isalpha())):
            continue
        if (CALENDAR_FREE and term in CALENDAR_WORDS) or (TIME_FREE and term in TIME_WORDS) \
                or (PRONOUN_FREE and term in PRONOUNS) or (DISCOURSE_FREE and term in DISCOURSE_WORDS):
            continue
        if GRAMMAR_FREE and not term.isascii() and GRAMMATICAL_CHARS.intersection(term):
            continue
        named = _named(said, term)
        if named is not None:
            out.append((term, named))
    return tuple(out)


# Characters that are pronouns or grammatical particles, never part of a name or a place: a CJK
# bigram holding one ("我的", "我们", "在练", "动了") is a piece of grammar, however rare it is in
# a tenant, and opening a sentence does not make it a name (on the tuning halves these took the
# expansion's slot from the second hop: "我的" linked "我的自行车…" to "我的公寓…").
# A day or month is capitalised like a name but names no one: "on Friday" joins a turn about a concert to one
# about a dinner (docs/recall-quality.md, round twenty-five). Weekdays and months, in English and Chinese.
CALENDAR_WORDS = frozenset({
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "march", "april", "june", "july", "august", "september", "october", "november",
    "december", "easter", "christmas",
    "周一", "周二", "周三", "周四", "周五", "周六", "周日", "周末",
    "星期", "期一", "期二", "期三", "期四", "期五", "期六", "期日", "期天",
})
CALENDAR_FREE = True  # an A/B switch (bench): False lets a weekday or month bridge turns, as before round twenty-five
# A word of time names no one either: a CJK term that opens sentences links as a name (``_opens_a_sentence``), and
# "早上" / "昨晚" open many ("早啊！昨晚那场雷雨…", "昨晚的球你看了没？"), so on hard3-zh's tuning half they joined
# small talk into afterwards pairs in 4 of 15 questions (docs/recall-quality.md, round thirty-two). Each language's
# own words of time, not the data's: parts of the day, days, weeks, months, years and seasons relative to now,
# holidays, and adverbs of when; Chinese as the two-character terms ``tokens`` makes. English ones only open a
# sentence when capitalised ("Yesterday …"), which the described pairs follow (``inside`` off).
TIME_WORDS = frozenset({
    "yesterday", "today", "tomorrow", "tonight", "morning", "afternoon", "evening", "night", "midnight", "noon",
    "weekend", "week", "month", "year", "spring", "summer", "autumn", "fall", "winter", "holiday", "holidays",
    "vacation", "recently", "lately", "earlier", "later", "afterwards", "soon", "now", "then", "ago", "last", "next",
    "早上", "早晨", "清晨", "上午", "中午", "午后", "下午", "傍晚", "晚上", "夜里", "夜晚", "半夜", "深夜", "凌晨",
    "白天", "今早", "今晚", "今夜", "昨晚", "昨夜", "明早", "明晚", "当晚", "那晚",
    "今天", "昨天", "明天", "前天", "后天", "当天", "那天", "这天", "每天", "天天", "改天", "隔天", "次日",
    "上周", "下周", "这周", "本周", "每周", "上个", "下个", "个月", "本月", "上月", "下月", "月初", "月底", "月末",
    "去年", "今年", "明年", "前年", "后年", "每年", "当年", "那年", "年初", "年底", "年末",
    "春天", "夏天", "秋天", "冬天", "春季", "夏季", "秋季", "冬季", "假期", "寒假", "暑假", "春节", "过年", "国庆",
    "中秋", "端午", "元旦", "圣诞", "礼拜", "小时", "分钟", "钟头",
    "那时", "当时", "这时", "此时", "那会", "这会", "刚才", "刚刚", "最近", "近来", "以前", "之前", "之后", "以后",
    "后来", "现在", "如今", "目前", "将来", "从前", "起初", "最初", "当初", "平时", "平常", "随后", "然后", "接着",
})
TIME_FREE = True  # an A/B switch (bench/expand_ab.py, arm ``timenames``): False lets a word of time link as a name
# A pronoun stands for someone without naming them: "Nobody around here has built the treehouse in years" opens its
# sentences capitalised in every turn that holds it, as a name does, and a described person's question (whose names
# may only open sentences, ``inside`` off) linked such a turn's small talk to another's through ``entity:Nobody``
# (round thirty-three). Each language's own closed class, not the data's: personal, negative and indefinite,
# demonstrative and interrogative pronouns and determiners (English words of three letters or more; Chinese as the
# two-character terms ``tokens`` makes, those without a ``GRAMMATICAL_CHARS`` character, which never link).
PRONOUNS = frozenset({
    "you", "she", "him", "her", "hers", "his", "its", "they", "them", "their", "theirs", "our", "ours", "your",
    "yours", "myself", "yourself", "himself", "herself", "itself", "ourselves", "yourselves", "themselves",
    "nobody", "noone", "nothing", "none", "neither", "either", "somebody", "someone", "something", "anybody",
    "anyone", "anything", "everybody", "everyone", "everything", "each", "both", "all", "few", "many", "several",
    "some", "any", "most", "other", "others", "another", "such", "these", "those", "this", "that",
    "who", "whom", "whose", "what", "which", "whoever", "whomever", "whatever", "whichever",
    "有人", "没人", "大家", "别人", "旁人", "人家", "自己", "某人", "某某", "任何", "所有", "各位", "诸位", "每个",
    "有个", "一个", "谁都", "啥都", "什么",
})
PRONOUN_FREE = True  # an A/B switch (bench/expand_ab.py, arm ``pronounnames``): False lets a pronoun link as a name
# A word that opens a sentence as the speaker's frame for it names no one either: hearsay ("听说田甜坐夜车奔厦门了",
# "Apparently …"), a hedge or a stance ("好像", "估计", "Honestly"), a connective ("不过", "Anyway"). Opening sentences,
# CJK ones link as names, and "听说" joined two people's news into a relative's chain (round thirty-three). The
# language's closed class of sentence adverbs and connectives (English ones of three letters or more).
DISCOURSE_WORDS = frozenset({
    "apparently", "supposedly", "reportedly", "honestly", "frankly", "seriously", "actually", "basically",
    "obviously", "clearly", "maybe", "perhaps", "probably", "hopefully", "luckily", "unfortunately", "sadly",
    "anyway", "anyhow", "however", "though", "although", "because", "since", "besides", "meanwhile", "otherwise",
    "also", "still", "guess", "wait", "well", "okay", "yeah", "sure", "thanks", "sorry", "wow", "ugh", "haha",
    "听说", "据说", "听人", "好像", "似乎", "感觉", "觉得", "估计", "可能", "也许", "大概", "或许", "肯定", "其实",
    "反正", "总之", "不过", "但是", "可是", "所以", "因为", "而且", "并且", "况且", "何况", "要是", "如果", "虽然",
    "幸好", "还好", "幸亏", "难怪", "果然", "居然", "竟然", "原来", "记得", "看来", "说实", "老实", "说真",
})
DISCOURSE_FREE = True  # an A/B switch (bench/expand_ab.py, arm ``discoursenames``)
GRAMMATICAL_CHARS = frozenset("我你您他她它们的了吗呢吧啊呀嘛着过这那是在就都也还很把被得么")
GRAMMAR_FREE = True  # an A/B switch for bench/expand_ab.py


def _named(text: str, term: str) -> bool | None:
    """Whether the term reads as a name: True when capitalised inside a sentence ("my cousin
    Freya"), or a Chinese/Japanese/Korean term, which has no capitals (its rarity alone
    decides); False (maybe) when it is capitalised only where it opens a sentence ("Kofi took
    the pictures."), since a sentence's first word is capitalised whatever it is; None when it
    is also written in lower case here, or not at all. Rare common words ("knows", "world") linked
    filler turns on the tuning halves."""
    if not term.isascii():
        return True
    seen = lower = False
    for match in re.finditer(rf"\b{re.escape(term)}\b", text, re.IGNORECASE):
        seen = True
        if not match.group(0)[:1].isupper():
            lower = True
            continue
        if _inside_a_sentence(text, match.start()):
            return True
    return False if seen and not lower else None


def _always_capitalised(tenant: TenantIndex, held, term: str) -> bool:
    """Whether every document holding the term writes it capitalised, each time: a name opening
    its sentence in a turn ("Kofi took the pictures.", "Kofi plays the clarinet now.") is a name
    wherever it is written; an ordinary word opening one sentence is in lower case in another."""
    pattern = re.compile(rf"\b{re.escape(term)}\b", re.IGNORECASE)
    return all(m.group(0)[:1].isupper() for d in held.tolist() for m in pattern.finditer(tenant.docs[d].text))


def _written_inside(tenant: TenantIndex, held, term: str) -> bool:
    """Whether some document holding the term writes it after another word of its sentence: a
    word that only ever opens its sentences ("Wait", "Guess", "Classic", "Big news:") is
    capitalised for that alone, whereas a person is named mid-sentence somewhere ("Thanks,
    Kofi")."""
    pattern = re.compile(rf"\b{re.escape(term)}\b", re.IGNORECASE)
    return any(_inside_a_sentence(text, m.start()) for d in held.tolist()
               for text in (tenant.docs[d].text,) for m in pattern.finditer(text))


# A plain expansion links only through a Latin term that some turn writes inside a sentence; a described
# person's question (its pair and its expansions: the engine passes ``inside`` False) still links through
# one that only opens them: the person is known only through the names that join their turns, and a
# pair's turns must both be relevant on their own (``best_pair``), whereas an expansion's link vouches
# for ``MIX`` of its score. Tuning halves, R@5
# (all gold), off → on: conv-en 78.1 → 78.6 (single-hop 81.2 → 82.1, update 57.1 → 58.7), the rest
# unchanged; for every question, described ones too: hard-en multi-hop 78.0 → 76.0 (this generator's
# names open every sentence: "Paloma gave you that trim" was an expansion's). An A/B switch for
# bench/expand_ab.py.
NAME_INSIDE = True
_SENTENCE_ENDS = ".!?:;\"'(—–-"


def _inside_a_sentence(text: str, start: int) -> bool:
    """Whether the word at ``start`` follows another word of its sentence; a turn's speaker prefix
    ("Mei: ") ends a sentence like a colon."""
    before = text[:start].rstrip()
    return bool(before) and before[-1] not in _SENTENCE_ENDS


OPENING_NAMES = True  # a rare CJK term that opens a sentence is a name (an A/B switch for bench/names_ab.py)
_OPENERS = "。！？!?；;：:\n\"“「『（("


def _opens_a_sentence(tenant: TenantIndex, held, term: str) -> bool:
    """Whether a rare Chinese/Japanese/Korean term opens a sentence in some document holding it:
    the subject of "志远加入了附近的冰壶俱乐部" is the person another turn names ("是志远把我送到
    航站楼的"). A sentence's first two characters are a name or a rare word about as often as
    not, but rare ones that open sentences are mostly names and places; bigrams made across a
    word's edge ("远加") never open one."""
    for d in held.tolist():
        doc = tenant.docs[d]
        said = doc.text.split(": ", 1)[1] if doc.speaker and doc.text.startswith(f"{doc.speaker}: ") else doc.text
        start = said.find(term)
        while start >= 0:
            before = said[:start].rstrip()
            if not before or before[-1] in _OPENERS:
                return True
            start = said.find(term, start + 1)
    return False


# A Latin name links to the turns that write it as one: "Mexico City" named no one in "every city has its
# charm", "Vancouver Island" no one in "an island"; a person's name is capitalised wherever it is written.
# An A/B switch (bench/expand_ab.py, arm ``lowercase``; off: before round twenty-five).
NAME_WRITTEN = True


def _writes_as_a_name(text: str, term: str) -> bool:
    """Whether ``text`` writes the Latin ``term`` capitalised at least once (a CJK term: always)."""
    if not NAME_WRITTEN or not term.isascii():
        return True
    return any(m.group(0)[:1].isupper() for m in re.finditer(rf"\b{re.escape(term)}\b", text, re.IGNORECASE))


def surface(text: str, term: str) -> str:
    """The term as the text writes it ("Freya" for ``freya``), for the explanation."""
    if not term.isascii():
        return term
    match = re.search(rf"\b{re.escape(term)}\b", text, re.IGNORECASE)
    return match.group(0) if match else term


def linked(tenant: TenantIndex, no: int, query_terms: set[str], mask, inside: bool = False) -> list[tuple[int, str]]:
    """(document number, via) of every item one link away from the seed ``no`` (``inside``: as
    ``bridge_terms``)."""
    docs, seed = tenant.docs, tenant.docs[no]
    out: list[tuple[int, str]] = []
    for term in bridge_terms(tenant, no, query_terms, inside):
        held = tenant.bm25.docs_with(term)
        via = f"entity:{surface(seed.text, term)}" if _links_as_name(tenant, held, term) else f"term:{term}"
        out += [(int(d), via) for d in held.tolist() if d != no and _writes_as_a_name(docs[d].text, term)]
    if SAME_WORDS_SKIPPED:
        said = _said(seed)
        out = [(d, via) for d, via in out if _said(docs[d]) != said]
    if seed.session is not None:
        for d in range(max(0, no - NEIGHBOUR_SPAN), min(len(docs), no + NEIGHBOUR_SPAN + 1)):
            if d != no and docs[d].session == seed.session:
                out.append((d, "speaker-neighbour" if docs[d].speaker == seed.speaker else "session-neighbour"))
    return [(d, via) for d, via in out if visible(mask, d)]


def visible(mask, no: int) -> bool:
    """Whether document ``no`` is visible under ``mask`` (None: every document; a document added after the
    mask was made is not)."""
    return mask is None or (no < len(mask) and bool(mask[no]))


SAME_WORDS_SKIPPED = True  # an A/B switch for bench/expand_ab.py


# A question about a person described by an act (not their relative) is answered by the act's turn and
# one about that person; a turn that relates two people ("X says her husband Y is staying with them") is
# the middle link of a relative's chain, and as a pair's turn it stood for the act or the answer (round
# twenty-four's held-out hard-zh losses; docs/recall-quality.md, round twenty-six). Tuning halves, multi-hop
# R@5 (all gold), off → on: hard2-en 54.0 (50 %) → 56.0 (52 %), hard2-zh 44.0 → 45.0, hard-en / hard-zh
# unchanged; a question about a relative keeps its chains. An A/B switch for bench/expand_ab.py.
RELATIONS_NO_ACT = True


def names_in(tenant: TenantIndex, no: int) -> list[str]:
    """The terms of turn ``no`` that link as names, whatever the query (``linked``'s ``entity:``
    links: ``bridge_terms``, a CJK one only where it opens a sentence somewhere)."""
    return [term for term in bridge_terms(tenant, no, set())
            if _links_as_name(tenant, tenant.bm25.docs_with(term), term)]


def _links_as_name(tenant: TenantIndex, held, term: str) -> bool:
    """Whether a bridge ``term`` (``held``: the documents holding it) links as a name (``entity:``), not as a
    shared term: a Latin one always, a CJK one where it opens a sentence somewhere (``OPENING_NAMES``) and is
    nowhere written as a thing (``_written_as_a_thing``)."""
    return term.isascii() or (OPENING_NAMES and _opens_a_sentence(tenant, held, term)
                              and not (THINGS_UNNAMED and _written_as_a_thing(tenant, held, term)))


# A common noun opens sentences as a name does ("新闻里说有个大学生…"), and linked as one it joined small talk into a
# described person's pairs (``entity:新闻``, round thirty-two). A person is never written as a thing is: counted
# or pointed at by a measure word ("罢工那个新闻", "这条消息", "一本书") or a place inside it ("新闻里", "群里",
# "包里"). A term some document writes so is a thing, whatever else opens sentences: it still links, as a shared term
# (``term:``), not as a name. The measure words for a person ("位", "名") are left out. An A/B switch for
# bench/expand_ab.py (arm ``thingnames``).
THINGS_UNNAMED = True
_THING_BEFORE = frozenset("个条件本部台辆首篇场份套")  # not 把, 只, 次, 张: "把志远…", "只有…", "上次…", a surname
_THING_AFTER = frozenset("里")


def _written_as_a_thing(tenant: TenantIndex, held, term: str) -> bool:
    """Whether some document holding the CJK ``term`` writes it right after a measure word (``_THING_BEFORE``) or
    right before a word of inside (``_THING_AFTER``)."""
    for d in held.tolist():
        said = _said(tenant.docs[d])
        start = said.find(term)
        while start >= 0:
            end = start + len(term)
            if (start > 0 and said[start - 1] in _THING_BEFORE) or (end < len(said) and said[end] in _THING_AFTER):
                return True
            start = said.find(term, start + 1)
    return False


def relates(tenant: TenantIndex, no: int) -> bool:
    """Whether a turn relates two people: it names a role (``indirect.names_a_role``: a spouse, a
    flatmate, a colleague) and two people who link as names ("Maren says her husband Kofi is staying
    with them", "国栋说他的老婆桂兰最近住在他们那儿"). Such a turn is the link of a chain, not the act
    or the attribute of a pair."""
    return names_a_role(_said(tenant.docs[no])) and len(names_in(tenant, no)) >= 2


def without_relations(tenant: TenantIndex, links: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """``pair_links`` without the links either of whose turns ``relates`` two people (all of them
    with ``RELATIONS_NO_ACT`` off)."""
    if not RELATIONS_NO_ACT:
        return links
    # judged once a turn: a seed's turn is in several of its pairs, and each judging looks its names up
    relating = {no for no in {n for a, b, _ in links for n in (a, b)} if relates(tenant, no)}
    return [(a, b, via) for a, b, via in links if a not in relating and b not in relating]


def _said(doc) -> str:
    """The words of a turn without its speaker's name."""
    return doc.text.split(": ", 1)[1] if doc.speaker and doc.text.startswith(f"{doc.speaker}: ") else doc.text


def expand(tenant: TenantIndex, seeds: list[tuple[int, float]], own: dict[int, float], best: float,
           query_terms: set[str], mask, strength: float, inside: bool | None = None,
           seed_links: dict[int, list[tuple[int, str]]] | None = None) -> dict[int, Expansion]:
    """Document number → its best expansion from ``seeds`` ((number, score), best first).
    ``own``: each candidate's own score (0 for an item only a link reaches); ``best``: the
    best candidate's score. An item keeps the expansion only where it beats its own score;
    a seed is never expanded to. ``inside``: as ``bridge_terms`` (None: ``NAME_INSIDE``).
    ``seed_links``: each seed's ``linked`` already read in this recall (the same query terms, mask
    and ``inside``), filled as seeds are read: a recall expands its seeds twice a scoring (before
    and after the new items' own scores are known) and the hedge scores twice."""
    inside = NAME_INSIDE if inside is None else inside
    if strength <= 0 or best <= 0:
        return {}
    seed_nos = {no for no, _ in seeds}
    out: dict[int, Expansion] = {}
    for no, seed_score in seeds[:EXPAND_SEEDS]:
        if seed_score <= 0:
            continue
        links = seed_links.get(no) if seed_links is not None else None
        if links is None:
            links = linked(tenant, no, query_terms, mask, inside=inside)
            if seed_links is not None:
                seed_links[no] = links
        for d, via in links:
            if d in seed_nos:
                continue
            kind = via.split(":", 1)[0]
            score = expansion_score(seed_score, kind, own.get(d, 0.0), best, strength)
            if score > own.get(d, 0.0) and (d not in out or score > out[d].score) and math.isfinite(score):
                out[d] = Expansion(d, no, via, score)
    return out


def within_slots(found: dict[int, Expansion], own: dict[int, float], places: int = EXPAND_SEEDS,
                 slots: int | None = None, unslotted: frozenset[int] = frozenset()) -> dict[int, Expansion]:
    """The expansions kept when at most ``slots`` of them may stand among the best ``places``
    (``own``: every candidate's own score): the weakest expansion in those places is dropped
    (its item keeps its own score) until the rest fit. ``unslotted``: expansions that may not stand
    there at all (``subject_link``), dropped first. ``slots`` None: all kept."""
    if slots is None:
        return found
    kept = dict(found)
    while kept:
        score = {no: kept[no].score if no in kept else s for no, s in own.items()}
        top = [no for no in sorted(score, key=lambda no: -score[no])[:places] if no in kept]
        extra = [no for no in top if no in unslotted] or top[slots:]
        if not extra:
            break
        del kept[extra[-1]]
    return kept


# Round thirty-one (docs/recall-quality.md, "Multi-hop, round thirty-one"): which expansions EXPAND_SLOTS 0 removed
# to win the Chinese hard sets' trait and inference questions, and 1 kept to win conv's multi-hop answers. Both were
# name links (``entity:``), not CJK word pairs; what told them apart is where the name stands in its seed. A seed
# whose clause opens with the name ("孙悦想去那家麻辣火锅店尝尝", "Kofi took the pictures") tells of that person's
# doing: news of a third person near the question's words, whose other turns answer nothing asked. A seed that
# names someone after other words ("我妹妹子涵又在催我", "my older sister Lena", "rush Pip to the vet") introduces
# them within its speaker's own statement: the second hop of a question about that speaker. So a link through a
# name opening its clause of the seed gets no place among the best five (its item keeps its own score and its
# rank below). An A/B switch for bench/expand_ab.py (arm ``subjectslot``).
SUBJECT_UNSLOTTED = True
CLAUSE_MARKS = _OPENERS + "，,、.—–-"  # what ends a clause: a name after one of these opens its clause


def subject_link(tenant: TenantIndex, e: Expansion) -> bool:
    """Whether the expansion's link is a name (or CJK term) that opens a clause of its seed where the seed
    first writes it (``CLAUSE_MARKS``; a turn's start too, its speaker's prefix left out)."""
    kind, _, term = e.via.partition(":")
    if kind not in ("entity", "term") or not term:
        return False
    said = _said(tenant.docs[e.source])
    match = re.search(re.escape(term) if not term.isascii() else rf"\b{re.escape(term)}\b", said, re.IGNORECASE)
    if match is None:
        return False
    before = said[:match.start()].rstrip()
    return not before or before[-1] in CLAUSE_MARKS


# The rule's reverse case (round thirty-one, second part): a link into a turn that names the person right after the
# role word the question asks through ("Which city does Henry's brother live in?" → "My brother Rohan keeps sending
# me memes", "沈念的妹妹…" → "我妹妹子涵又在催我") is the turn that introduces them, the question's first hop,
# whatever seed the name was reached from ("Rohan just signed a lease in Minneapolis" opens with it): it keeps its
# slot. Another role ("My older brother Wes" for "Felix's cousin") or none asked ("the friend who …" describes
# someone) keeps none. An A/B switch for bench/expand_ab.py (arm ``noroleslot``; ``roleany``: ``ROLE_ASKED`` off,
# any role word, whatever the question asks).
ROLE_SLOTTED = True
ROLE_ASKED = True


def introduced_by_role(tenant: TenantIndex, e: Expansion, roles: frozenset[str] | None) -> bool:
    """Whether the expanded turn names the link's person right after one of ``roles`` (None: any role word;
    ``indirect.role_before``)."""
    kind, _, term = e.via.partition(":")
    return kind in ("entity", "term") and bool(term) and role_before(_said(tenant.docs[e.no]), term, roles)


def role_unslotted(tenant: TenantIndex, found: dict[int, Expansion], question: str) -> frozenset[int]:
    """The expansions that take no place among the best five (``subject_link``), but for those into a turn
    introducing their person by the role the question asks through (``introduced_by_role``)."""
    if not SUBJECT_UNSLOTTED:
        return frozenset()
    roles = asked_roles(question) if ROLE_ASKED else None
    keep = ROLE_SLOTTED and roles != frozenset()
    return frozenset(no for no, e in found.items()
                     if subject_link(tenant, e) and not (keep and introduced_by_role(tenant, e, roles)))


LINK_FOUND = True  # an expanded item is "found otherwise" for the gate (an A/B switch for bench/expand_ab.py)
PAIRS = True  # a described person's best pair stands among the best places (an A/B switch for bench/expand_ab.py)


@dataclass(frozen=True)
class Pair:
    """A seed and the item one name away from it that together answer a question about a person it
    only describes: one turn says who did the act, the other what is asked about them."""
    seed: int
    partner: int
    via: str  # "entity:<name>"
    value: float  # how much of the question the turns cover together (``pair_value``)
    far: int | None = None  # a chain's third turn, one more name away from the partner (``best_chain``)
    far_via: str | None = None
    parts: tuple[int | None, ...] = ()  # per turn, the part of the question it was scored on (``margin``)

    @property
    def turns(self) -> tuple[int, ...]:
        return (self.seed, self.partner) if self.far is None else (self.seed, self.partner, self.far)


PERSON_VIEWS = True  # a described question's parts as its participants say them are views too (engine._in_person)
PARTICIPANT_SAMPLE = 50  # the candidates whose speakers are taken as the conversation's participants
# The best turns by each part of a described question, seeds of its pairs too (tuning halves,
# bench/expand_ab.py: 5 → hard-en multi-hop R@5 70 → 74, 3 the same, 10 ±0; hard-zh ±0).
CLAUSE_SEEDS = 5


def clause_seeds(clause: dict[int, tuple[float, float]] | None) -> list[int]:
    """The best ``CLAUSE_SEEDS`` turns by each clause's cosine (head, description): a turn that
    says who did the act may rank low on the whole question, which also asks something else."""
    if not clause or not CLAUSE_SEEDS:
        return []
    out: list[int] = []
    for part in (0, 1):
        out += sorted(clause, key=lambda no: -clause[no][part])[:CLAUSE_SEEDS]
    return list(dict.fromkeys(out))


def pair_links(tenant: TenantIndex, hits: list[int], query_terms: set[str], mask,
               more: list[int] = ()) -> list[tuple[int, int, str]]:
    """(seed, item, via) for every name (``entity:``) link of ``hits`` (the best ``EXPAND_SEEDS``
    document numbers) and ``more`` (``clause_seeds``) to an item that is none of those hits: the
    pair brings a turn the hits lack (two hits already stand among the best places; with pairs of
    hits allowed, they won over pairs that completed a hit, and the tuning halves lost 4 points of
    all-gold multi-hop).
    Names only: a rare CJK bigram or a neighbouring turn says nothing of a person."""
    best = set(hits)
    return [(no, d, via) for no in dict.fromkeys([*hits, *more]) for d, via in linked(tenant, no, query_terms, mask)
            if via.startswith("entity:") and d not in best]


# How much a described person's pair (or chain) owes to each turn's nearness to its own part of
# the question (``pair_value``; 0: the sum of the turns' own scores alone, before round
# twenty-three). Tuning halves, multi-hop all gold in the top 5, hard-en / hard-zh (25 questions
# each, bench/expand_ab.py): 0 → 72 / 76 %; 0.1 to 0.3 → 76 / 76 (and two more pairs first and
# second); 0.35 → 76 / 80; 0.4 loses an English one; 0.5 → 72 / 80. 0.3: inside what loses
# nothing, not on its edge. The conv sets never describe a person: unchanged.
BY_CLAUSE = 0.3


def margin(turns: tuple[int, ...], clause: dict[int, tuple[float, float]], act: int
           ) -> tuple[float, tuple[int | None, ...]]:
    """How well the turns answer the question's two parts each by its own (``clause``: each turn's
    cosine to the two parts, ``engine._clause_cosines``; ``act``: the part that is the
    description): one turn by how much nearer it is to the description than to the rest (who did
    the act), another by how much nearer to the rest than to the description (what is asked), the
    best such two. A margin, not a cosine: a turn near both parts alike (small talk shaped like a
    question, a turn that is mostly its speaker's name) says nothing of either, and the raw cosine
    of the head ("Which instrument does the person") is near everything a little. Returns the
    value and each turn's part (None: scored by neither)."""
    cos = [clause.get(no, (0.0, 0.0)) for no in turns]
    rest = 1 - act
    best, parts = -math.inf, ()
    for i, c in enumerate(cos):
        for j, d in enumerate(cos):
            value = (c[act] - c[rest]) + (d[rest] - d[act])
            if i != j and value > best:
                best, parts = value, tuple(act if k == i else rest if k == j else None for k in range(len(turns)))
    return best, parts


def pair_value(turns: tuple[int, ...], own: dict[int, float], clause: dict[int, tuple[float, float]] | None,
               act: int | None = None) -> tuple[float, tuple[int | None, ...]]:
    """A pair's or chain's value and the part of the question each turn was scored on (() by own
    scores alone): ``Σ own + BY_CLAUSE × margin``. By own scores alone a wrong pair whose turns sum
    high wins: the question's head matched by another person's turn ("Callum has been practising
    the harp"), paired through any turn naming Callum; the margin asks that one turn answer the
    description and another the rest."""
    total = sum(own.get(no, 0.0) for no in turns)
    if not clause or act is None or BY_CLAUSE <= 0:
        return total, ()
    value, parts = margin(turns, clause, act)
    return total + BY_CLAUSE * value, parts


def best_pair(links: list[tuple[int, int, str]], own: dict[int, float],
              clause: dict[int, tuple[float, float]] | None = None, act: int | None = None) -> Pair | None:
    """Of ``pair_links``, the seed and item valued highest (``pair_value``: by their own scores
    ``own``, and by ``clause`` each by its own part of the question, ``act`` the description's).
    Each turn of the pair answers a different part of the question ("Kofi took all the pictures
    when you got married" / "Kofi has been practising the clarinet"), so neither alone needs to
    rank high; what singles the pair out is that both are relevant. A link's strength does not:
    every name links two turns alike. (The product of the own scores, "both or nothing", tied their
    sum on the tuning halves' multi-hop questions and lost 2 points R@5 on the three-turn ones; a
    generic turn that names someone, "Maren told me her flatmate, Lars, is staying", can pair with
    a strong single hit and win.)"""
    best: Pair | None = None
    for no, d, via in links:
        value, parts = pair_value((no, d), own, clause, act)
        if best is None or value > best.value:
            best = Pair(no, d, via, value, parts=parts)
    return best


def pair_placed(pair: Pair, own: dict[int, float], places: int = EXPAND_SEEDS) -> dict[int, float]:
    """The scores that put every turn of ``pair`` (two, or a chain's three) among the best
    ``places`` (``own``: every candidate's score): each at least just above the (places − n + 1)-th
    of the other candidates, so at most n − 1 of them leave those places; the seed stays ahead of
    its partner, the partner ahead of the far turn."""
    turns = pair.turns
    others = sorted((s for no, s in own.items() if no not in turns), reverse=True)
    floor = others[places - len(turns)] if len(others) > places - len(turns) else 0.0
    lift = max(abs(floor), 1e-9) * 1e-6
    out, above = {}, math.inf
    for n, no in enumerate(turns):
        out[no] = above = min(above - lift / 2, max(own.get(no, 0.0), floor + (len(turns) - n) * lift))
    return out


# A question naming two or more of the conversation's participants asks what they share or each did
# ("Name a destination both Samuel and Henry have visited", "许文博和潘越有什么共同的周末爱好？"): its answer
# is a turn of each, and where they share it the two turns share a rare word ("Bali", "瑜伽") that the
# question does not hold. The best such pair of turns, one of each participant, stands among the best
# places as a described person's pair does (``joint_links``, ``best_pair``, ``pair_placed``). An A/B switch
# for bench/expand_ab.py (arm ``nojoint``).
JOINT_PAIRS = True
JOINT_SEEDS = 20  # the best turns of the named participants whose rare words are followed
JOINT_SHARED = 2  # the rare words two turns must share to be a pair


def joint_links(tenant: TenantIndex, ranked: list[int], named: set[str], query_terms: set[str],
                mask) -> list[tuple[int, int, str]]:
    """(seed, item, via) for each of the best ``JOINT_SEEDS`` of ``ranked`` (document numbers, best
    first) spoken by one of ``named`` and each turn of another of ``named`` that shares at least
    ``JOINT_SHARED`` of the seed's rare words (``shared_terms``; ``via`` names the rarest): the
    candidate pairs of a question about what several participants share. One shared word is
    chance ("need", "pretty", "past" linked small talk on the tuning halves); two say the same thing."""
    docs = tenant.docs
    seeds = [no for no in ranked if docs[no].speaker in named][:JOINT_SEEDS]
    out: list[tuple[int, int, str]] = []
    for no in seeds:
        seed = docs[no]
        shared: dict[int, list[str]] = {}
        for term in shared_terms(tenant, no, query_terms):
            for d in tenant.bm25.docs_with(term).tolist():
                if docs[d].speaker in named and docs[d].speaker != seed.speaker and visible(mask, d):
                    shared.setdefault(d, []).append(term)
        for d, terms in shared.items():
            if len(terms) >= JOINT_SHARED and not _same_words_but_names(seed, docs[d], named):
                term = terms[0]
                named_term = term.isascii() and _writes_as_a_name(seed.text, term)
                out.append((no, d, f"entity:{surface(seed.text, term)}" if named_term else f"term:{term}"))
    return out


def _same_words_but_names(a, b, names: set[str]) -> bool:
    """Whether two turns say the same words once the participants' names are left out: each
    greeting the other ("Samuel!! I've been meaning to message you all week." / "Henry!! …") is
    one template spoken twice, nothing the two share."""
    skip = {t for name in names for t in tokens(name)}
    return [t for t in tokens(_said(a)) if t not in skip] == [t for t in tokens(_said(b)) if t not in skip]


def shared_terms(tenant: TenantIndex, no: int, query_terms: set[str]) -> list[str]:
    """The rare words of turn ``no`` that another turn may share, rarest first: each held by
    2..``ENTITY_MAX_DF`` documents, not the query's nor the speaker's name, no function word, no
    short or non-alphabetic Latin word, no CJK bigram of grammar (``GRAMMATICAL_CHARS``). Names or
    not: what two people share is as often a thing they do ("yoga in the park") as a place."""
    doc = tenant.docs[no]
    skip = {*query_terms, *tokens(doc.speaker or ""), *FUNCTION_WORDS}
    found: list[tuple[int, str]] = []
    for term in dict.fromkeys(tokens(_said(doc))):
        if term in skip or (term.isascii() and (len(term) < 3 or not term.isalpha())):
            continue
        if not term.isascii() and GRAMMATICAL_CHARS.intersection(term):
            continue
        held = tenant.bm25.docs_with(term, max_df=ENTITY_MAX_DF)
        if held is not None and len(held) >= 2:
            found.append((len(held), term))
    return [term for _, term in sorted(found)]


CHAINS = True  # a described person's relative: a chain of three turns (an A/B switch for bench/expand_ab.py)


def chain_links(tenant: TenantIndex, hits: list[int], query_terms: set[str], mask,
                more: list[int] = ()) -> list[tuple[int, int, int, str, str]]:
    """(seed, partner, far, via, far_via): from each of ``hits`` (as ``pair_links``) and
    ``more``, a name to a partner and another of the partner's names to a far turn: "Kofi gave you
    that trim" → "Kofi told me his flatmate, Callum, is staying" → "Callum has been practising the
    cello". A question about the relative of a described person needs all three; any of them may
    be a hit already (a chain of hits keeps its places: no pair displaces one of its turns)."""
    out = []
    for seed in dict.fromkeys([*hits, *more]):
        for partner, via in linked(tenant, seed, query_terms, mask):
            if not via.startswith("entity:"):
                continue
            for far, far_via in linked(tenant, partner, query_terms, mask):
                if far_via.startswith("entity:") and far_via.lower() != via.lower() and far != seed \
                        and not (CHAIN_ENDS_DIFFER and ends_repeat(tenant.docs[seed], tenant.docs[far])):
                    out.append((seed, partner, far, via, far_via))
    return out


# A chain's ends answer different parts of the question (the deed, and what is asked of the relative), so they do
# not say the same thing: "Marta has Arabic flashcards stuck all over the fridge" and "Tomasz has Swahili flashcards
# stuck all over the fridge" are one thing said of two people (the deed-doer's own attribute beside the relative's),
# both near the question's head, and such a chain won over the one through the deed (round thirty-three). Ends
# sharing more than ``ENDS_SHARED`` of the shorter's words are no chain. An A/B switch for bench/expand_ab.py (arm
# ``endsrepeat``).
CHAIN_ENDS_DIFFER = True
ENDS_SHARED = 0.5


def ends_repeat(a, b) -> bool:
    """Whether turns ``a`` and ``b`` share more than ``ENDS_SHARED`` of the shorter's distinct words (no function
    word; CJK bigrams as ``tokens`` makes them)."""
    words_a, words_b = (set(tokens(_said(d))) - FUNCTION_WORDS for d in (a, b))
    shorter = min(len(words_a), len(words_b))
    return shorter > 0 and len(words_a & words_b) > ENDS_SHARED * shorter


def best_chain(chains: list[tuple[int, int, int, str, str]], own: dict[int, float],
               clause: dict[int, tuple[float, float]] | None = None, act: int | None = None) -> Pair | None:
    """Of ``chain_links``, the one whose three turns are valued highest (``pair_value``, as
    ``best_pair``)."""
    best: Pair | None = None
    for seed, partner, far, via, far_via in chains:
        value, parts = pair_value((seed, partner, far), own, clause, act)
        if best is None or value > best.value:
            best = Pair(seed, partner, via, value, far, far_via, parts)
    return best


# A state at the time of an event ("Which city was Samuel living in when he went to a lantern festival?",
# ``indirect.state_clauses``): one turn tells the event, another the state asked for, both said by the
# person asked about; no name joins them ("Dublin in the evening is my favourite thing here" names no
# festival), their speaker does. Of that person's turns, the best ``STATE_EVENTS`` of the fused order are
# the event's candidates and the ``STATE_CANDIDATES`` nearest the head rather than the event (``state_links``)
# the state's; the pair valued highest (``best_pair``, the head and the event as its two parts) stands
# among the best places. An A/B switch for bench/expand_ab.py (arm ``nostate``).
STATE_PAIRS = True
STATE_EVENTS = 3
STATE_CANDIDATES = 3


def speaker_turns(tenant: TenantIndex, speaker: str, mask) -> list[int]:
    """The document numbers of every turn ``speaker`` said (visible under ``mask``): a turn's indexed
    text opens with its speaker's name, so the name's postings hold them all."""
    words = tokens(speaker)
    held = tenant.bm25.docs_with(words[0]) if words else None
    if held is None:
        return []
    docs = tenant.docs
    return [d for d in held.tolist() if docs[d].speaker == speaker and visible(mask, d)]


def state_links(tenant: TenantIndex, ranked: list[int], turns: list[int], clause: dict[int, tuple[float, float]]
                ) -> list[tuple[int, int, str]]:
    """(event, state, via) for a state-at-the-time question: each of the first ``STATE_EVENTS`` of
    ``ranked`` (document numbers, best first) among ``turns`` (the asked person's, ``told``) with the state in
    force then (``state_then``) of the ``STATE_CANDIDATES`` of ``turns`` nearest the head by more than the
    event (``clause``: each turn's cosine to (head, event)). A margin, not the head's cosine: a turn
    telling the event is near a head that names the same person too."""
    said = set(turns)
    events = [no for no in ranked if no in said][:STATE_EVENTS]
    near = sorted((no for no in turns if no in clause), key=lambda no: clause[no][1] - clause[no][0])
    out = []
    for event in events:
        state = state_then(tenant, event, [no for no in near[:STATE_CANDIDATES] if no != event])
        if state is not None:
            out.append((event, state, "speaker"))
    return out


TOLD_ONLY = True  # a state's candidates are the turns that tell something (an A/B switch, arm ``anyturn``)
TOLD_SHARE = 1 / 3  # the share of a person's turns, the most informative, that may tell a state (round twenty-nine)


def told(tenant: TenantIndex, turns: list[int]) -> list[int]:
    """Of a person's ``turns``, those that may tell a state: no question in them (``asks``: "最近在忙啥呢？"
    is near "在做什么工作？" and tells nothing) and among the ``TOLD_SHARE`` of the person's turns that say
    the most (``informative.informations``: small talk, "这周工作真是忙疯了", "真好，那边生活挺舒服的吧。",
    is near any question about work or a home, and said as much as the median turn)."""
    if not TOLD_ONLY or not turns:
        return turns
    docs = tenant.docs
    said = informative.informations(tenant.bm25, [(no, docs[no].text, docs[no].speaker) for no in turns])
    least = sorted(said)[min(len(said) - 1, int(len(said) * (1 - TOLD_SHARE)))]
    return [no for no, value in zip(turns, said, strict=True) if value >= least and not docs[no].asks]


STATE_BEFORE = True  # the state told last before the event, not the nearest the head (an A/B switch, arm ``nearest``)


def state_then(tenant: TenantIndex, event: int, states: list[int]) -> int | None:
    """Of ``states`` (best first), the one in force at ``event``: the last told at or before it (a person
    who "moved to Guangzhou" after "seven years in Kunming" lives in Guangzhou from then on); the best
    when none was told before it (a state told later may have held all along: "I've lived here for
    years")."""
    docs = tenant.docs
    when = docs[event].ts_us
    before = [no for no in states if docs[no].ts_us <= when] if STATE_BEFORE else []
    if before:
        return max(before, key=lambda no: (docs[no].ts_us, no))
    return states[0] if states else None


# What became of someone afterwards ("Who organised the street party, and where did that person go
# afterwards?", ``indirect.asks_afterwards``): one turn tells the deed ("Diego pulled the whole block
# celebration together"), a turn told in a later session what the doer did next ("Last I heard Diego was
# baking bread for a cafe in Reykjavik"), joined by the doer's name. The deed's turn is usually among the best
# hits; the later one says nothing of the deed and ranks nowhere. The best name-linked pair (``best_pair``)
# whose second turn was told after the first stands among the best places. An A/B switch for
# bench/expand_ab.py (arm ``nolater``).
LATER_PAIRS = True
LATER_SEEDS = 10  # the best turns whose names are followed: the deed's may rank below the best five
# A described afterwards question ("What happened later to whoever painted the mural at the school?", "找到了走丢的
# 狗的人，如今在哪儿？") goes to the later pair too, its description the deed: the described person's pair (own
# scores and the clause margin) has no time order, and took small talk told before. Not a relative's question
# ("…的朋友的配偶后来搬到哪个城市？"): that one needs its chain (round thirty-one's second part lost hard-zh so).
# Tuning R@5 (all gold), off → on: hard3-zh 32.6 (21) → 34.0 (23), `after` 43.3 (33) → 50.0 (40); hard-zh
# 50.7 (39) → 50.0 (37), one multi-hop question; docs/recall-quality.md, round thirty-two. An A/B switch
# (bench/expand_ab.py, arm ``nodescribedlater``).
DESCRIBED_LATER = True


def later_links(tenant: TenantIndex, seeds: list[int], query_terms: set[str], mask) -> list[tuple[int, int, str]]:
    """(seed, item, via) for every name (``entity:``) link of ``seeds`` to a turn told after the seed: what
    the person did afterwards, not what they had done before. A hit may be either turn (unlike
    ``pair_links``): the later turn is often a hit already, and the pair keeps it among the best places."""
    return told_later(tenant, [(no, d, via) for no in seeds for d, via in linked(tenant, no, query_terms, mask)
                               if via.startswith("entity:")])


def told_later(tenant: TenantIndex, links: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Of ``links`` (seed, item, via), those whose item was told after its seed (a later session)."""
    docs = tenant.docs
    return [(no, d, via) for no, d, via in links if docs[d].ts_us > docs[no].ts_us]


def best_later(links: list[tuple[int, int, str]], clause: dict[int, tuple[float, float]]) -> Pair | None:
    """Of ``later_links``, the pair whose seed is nearest the deed and whose later turn nearest what is
    asked of afterwards (``clause``: each turn's cosine to (deed, later), ``indirect.after_clauses``).
    Not the turns' own scores: the fused order of a question asking two things ranks a turn near both
    a little ("Diego and I had lunch on Tuesday") above one that answers either; each part is the test
    of its own turn."""
    best: Pair | None = None
    for no, d, via in links:
        value = clause.get(no, (0.0, 0.0))[0] + clause.get(d, (0.0, 0.0))[1]
        if best is None or value > best.value:
            best = Pair(no, d, via, value, parts=(0, 1))
    return best


# What changed for someone (``indirect.asks_change``, a question naming one participant): the before and the
# after are two of that person's turns on the subject, told in different sessions, and the subject is all that
# joins them: the two of the person's told turns (``told``) nearest the question, from different sessions, stand
# among the best places. An A/B switch for bench/expand_ab.py (arm ``nochange``).
CHANGE_PAIRS = True


# A question asking of a state "now" alone (``indirect.asks_now``: "Does Mateo have a pet now?") is a change
# question only when the person told the subject in two sessions: the turn from another session must be among
# the person's ``NOW_NEAR`` turns nearest the question (a single state told once has its second-nearest turn
# anywhere). An A/B switch for bench/expand_ab.py (arm ``nonow``: "now" no change word; ``nowall``: no gate).
NOW_PAIRS = True
NOW_NEAR: int | None = 2
def best_change(tenant: TenantIndex, turns: list[int], cosine: dict[int, tuple[float, ...]],
                near_only: int | None = None) -> Pair | None:
    """Of a person's ``turns``, the two nearest the question (``cosine``: each turn's cosine to it, without
    the person's name) told in different sessions, the nearer first: a state and the one that replaced it.
    Two turns of one session tell one state (or its telling and a reply). ``near_only``: the second must be
    among that many nearest (None: any)."""
    docs = tenant.docs
    near = sorted((no for no in turns if no in cosine), key=lambda no: -cosine[no][0])
    if not near:
        return None
    first = near[0]
    other = next((no for no in near[1:near_only] if docs[no].session != docs[first].session), None)
    if other is None:
        return None
    return Pair(first, other, "speaker", cosine[first][0] + cosine[other][0], parts=(0, 0))


def said_once(tenant: TenantIndex, turns: list[int]) -> list[int]:
    """Of a person's ``turns``, those whose words they say only once: a line said again ("Traffic was a
    nightmare this morning.", "Ugh, long day. Coffee first.") is a formula of their small talk, no state
    told; a state and the one that replaced it are each told once."""
    docs = tenant.docs
    count: dict[str, int] = {}
    for no in turns:
        count[_said(docs[no])] = count.get(_said(docs[no]), 0) + 1
    return [no for no in turns if count[_said(docs[no])] == 1]
