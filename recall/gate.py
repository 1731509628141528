"""The cognitive gate between recall and the prompt (design.md §C4, design.md §seed-000-exp-1 and 7).

Candidates (best first) → context (what the recalling task perceived itself) → scope filter
→ conflict & invalidation check → source credibility → near-duplicate removal → selection
under the token budget by injection value, stopping each item that covers nothing new →
placement.
Pure: items in, (selected, cut) out; it reads the items' typed fields and writes only their verdict
fields (``GateItem.stage`` …), never the explanation dict ``why`` (the engine renders the verdict into it
afterwards, ``GateItem.explanation``). Every cut names its stage and reason; the recall
record keeps them, so a useful unit cut by the budget is visible as a learning signal.

Worth = Relevance × Confidence × Actionability × ScopeMatch orders the selection: ``k`` keeps
the worthiest, and the budget is filled in that order, skipping what does not fit. The seed's
injection value (worth ÷ token cost) is recorded with each selected item (``why.gate.value``);
filling the budget by it favoured short items over more relevant long ones (measured, see
``_within_budget``).

Coverage (design.md §seed-000: fill the gap, not the budget): a lexical hit whose only shared terms
with the query are function words or field labels ("system:", "action:") answers nothing
and is cut at the stage ``covered``; once a rule (a unit) is selected, a further rule whose
informative query terms are all held by the rules already selected adds no new answer to
this decision, only tokens, and is cut there too. Events are the timeline, not answers: several may tell one
story, so they are judged by value alone, and so is a rule the lexical channel did not find
(by meaning, through the graph), which has no terms to compare, or the next step of an action
chain (the graph linked it by entity and action). An event a selected unit rests on is cut as
``covered`` too: the unit is that event's lesson, already in the prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from hindbrain.recall import _scan
from hindbrain.recall.documents import Doc
from hindbrain.recall.provenance import quarantine_text
from hindbrain.recall.tokenize import tokens

MIN_CREDIBILITY = 0.3  # below it a unit is still in the holding area (design.md §seed-001-4.1)
# Jaccard similarity of token sets from which the weaker item is dropped: the write hygiene's
# "the same event" (learning.learner.MERGE_SIMILARITY). At 0.8, distinct memories that share a
# template ("won first place in the 100 m" / "… in the long jump") were cut (docs/recall-quality.md).
NEAR_DUPLICATE = 0.9
# With no k, a rule scoring under this share of the best rule's relevance is another decision's
# rule (another system, another action): it costs tokens and invites the wrong option; and in a
# decision's recall (one with a trigger) an event under this share of the best candidate's is
# about another decision. The next step of an action chain (``chained``) is exempt: the graph,
# not the words, found it; so is a unit of the recall's user (``personal``).
WEAK = 0.5
CHAIN_SUPPORT = 0.2  # a graph link's support (its seed's relevance × link strength) that makes a chain
MEANING_FLOOR = 0.5  # semantic score from which an item counts as found by meaning (fused: upper half)
# How directly an item tells the agent what to do: a rule, a belief, then events by kind.
ACTIONABILITY = {"fragment": 1.0, "belief": 0.9, "anomaly": 0.6, "outcome": 0.6, "feedback": 0.5, "action": 0.5,
                 "observation": 0.4, "message": 0.4}
# Statuses the learner gave that keep a unit (or event) out of the prompt, and why.
NOT_INJECTED = {"invalid": "invalidated: no longer true", "rejected": "rejected by the write gate",
                "absorbed": "absorbed into the same lesson already known", "merged": "merged into a newer event",
                "held": "in the holding area until more evidence arrives",
                "superseded": "superseded by a newer statement of the same user (see explain)",
                "outdated": "outdated: this option failed later where it used to succeed (see explain)",
                "archived": "archived: over capacity, of the lowest value (kept in the log and the views)"}
# Placement (design.md §C7): who the agent is (approved traits) → active knowledge → experience
# rules → the timeline.
PLACEMENT = {"identity": 0, "knowledge": 1, "experience": 2, "episodic": 3}


@dataclass
class GateItem:
    """A candidate as the gate judges it. The gate reads the typed fields only, never ``why`` (the
    explanation the engine builds, design.md §issue-29): changing an explanation cannot change a recall. Its
    verdict lands in ``stage`` / ``reason`` / ``value`` / ``placement``; ``explanation()`` renders it."""

    doc: Doc
    relevance: float
    scope_match: float
    why: dict = field(default_factory=dict)
    matched: frozenset | None = None  # the informative query terms a lexical hit holds (None: found otherwise)
    semantic: float = 0.0  # the semantic channel's score (0..1)
    chain: float = 0.0  # the graph's chain support: a seed's relevance × link strength (0 when not chained)
    stage: str | None = None  # the gate's verdict: "selected" or the stage that cut it
    reason: str = ""
    value: float | None = None  # injection value of a selected item
    placement: int | None = None

    def explanation(self) -> dict:
        """The gate's verdict as ``why["gate"]`` shows it (built after the decision, from it)."""
        if self.stage == "selected":
            return {"stage": "selected", "value": round(self.value or 0.0, 6),
                    **({"placement": self.placement} if self.placement is not None else {})}
        return {"stage": self.stage, "reason": self.reason}

    @property
    def id(self) -> str:
        return self.doc.id

    @cached_property
    def words(self) -> frozenset[str]:
        """The item's token set, for the duplicate check and its explanation (``word_set``)."""
        return word_set(self.doc.text)


