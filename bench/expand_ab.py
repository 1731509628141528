"""Evidence that spans turns (``recall.expand``), arm against arm: ``Brain.recall`` with defaults
in one process over the same brain, question by question interleaved (which arm goes first
rotates: a query's later recalls find its vector cached), so the machine's drift hits every arm
alike. Prints R@5 and, in brackets, the share of questions with every gold turn in the top 5,
per half and question type, and each arm's latency (p50, p99, p50 ratio to the first arm).

Arms:
* ``inside`` — names only where capitalised inside a sentence, one step (before 237e00a);
* ``opening`` — also a name that opens its sentence (Latin script: capitalised wherever the
  documents holding it write it; CJK: a rare term opening a sentence links as a name);
* ``slots1`` / ``slots2`` / ``slots3`` — ``opening`` with at most that many expansions among the
  best five places (``expand.EXPAND_SLOTS``); ``slots1`` is main before the fifth pass;
* ``grammar`` / ``same`` — ``slots1`` with one of the fifth pass's link filters: no CJK bigram of
  grammar as a name (``GRAMMAR_FREE``), no link to a turn repeating the seed's words
  (``SAME_WORDS_SKIPPED``);
* ``nopairs`` — both filters, no pair for a described person (``PAIRS``, ``LINK_FOUND``);
* ``pairs`` — the pairs, but an expanded item still cut by the gate as matching function words
  only (``LINK_FOUND`` off);
* ``noclause`` — everything but the described question cut into two views (``indirect.CLAUSE_VIEWS``);
* ``noseeds`` — the fifth pass as it landed: none of the sixth pass's switches;
* ``person`` — the sixth pass's pair seeds from each part of a described question, each part also
  read as the participants say it for those seeds (``CLAUSE_SEEDS``, ``indirect.IN_PERSON``), but
  no views of those readings (``PERSON_VIEWS``) and no chains;
* ``nochains`` — the sixth pass but no chain of three turns for a described person's relative
  (``CHAINS``);
* ``openers`` — a Latin term capitalised only where it opens its sentences, in every turn holding
  it, still a name (``NAME_INSIDE`` off: before round twenty-four);
* ``sum`` / ``clause10`` / ``clause25`` / ``clause50`` / ``clause100`` — a described person's pair
  or chain valued by its turns' own scores (before round twenty-three), plus that much of how
  much nearer one turn is to the description than to the rest and another to the rest than to
  the description (``expand.BY_CLAUSE`` 0 / 0.1 / 0.25 / 0.5 / 1, ``expand.margin``);
* ``nawei`` — a Chinese question describing a person as "…的那位" / "…的那名" with no noun after it
  not read as describing one (before round twenty-four);
* ``reduced`` — an English question describing a person by a reduced relative ("the person
  responsible for the sweets", "in charge of") not read as describing one (before round twenty-four);
* ``slots0`` — no expansion among the best five places (``EXPAND_SLOTS`` 0); ``slots2now`` /
  ``unlimited`` — two, any number of them (``EXPAND_SLOTS`` 2 / None) with every other switch as shipped;
* ``calendar`` — a weekday or month capitalised inside a sentence still a name that links turns
  (``CALENDAR_FREE`` off: before round twenty-five; the arms above run with it on);
* ``lowercase`` — a Latin name links to every turn holding the word, lower case too ("every city"
  for "Mexico City"; ``NAME_WRITTEN`` off: before round twenty-five);
* ``relation_acts`` — a turn naming a role and two linking names ("X says her husband Y is staying with
  them") still one of a described person's pair (``RELATIONS_NO_ACT`` off: before round twenty-six);
* ``nojoint`` — a question naming two or more participants gets no pair of their turns joined by a
  rare word (``JOINT_PAIRS`` off: before round twenty-seven); ``joint10`` / ``joint32`` — with that
  many of their best turns followed (``JOINT_SEEDS``, 20 shipped);
* ``nostate`` — a question asking for a state at the time of an event ("Which city was Samuel living in
  when he went to …") gets no pair of the asked person's event turn and state turn (``STATE_PAIRS`` off:
  before round twenty-eight); ``state1`` / ``state5`` — that many state candidates (``STATE_CANDIDATES``, 3
  shipped), ``state8``; ``events1`` — the event's candidates only the person's best turn (``STATE_EVENTS``, 3
  shipped); ``nearest`` — the state candidate nearest the head, not the last told before the event
  (``STATE_BEFORE`` off); ``anyturn`` — any of the person's turns a state's candidate, a question or small
  talk too (``TOLD_ONLY`` off); ``told40`` / ``told25`` — that share of the person's most informative turns
  the state's candidates (``TOLD_SHARE``, 1/3 shipped, 1/2 before round twenty-nine); ``told33`` the shipped one;
* ``subjectslot`` — a link through a name opening its seed's clause may stand among the best five like any
  (``SUBJECT_UNSLOTTED`` off: before round thirty-one); ``sentenceopen`` — only a name opening its seed's
  sentence (not a clause after a comma or dash) loses the slot (``CLAUSE_MARKS``);
* ``noroleslot`` — a link into a turn introducing its person by a role word ("My brother Rohan …") loses its slot like
  any subject link (``ROLE_SLOTTED`` off); ``roleany`` — it keeps it whatever the question asks (``ROLE_ASKED`` off);
* ``nonow`` — "now" alone no change word in English, 现在 / 如今 one in Chinese with no gate (before round thirty-one's
  second part); ``nowall`` / ``now3`` — "now" a change word, the gate off / the other session's turn among the
  person's three nearest (``NOW_NEAR``, 2 shipped);
* ``base31`` — both of round thirty-one's second part off;
* ``timenames`` — a word of time ("早上", "昨晚", "yesterday") may link as a name (``TIME_FREE`` off: before round
  thirty-two); ``nodescribedlater`` — a described afterwards question keeps the described person's pairs
  (``DESCRIBED_LATER`` off: before round thirty-two); ``base32`` — both off; ``afterthat`` — "after that injury"
  asks what came after, as "after that?" does (before round thirty-two);
* ``roles32`` — kin, friends and co-workers the only roles a question asks through ("the mentor of …", "…的房东" ask
  of the described person alone: before round thirty-three); ``bare32`` — a Chinese description closed only by
  "的…人" / "的那位", not by "…屋顶那人" (before round thirty-three); ``pronounnames`` — a pronoun ("Nobody",
  "有人") may link as a name (``PRONOUN_FREE`` off); ``thingnames`` — a CJK term written as a thing ("那个新闻",
  "新闻里") may link as a name (``THINGS_UNNAMED`` off); ``statesafter`` — "受伤之后" asks what came after (no
  ``_STATE_ZH``); ``endsrepeat`` — a chain's two ends may say the same thing of two people (``CHAIN_ENDS_DIFFER`` off);
  ``discoursenames`` — "听说", "Apparently" may link as names (``DISCOURSE_FREE`` off); ``names32`` — the four
  rules of names and "之后" off; ``base33`` — every rule of round thirty-three off (before it);
* ``default`` — the code as it is.

    .venv/bin/python bench/expand_ab.py --sets hard-en,hard-zh,conv-en,conv-zh --half both
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402
from indirect_ab import gold_table, interleaved, latency  # noqa: E402

from hindbrain.recall import expand, indirect  # noqa: E402


def _never(*_) -> bool:
    return False


# arm → the expansion's switches it sets (the rest keep their defaults)
# the sixth pass's switches off: the arms before it keep their meaning
SIXTH = {"CLAUSE_SEEDS": 0, "IN_PERSON": False, "PERSON_VIEWS": False, "CHAINS": False}
BEFORE = {**SIXTH, "GRAMMAR_FREE": False, "SAME_WORDS_SKIPPED": False, "PAIRS": False, "LINK_FOUND": False,
          "CLAUSE_VIEWS": False}
# before round twenty-four: "…的那位" / "…的那名" with no noun after them described nobody
_PERSON_ZH = "的(?:那个|那位|那名)?(?:人|朋友|同事|邻居|亲戚|室友|家伙)"
_ROLES_ZH = indirect._KIN_ZH.removesuffix("|另一半|伴侣|对象")
_AFTER_ZH = "(?:的|[^\\w]|$|是|会|现在|后来|最近|开始|在|做|去|搬|学|养|玩|喜欢)"
NAWEI = {"_DESCRIBED_ZH": re.compile(_PERSON_ZH + _AFTER_ZH),
         "_RELATIVE_ZH": re.compile(_PERSON_ZH), "_RELATIVE_OF_ZH": re.compile(_PERSON_ZH + f"的(?:{_ROLES_ZH})")}
# before round twenty-four: "the person responsible for / in charge of …" described nobody
_DESCRIBED_EN = indirect._DESCRIBED_EN.pattern.replace(f"|{indirect._REDUCED_EN}", "")
REDUCED = {"_DESCRIBED_EN": re.compile(_DESCRIBED_EN, re.IGNORECASE),
           "_RELATIVE_EN": re.compile(r"\b(?:who|whoever|whom|that)\b", re.IGNORECASE),
           "_RELATIVE_OF_EN": re.compile(rf"\b(?:{indirect._ROLES_EN})s?\s+of\s+(?:{_DESCRIBED_EN})", re.IGNORECASE)}
# before round thirty-three: kin, friends and co-workers the only roles asked through ("the mentor of …" asked of
# the described person alone), and a Chinese description closed only by "的…人" / "的那位" ("…屋顶那人的上司" none)
_OLD_PERSON_ZH = "的(?:(?:那个|那位|那名)?(?:人|朋友|同事|邻居|亲戚|室友|家伙)|那位|那名)"
_OLD_FOLLOW_ZH = "(?:的|[^\\w]|$|是|会|现在|后来|最近|开始|在|做|去|搬|学|养|玩|喜欢)"


def _roles(en: str, zh: str, person_zh: str = indirect._PERSON_ZH) -> dict:
    """The indirect module's patterns built from these role words (``_ROLES_EN``, ``_ROLES_ZH``)."""
    return {"_ROLES_EN": en, "_ROLES_ZH": zh,
            "_RELATIVE_OF_EN": re.compile(rf"\b(?:{en})s?\s+of\s+(?:{indirect._DESCRIBED_EN.pattern})", re.IGNORECASE),
            "_RELATIVE_OF_ZH": re.compile(rf"{person_zh}的(?:{zh})"),
            "_ROLE": re.compile(rf"\b(?:{en})s?\b|{zh}", re.IGNORECASE),
            "_ASKS_ROLE": re.compile(rf"(?:'s|\b(?:his|her|their|my|your))\s+(?:\w+\s+)?({en})s?\b|的({zh})",
                                     re.IGNORECASE)}


ROLES32 = _roles(indirect._KIN_EN, indirect._KIN_ZH)
BARE32 = {"_DESCRIBED_ZH": re.compile(r"的(?:那个|那位|那名)?(?:人|朋友|同事|邻居|亲戚|室友|家伙)" + _OLD_FOLLOW_ZH
                                      + "|的(?:那位|那名)"),
          "_RELATIVE_ZH": re.compile(_OLD_PERSON_ZH),
          "_RELATIVE_OF_ZH": re.compile(rf"{_OLD_PERSON_ZH}的(?:{indirect._ROLES_ZH})")}
# before round thirty-three: pronouns, sentence adverbs and CJK things link as names, "受伤之后" asks what came after
NAMES32 = {"PRONOUN_FREE": False, "DISCOURSE_FREE": False, "THINGS_UNNAMED": False, "_STATE_ZH": re.compile(r"(?!)")}
BASE33_QUESTIONS = {**ROLES32, **BARE32, "_RELATIVE_OF_ZH": re.compile(rf"{_OLD_PERSON_ZH}的(?:{indirect._KIN_ZH})")}
# before round thirty-one's second part: "now" no change word in English, 现在 / 如今 one in Chinese, ungated
NOW_BEFORE = {"NOW_PAIRS": False, "_CHANGE_ZH": re.compile(r"变|前后|以前|之前|如今|现在|后来|换")}
ARMS = {"inside": {"_always_capitalised": _never, "OPENING_NAMES": False, "EXPAND_SLOTS": None, **BEFORE},
        "opening": {"EXPAND_SLOTS": None, **BEFORE},
        "slots1": {"EXPAND_SLOTS": 1, **BEFORE}, "slots2": {"EXPAND_SLOTS": 2, **BEFORE},
        "slots3": {"EXPAND_SLOTS": 3, **BEFORE},
        "grammar": {**SIXTH, "SAME_WORDS_SKIPPED": False, "PAIRS": False, "LINK_FOUND": False, "CLAUSE_VIEWS": False},
        "same": {**SIXTH, "GRAMMAR_FREE": False, "PAIRS": False, "LINK_FOUND": False, "CLAUSE_VIEWS": False},
        "nopairs": {**SIXTH, "PAIRS": False, "LINK_FOUND": False, "CLAUSE_VIEWS": False},
        "pairs": {**SIXTH, "LINK_FOUND": False, "CLAUSE_VIEWS": False},
        "noclause": {**SIXTH, "CLAUSE_VIEWS": False},
        "default": {},
        "noseeds": SIXTH,
        "person": {"PERSON_VIEWS": False, "CHAINS": False},
        "nochains": {"CHAINS": False},
        "openers": {"NAME_INSIDE": False},
        "slots0": {"EXPAND_SLOTS": 0}, "slots2now": {"EXPAND_SLOTS": 2},
        "unlimited": {"EXPAND_SLOTS": None},
        "calendar": {"CALENDAR_FREE": False}, "lowercase": {"NAME_WRITTEN": False},
        "relation_acts": {"RELATIONS_NO_ACT": False},
        "nojoint": {"JOINT_PAIRS": False}, "joint10": {"JOINT_SEEDS": 10}, "joint32": {"JOINT_SEEDS": 32},
        "nostate": {"STATE_PAIRS": False}, "state1": {"STATE_CANDIDATES": 1}, "state5": {"STATE_CANDIDATES": 5},
        "events1": {"STATE_EVENTS": 1}, "state8": {"STATE_CANDIDATES": 8}, "nearest": {"STATE_BEFORE": False},
        "anyturn": {"TOLD_ONLY": False}, "told33": {"TOLD_SHARE": 1 / 3}, "told40": {"TOLD_SHARE": 0.4},
        "told25": {"TOLD_SHARE": 0.25},
        "shared1": {"JOINT_SHARED": 1}, "shared3": {"JOINT_SHARED": 3},
        "nawei": NAWEI, "reduced": REDUCED, "nolater": {"LATER_PAIRS": False},
        "nochange": {"CHANGE_PAIRS": False}, "subjectslot": {"SUBJECT_UNSLOTTED": False},
        "sentenceopen": {"CLAUSE_MARKS": expand._OPENERS + ".\"'"},
        "noroleslot": {"ROLE_SLOTTED": False}, "roleany": {"ROLE_ASKED": False},
        "nonow": NOW_BEFORE, "nowall": {"NOW_NEAR": None}, "now3": {"NOW_NEAR": 3},
        "base31": {"ROLE_SLOTTED": False, **NOW_BEFORE},
        "timenames": {"TIME_FREE": False}, "nodescribedlater": {"DESCRIBED_LATER": False},
        "base32": {"TIME_FREE": False, "DESCRIBED_LATER": False},
        "afterthat": {"_AFTERWARDS_EN": re.compile(r"\b(?:later|afterwards?|after\s+that|next|end(?:ed)?\s+up|"
                                                   r"became\s+of|since\s+then)\b", re.IGNORECASE)},
        "roles32": ROLES32, "bare32": BARE32, "pronounnames": {"PRONOUN_FREE": False},
        "thingnames": {"THINGS_UNNAMED": False}, "statesafter": {"_STATE_ZH": re.compile(r"(?!)")},
        "endsrepeat": {"CHAIN_ENDS_DIFFER": False}, "discoursenames": {"DISCOURSE_FREE": False},
        "names32": NAMES32, "base33": {**BASE33_QUESTIONS, **NAMES32, "CHAIN_ENDS_DIFFER": False},
        "sum": {"BY_CLAUSE": 0.0}, "clause10": {"BY_CLAUSE": 0.1}, "clause25": {"BY_CLAUSE": 0.25},
        "clause50": {"BY_CLAUSE": 0.5}, "clause100": {"BY_CLAUSE": 1.0}}