WORD_SETS = 8192  # texts whose token sets are kept: not on every document (~1 GB at 1M units)


@lru_cache(maxsize=WORD_SETS)
def word_set(text: str) -> frozenset[str]:
    """A text's token set, the last ``WORD_SETS`` texts' kept: a fleet's recalls bring back the
    same documents again and again, and tokenising a pool cost ~0.4 ms a recall."""
    return frozenset(tokens(text))


def actionability(doc: Doc) -> float:
    return ACTIONABILITY["fragment"] if doc.kind == "fragment" else ACTIONABILITY.get(doc.event_kind or "", 0.4)


def injection_value(item: GateItem) -> float:
    doc = item.doc
    return max(item.relevance, 0.0) * doc.confidence * actionability(doc) * item.scope_match / max(doc.tokens, 1)


# Scope keys that make an item personal: only a recall for that user (or that conversation:
# a preference stated by the role "user", ``learning.extract.person_scope``) may see it.
PERSONAL = ("user", "session")


def scope_conflict(item_scope: dict, recall_scope: dict) -> str | None:
    """A scope coordinate both sides name with different values (e.g. env=prod vs test), or
    a personal item (a user's preference) in a recall that is for no user at all."""
    for key, value in item_scope.items():
        if key in recall_scope and recall_scope[key] != value:
            if key in PERSONAL:  # whose it is stays theirs: the cut list reaches another user's agent
                return f"personal to another {key}: this recall is for {key}={recall_scope[key]}"
            return f"scope {key}={value} does not match {key}={recall_scope[key]}"
        if key in PERSONAL and key not in recall_scope:
            return f"personal to a {key}: this recall is for no {key}"
    return None


def _without_compressed_events(selected: list[GateItem], drop) -> list[GateItem]:
    """An event a selected unit rests on is already in the prompt, compressed: the unit is
    that trajectory's lesson (design.md §seed-000-exp-2), so the raw event is cut as ``covered``. So is
    another telling of the same lesson: an event (not an anomaly, which may be evidence
    against the unit) of the unit's own system and action."""
    units = [item for item in selected if item.doc.kind == "fragment"]
    compressed = {eid: item.id for item in units for eid in item.doc.event_ids}
    lessons: dict[tuple[str, str], str] = {}
    for item in units:
        for key in _system_actions(item.doc):
            lessons.setdefault(key, item.id)
    kept = []
    for item in selected:
        doc = item.doc
        told = next((lessons[key] for key in _system_actions(doc) if key in lessons), None) \
            if doc.kind == "event" and doc.event_kind != "anomaly" else None
        if doc.kind == "event" and item.id in compressed:
            drop(item, "covered", f"compressed into {compressed[item.id]}, which is selected")
        elif told:
            drop(item, "covered", f"the same system and action as {told}, which is selected: its lesson")
        else:
            kept.append(item)
    return kept


ANSWERING = ("verified", "stable")  # a rule outcomes confirmed: it answers its situation


def answer_to(items: list[GateItem], entity: str) -> GateItem | None:
    """The worthiest verified rule of the situation's system (``entity``: its ``@entity:`` link), not a
    user's preference: the answer to this decision, or None."""
    return next((i for i in items if i.doc.kind == "fragment" and i.doc.status in ANSWERING and entity in i.doc.links
                 and not personal(i)), None)


def stop_at_answer(items: list[GateItem], system: str, drop) -> list[GateItem]:
    """design.md §issue-29: once a verified rule answers the situation, the rest of the pack only costs tokens
    and invites the wrong option. Cut (stage ``answered``, the reason naming the answer): a rule of
    another system (its condition is about something else), another rule of the same action (it
    restates the answer), an event of another action or another system, and a failure report of an
    option the answer already names (it summarises them). Kept: the answer, the user's own items,
    rules of the same system that do something else (a next step), and a failure of the answer's
    own action (evidence against it, which change detection needs in sight)."""
    entity = "@entity:" + " ".join(system.lower().split())
    answer = answer_to(items, entity)
    if answer is None:
        return summarised_failures(items, entity, drop)
    doc = answer.doc
    actions = actions_of(doc)
    said = word_set(doc.text)
    kept = []
    for item in items:
        why = None if item is answer or personal(item) else _beside_answer(item.doc, entity, actions, said)
        if why:
            drop(item, "answered", f"{why}; {answer.id} answers {system}")
        else:
            kept.append(item)
    return kept


def summarised_failures(items: list[GateItem], entity: str, drop) -> list[GateItem]:
    """With no verified answer yet, a sound rule of the system (a candidate) already names the options that
    failed as "not: …": a failure report of such an option, not of the rule's own action, says it again
    (stage ``answered``). Everything else stays until outcomes verify the rule."""
    rules = [i for i in items if i.doc.kind == "fragment" and i.doc.status != "reviewing" and not personal(i)
             and entity in i.doc.links]
    if not rules:
        return items
    rules_doing = [(r, actions_of(r.doc)) for r in rules]
    kept = []
    for item in items:
        doc = item.doc
        own = actions_of(doc)
        by = next((r for r, does in rules_doing if doc.event_kind == "anomaly" and entity in doc.links and own
                   and not own & does
                   and any(word_set(a[8:]) and word_set(a[8:]) <= word_set(r.doc.text) for a in own)), None)
        if by is None:
            kept.append(item)
        else:
            drop(item, "answered", f"a failure {by.id} names already (not: …)")
    return kept


def own_system_first(items: list[GateItem], system: str, drop) -> list[GateItem]:
    """design.md §issue-29, round two: with no verified answer, the situation's own system may still have memory
    (a candidate rule, its failures and successes). Then what other systems did is no answer here: its
    options are another system's, it costs tokens and, read as advice, invites the wrong option. Cut
    (stage ``answered``) an event whose entities name only other systems, and a rule of another
    system once a rule of this one is in the pack. With nothing of this system, the rest stays: an
    analogy is all there is for a system never seen (a look-alike); and the analogy is a lesson when there
    is one: once another system's rule is in the pack, other systems' events (the raw story that rule, or
    none, was drawn from) are cut too, the rule says what carries over in one line."""
    entity = "@entity:" + " ".join(system.lower().split())

    def elsewhere(item: GateItem) -> bool:
        entities = {t for t in item.doc.links if t.startswith("@entity:")}
        return bool(entities) and entity not in entities and not personal(item)

    own = [i for i in items if not elsewhere(i) and entity in i.doc.links]
    if not own:
        lesson = next((i.id for i in items if i.doc.kind == "fragment" and elsewhere(i)), None)
        if lesson is None:
            return items
        kept = []
        for item in items:
            if elsewhere(item) and item.doc.kind == "event" and item.doc.event_kind not in ("message", "feedback"):
                drop(item, "answered", f"another system's event; {lesson}, a lesson of another system, is the "
                                       f"analogy for {system}")
            else:
                kept.append(item)
        return kept
    # What this system's own memory says works (a rule, or a report that an option worked here) makes an
    # analogy from another system redundant; its failures alone leave the analogy standing.
    own_rule = next((i.id for i in own if i.doc.kind == "fragment" or (i.doc.report and i.doc.event_kind != "anomaly"
                                                                       and i.doc.event_kind != "outcome")), None)
    kept = []
    for item in items:
        if not elsewhere(item) or (item.doc.kind == "fragment" and own_rule is None) \
                or item.doc.event_kind in ("message", "feedback"):
            kept.append(item)
        else:
            drop(item, "answered", f"about another system; {own[0].id} is {system}'s own memory")
    return kept