# the switches of recall.indirect; the rest are recall.expand's
IN_INDIRECT = {"CLAUSE_VIEWS", "IN_PERSON", "_CHANGE_ZH", "_AFTERWARDS_EN", "_STATE_ZH", *NAWEI,
               *REDUCED, *BASE33_QUESTIONS}
DEFAULTS = {name: getattr(indirect if name in IN_INDIRECT else expand, name)
            for name in {n for arm in ARMS.values() for n in arm}}


def set_arm(arm: str) -> None:
    def named():
        return expand.GRAMMAR_FREE, expand.CALENDAR_FREE, expand.TIME_FREE, expand.PRONOUN_FREE, expand.DISCOURSE_FREE
    before = named()
    for name, value in {**DEFAULTS, **ARMS[arm]}.items():
        setattr(indirect if name in IN_INDIRECT else expand, name, value)
    if before != named():
        expand._name_terms.cache_clear()  # the cached name terms depend on it


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="hard-en,hard-zh,conv-en,conv-zh")
    # "all": every question, for the tuning-only sets (hard2-en, hard2-zh)
    ap.add_argument("--half", default="both", choices=("tuning", "heldout", "both", "all"))
    ap.add_argument("--arms", default="inside,opening", help=f"comma-separated, of {list(ARMS)}")
    args = ap.parse_args()
    arms = args.arms.split(",")
    for name in args.sets.split(","):
        data = quality.SETS[name]()
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(data, Path(home))
            for half in (("tuning", "heldout") if args.half == "both" else (args.half,)):
                questions = data.half(half)
                got, took = interleaved(brain, data, questions, arms, set_arm)
                set_arm("default")
                gold_table(f"{name}, {half} half", questions, arms, got)
                latency(took)
            brain.close()


if __name__ == "__main__":
    main()