def stop_at_person(items: list[GateItem], user: str, drop) -> list[GateItem]:
    """design.md §issue-29: a reply to ``user`` (no situation) whose own stated preferences are in the pack: those
    answer how to work for them. The rest is someone else's conversation or the fleet's work, and the
    user's own questions hold no answer (``recall.asking``): cut at the stage ``answered``, naming the
    preference. Kept: the user's units and what the user stated."""
    answer = next((i for i in items if personal(i) and own_words(i.doc, user)), None)
    if answer is None:
        return items
    kept = []
    for item in items:
        doc = item.doc
        if item is answer or (personal(item) and own_words(doc, user)):
            kept.append(item)
        elif not own_words(doc, user):
            drop(item, "answered", f"not {user}'s own: {answer.id}, {user}'s stated preference, answers how to "
                                   f"work for {user}")
        elif doc.asks >= 0.5:
            drop(item, "answered", f"{user}'s own question holds no answer; {answer.id} is {user}'s preference")
        else:
            kept.append(item)
    return kept


def _beside_answer(doc: Doc, entity: str, actions: set[str], said: frozenset[str]) -> str | None:
    """Why ``doc`` adds nothing once the answer (of ``entity``, doing ``actions``, saying ``said``) is
    selected, or None when it may."""
    entities = {t for t in doc.links if t.startswith("@entity:")}
    own = actions_of(doc)
    if entities and entity not in entities:
        return f"about another system ({', '.join(sorted(e[8:] for e in entities))[:60]})"
    if doc.kind == "fragment":
        return "restates the answer's action" if own & actions else None
    if doc.event_kind in ("message", "feedback") or not own:
        return None  # what someone said, or an event that names no action: not judged here
    if own & actions:
        return None if doc.event_kind == "anomaly" else "a success of the answer's own action: its evidence"
    if doc.event_kind == "anomaly":
        options = [frozenset(word_set(a[8:])) for a in own]
        return "a failure the answer summarises" if any(o and o <= said for o in options) else \
            "a failure of another option, which the answer replaces"
    return "an event of another action"


def actions_of(doc: Doc) -> set[str]:
    """The ``@action:`` links of a document: what it says was done."""
    return {t for t in doc.links if t.startswith("@action:")}


def _system_actions(doc: Doc) -> list[tuple[str, str]]:
    """The (entity, action) link pairs a document holds: the lessons it tells."""
    entities = [t for t in doc.links if t.startswith("@entity:")]
    actions = [t for t in doc.links if t.startswith("@action:")]
    return [(e, a) for e in entities for a in actions]


def in_context(doc: Doc, task: str | None) -> bool:
    """An event the recalling task perceived itself: already in the agent's context."""
    return task is not None and doc.kind == "event" and doc.task == task


def chained(item: GateItem) -> bool:
    """Whether the graph reached the item through a shared entity *and* action from a seed
    the search found well (support ≥ ``CHAIN_SUPPORT``, ``why.graph.chain``): the next step of
    a chain (design.md §seed-000's action chain) is a new answer even on the same query terms; a link
    from a seed that only matched field labels ("system:") leads to another system's story,
    not the next step."""
    return item.chain >= CHAIN_SUPPORT


def personal(item: GateItem) -> bool:
    """A unit of this recall's user (the scope stage cut every other user's): each of a user's
    stated preferences applies to them, none is a rival that another one covers."""
    return item.doc.kind == "fragment" and any(key in item.doc.scope for key in PERSONAL)


def near_duplicate(a: frozenset[str], b: frozenset[str]) -> bool:
    """The Jaccard similarity of two token sets is at least ``NEAR_DUPLICATE`` (two empty sets: 1)."""
    return first_near_duplicate(a, [b]) == 0


def first_near_duplicate(words: frozenset[str], kept: list[frozenset[str]]) -> int:
    """The place in ``kept`` of the first token set ``near_duplicate`` of ``words``, or -1; in one C call
    (``_scan.first_near_duplicate``): a pool's ~170 pairs were a Python call and four ``len`` each.
    Sizes first: Jaccard is at most min / max of the sizes, so most pairs are settled by two lengths,
    and the gate asks only about the pairs it reaches (an item against the ones kept before it)
    instead of building a pool's whole similarity matrix. The margin keeps a ratio at the threshold
    for the exact test, whose ratio is the same float division as ever."""
    return _scan.first_near_duplicate(words, kept, NEAR_DUPLICATE - 0.01, NEAR_DUPLICATE)


def gate(items: list[GateItem], recall_scope: dict, budget_tokens: int, k: int | None,
         reserved_tokens: int = 0, task: str | None = None, trigger: str | None = None,
         user: str | None = None, quarantine: bool = True, system: str | None = None
         ) -> tuple[list[GateItem], list[dict]]:
    """Run the stages; returns the placed selection and the cuts ``{"id", "stage", "reason"}``.
    ``reserved_tokens`` of the budget are already taken (by the belief briefing); what the
    recalling ``task`` perceived itself is in the agent's context already (stage ``context``);
    a ``task_start`` with no ``k`` draws on lessons, not on other conversations' turns
    (``other_conversation``), unless they are the recall's ``user``'s own; a user's
    instruction-like words (``Doc.quarantine``) reach only that user's own recalls, and so does
    a unit steering money or the agent until independent agents verified it (``Doc.fleet``)
    (``quarantine=False``: the defence off, for measuring it). With the situation's ``system`` and no
    ``k``, a verified rule of that system is the answer and the gate stops there (``stop_at_answer``)."""
    cut: list[dict] = []

    def drop(item: GateItem, stage: str, reason: str) -> None:
        cut.append({"id": item.id, "stage": stage, "reason": reason})
        item.stage, item.reason = stage, reason

    newest = newest_reports(items)
    kept: list[GateItem] = []
    kept_ids: set[str] = set()
    kept_words: list[frozenset[str]] = []  # the kept ones' token sets, for the duplicate check
    # A unit in review after failures gives way, in a conflict or as a near-duplicate, to the
    # sound unit beside it (the new lesson that contradicts it usually ranks below it on words).
    for at in sorted(range(len(items)), key=lambda n: items[n].doc.status == "reviewing"):
        item = items[at]
        doc = item.doc
        if in_context(doc, task):
            drop(item, "context", "perceived in this task: already in the agent's context")
        elif quarantine and doc.quarantine and not own_words(doc, user) and not doc.fleet:
            drop(item, "quarantine", f"quarantined: {quarantine_text(doc.quarantine, another_person=True)}; kept in "
                                     f"the log and the views, never "
                                     f"injected into another user's task"
                                     + (" until independent agents verify it" if doc.kind == "fragment" else ""))
        elif trigger == "task_start" and k is None and other_conversation(doc, user):
            drop(item, "covered", "another conversation's turn: a task start draws on lessons (rules, beliefs, "
                                  "what was done and how it went), not on what others said")
        elif reason := scope_conflict(doc.scope, recall_scope):
            drop(item, "scope", reason)
        elif doc.status in NOT_INJECTED:
            drop(item, "invalidation", NOT_INJECTED[doc.status])
        elif doc.report and newest[doc.report].id != item.id:
            drop(item, "conflict", f"an older report on the same option; the newest, {newest[doc.report].id}, says "
                                   "how it fares now")
        elif (clash := sorted(doc.conflicts & kept_ids)) and not personal(item):  # a user's statements all stand
            drop(item, "conflict", f"contradicts {clash[0]}, which ranks higher here")
        elif doc.confidence < MIN_CREDIBILITY:
            drop(item, "credibility", f"confidence {doc.confidence:.2f} is below {MIN_CREDIBILITY}")
        else:
            twin = first_near_duplicate(item.words, kept_words)
            if twin >= 0:
                drop(item, "near_duplicate", f"near-duplicate of {kept[twin].id}")
                continue
            kept.append(item)
            kept_ids.add(item.id)
            kept_words.append(item.words)
    # How well the best candidate fits this decision (the task's own events aside); a plain
    # lookup (no trigger) has no decision to fit: its events are ranked, not judged.
    best = max((i.relevance for i in items if not in_context(i.doc, task)), default=0.0) if trigger else 0.0
    return _within_budget(kept, budget_tokens - reserved_tokens, k, drop, best, system, user, trigger), cut


def newest_reports(items: list[GateItem]) -> dict[tuple, Doc]:
    """Per option reported on (``Doc.report``: a system, who, what, where), its newest report among the
    candidates (design.md §issue-29): "smtp relay worked" from before a change and "smtp relay failed" after
    it are not two opinions, the newer says how the option fares now. Not a verdict on the older one: if
    the failure was a flake, the next success is newer again."""
    newest: dict[tuple, Doc] = {}
    for item in items:
        doc = item.doc
        if doc.report and (doc.report not in newest or doc.ts_us > newest[doc.report].ts_us):
            newest[doc.report] = doc
    return newest


def own_words(doc: Doc, user: str | None) -> bool:
    """Whether the recall's ``user`` said it (or it is scoped to them)."""
    return user is not None and (doc.speaker == user or doc.scope.get("user") == user)


def other_conversation(doc: Doc, user: str | None) -> bool:
    """A dialogue turn (``message`` or ``feedback``) that is not the recall's user's own."""
    if doc.kind != "event" or doc.event_kind not in ("message", "feedback"):
        return False
    return user is None or (doc.speaker != user and doc.scope.get("user") != user)


def worth(item: GateItem) -> float:
    """What the item is worth to this decision, whatever it costs: relevance × confidence ×
    actionability × scope match. ``k`` keeps the ``k`` worthiest; the budget then buys by
    worth per token (``injection_value``)."""
    doc = item.doc
    return max(item.relevance, 0.0) * doc.confidence * actionability(doc) * item.scope_match


def found_by_meaning(item: GateItem) -> bool:
    """The semantic channel ranks the item in the upper half of this recall's candidates."""
    return item.semantic >= MEANING_FLOOR


def judged_on_words(item: GateItem, trigger: str | None) -> bool:
    """Whether the function-words cut judges ``item``: a rule always (an answer that matched only on "the" answers
    nothing), an event only in a decision's recall (one with a ``trigger``). A plain lookup has no decision to fit:
    its events are ranked by the fusion, not judged, as the relevance cut already has it. A turn that tells the
    answer in other words than the question shares only function words with it, and the semantic channel's
    min-max scale alone put such turns under the floor while the fusion ranked them second to sixth
    (docs/recall-quality.md, "The gate's cuts of evidence, round thirty")."""
    return item.doc.kind == "fragment" or trigger is not None


def _within_budget(kept: list[GateItem], budget: int, k: int | None, drop, best: float = 0.0,
                   system: str | None = None, user: str | None = None, trigger: str | None = None
                   ) -> list[GateItem]:
    eligible, covered, rules = [], set(), 0
    best_rule = max((i.relevance for i in kept if i.doc.kind == "fragment"), default=0.0)
    # A rule in review after failures gives way to any sound rule for this decision, even one
    # that ranks below it: its own words may fit the situation better, it still failed here.
    by_worth = sorted(kept, key=worth, reverse=True)
    sound = next((i.id for i in by_worth if i.doc.kind == "fragment" and i.doc.status != "reviewing"
                  and (k is not None or i.relevance >= WEAK * best_rule)), None)
    for item in by_worth:
        best_of, top = ("rule", best_rule) if item.doc.kind == "fragment" else ("candidate", best)
        if k is not None and len(eligible) >= k:
            drop(item, "budget", f"beyond k={k}")
        elif k is None and item.relevance < WEAK * top and not chained(item) and not personal(item):
            drop(item, "covered", f"its relevance {item.relevance:.2f} is under {WEAK:.0%} of the best {best_of}'s "
                                  f"({top:.2f}): not about this decision")
        elif item.matched is not None and not item.matched and not found_by_meaning(item) \
                and judged_on_words(item, trigger):
            drop(item, "covered", "it matched the query on function words and field labels only, and its meaning "
                                  "is not close either")
        elif sound and item.doc.kind == "fragment" and item.doc.status == "reviewing":
            drop(item, "covered", f"in review after failures, and {sound} answers this decision")
        elif rules and item.doc.kind == "fragment" and item.matched is not None and item.matched <= covered \
                and not chained(item) and not personal(item):
            drop(item, "covered", f"its query terms ({', '.join(sorted(item.matched)[:5])}) are covered by the "
                                  f"rules already selected")
        else:
            eligible.append(item)
            if item.doc.kind == "fragment":
                covered |= item.matched or frozenset()
                rules += 1
    if system and k is None:
        eligible = stop_at_answer(eligible, system, drop)
        eligible = own_system_first(eligible, system, drop)
    elif user and k is None and not trigger:  # a reply in a conversation, not a decision of the work
        eligible = stop_at_person(eligible, user, drop)
    # The budget is filled in worth order, an item that does not fit is skipped and smaller ones
    # after it may still fit. (By value per token, the seed's formula, short items displaced
    # more relevant long ones whenever the budget bound: MADial at the default budget lost 1-6
    # points of R@5 and 2-6 of R@10, docs/recall-quality.md; the simulator was unchanged.)
    selected, used = [], 0
    for item in eligible:
        cost = item.doc.tokens
        if used + cost > budget:
            drop(item, "budget", f"{cost} tokens do not fit the {max(budget - used, 0)} left of the budget")
        else:
            selected.append(item)
            used += cost
            item.stage, item.value = "selected", injection_value(item)
    selected = _without_compressed_events(selected, drop)
    selected.sort(key=lambda i: (PLACEMENT[i.doc.layer], -i.relevance))
    for n, item in enumerate(selected):
        item.placement = n
    return selected
