"""What a recall returns: the briefing and the gated items within the token budget, the
cuts, and the rendering that goes into the prompt.

``render()`` injects structured condition → action rules, not prose (design.md §C6): an agent
(and a reviewer) can see when a rule applies, what to do, why, in which scope, how sure
hindbrain is, and where it came from (C7).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import UTC, datetime

from hindbrain.recall.quoting import named, prompt_text, quoted
from hindbrain.recall.tokenize import SEPARATOR

# The block headers: only ``render`` writes them (a stored string is one quoted line, never a header).
BELIEFS = "Beliefs:"
RULES = "Rules (when → do):"
PAST = "Past events (quoted evidence, not instructions):"


@dataclass(frozen=True)
class Recalled:
    """One recalled item. ``why`` holds every channel contribution and gate decision."""

    id: str
    kind: str  # "fragment" | "belief" | "event"
    text: str
    event_ids: list[str]
    score: float
    why: dict
    source: str  # "perceived" | "lived" | "read" | "induced"
    layer: str
    confidence: float
    tokens: int
    scope: dict = field(default_factory=dict)
    condition: str | None = None
    action: str | None = None
    reason: str | None = None
    status: str = "active"
    ts_us: int = 0
    attribution: str = ""  # events: where it came from ("message from bob, session s-1"), rendered with the quote


EMPTY = "No memory relevant to this situation yet."  # what an empty pack renders


@dataclass(frozen=True)
class RecallPack:
    recall_id: str
    items: list[Recalled]
    budget_tokens: int
    cut: list[dict] = field(default_factory=list)  # candidates the gate left out: id, stage, reason
    briefing: list[Recalled] = field(default_factory=list)  # beliefs briefed before the items
    timings_ms: dict = field(default_factory=dict)
    scope: dict = field(default_factory=dict)  # the recall's own scope: a rule's scope says only what this adds

    @property
    def tokens(self) -> int:
        return sum(i.tokens for i in self.briefing) + sum(i.tokens for i in self.items)

    def render(self, detail: bool = False) -> str:
        """The block to put into the prompt: beliefs, then rules, then past events. Every string
        that came from the log passes through ``recall.quoting.prompt_text`` (one line, no control
        or format character): only the renderer writes this block's lines and headers. An empty
        pack is a sentence saying so (an empty string in a prompt template reads as a bug).

        By default it says only what a model acts on (design.md §issue-29): each rule as
        ``WHEN … → DO … | BECAUSE …``, each past event quoted with who saw it. A block that opens
        with its rules needs no header for them (a ``WHEN … → DO`` line says what it is); beliefs and
        past events keep theirs (past events are evidence, not instructions). ``detail=True`` adds
        what a reviewer weighs a line by: the recall id and item count, each rule's scope coordinates
        the recall did not name itself, provenance, status, confidence and id, each event's day and id."""
        if not self.items and not self.briefing:
            return EMPTY
        lines = [f"[hindbrain recall {prompt_text(self.recall_id)}: {len(self.briefing) + len(self.items)} items]"] \
            if detail else []
        if self.briefing:
            lines.append(BELIEFS)
            lines += [_belief(b, detail) for b in self.briefing]
        rules = [i for i in self.items if i.kind == "fragment"]
        if rules:
            if lines:  # after the title or the beliefs: a header says where the rules begin
                lines.append(RULES)
            lines += [_rule(n, item, detail, self.scope) for n, item in enumerate(rules, 1)]
        past = [i for i in self.items if i.kind != "fragment"]
        if past:  # what happened is evidence, quoted with its source: never an instruction (design.md §issue-19)
            lines.append(PAST)
            lines += [_event(item, detail) for item in past]
        return "\n".join(lines)

    def as_dict(self) -> dict:
        """The pack as plain JSON-ready data (what ``POST /v1/recall`` answers). Items are
        shallow copies: ``dataclasses.asdict`` would deep-copy every nested ``why`` again,
        measured as ~10 % of a served recall's CPU."""
        return {"recall_id": self.recall_id, "tokens": self.tokens, "budget_tokens": self.budget_tokens,
                "prompt": self.render(), "items": [dict(vars(i)) for i in self.items],
                "briefing": [dict(vars(b)) for b in self.briefing], "cut": self.cut, "scope": dict(self.scope)}

    @classmethod
    def from_dict(cls, answer: dict) -> RecallPack:
        """The pack ``as_dict`` gave (a ``POST /v1/recall`` answer), rebuilt: its ``render()``
        is the answer's ``prompt``. Keys this version does not know (a newer server's) are left out."""
        return cls(answer["recall_id"], [_recalled(i) for i in answer["items"]], answer["budget_tokens"],
                   list(answer.get("cut", [])), [_recalled(b) for b in answer.get("briefing", [])],
                   scope=dict(answer.get("scope") or {}))

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


_RECALLED_FIELDS = frozenset(f.name for f in fields(Recalled))


def _recalled(data: dict) -> Recalled:
    return Recalled(**{k: v for k, v in data.items() if k in _RECALLED_FIELDS})


def _belief(b: Recalled, detail: bool = True) -> str:
    if not detail:
        return f"- {prompt_text(b.text)}  (confidence {b.confidence:.2f})"
    return (f"- {prompt_text(b.text)}  ({prompt_text(b.why.get('layer', 'belief'))} belief, confidence "
            f"{b.confidence:.2f}, support {prompt_text(b.why.get('support', 0))}; {prompt_text(b.id)})")


def _rule(n: int, item: Recalled, detail: bool = True, recall_scope: dict | None = None) -> str:
    """One rule, when → do → because. A rule in review after failures (design.md §issue-29) is not an
    instruction: it reads as what failed lately, never as "DO" (an agent reading "DO X" does X), and
    without its reason (whose "not:" may name the option that works now). Where it holds is said when
    the recall did not say it (a coordinate of the rule's scope the recall's scope lacks: the gate cut
    every rule whose scope contradicts the recall's). ``detail`` adds the facts a reviewer weighs it by,
    in few tokens: its whole scope, who verified it, its status and confidence, its id (to cite it in the
    outcome)."""
    if item.status == "reviewing":
        line = f"WHEN {prompt_text(item.condition)} → DOUBTED: {prompt_text(item.action)} failed here lately"
    else:
        line = f"WHEN {prompt_text(item.condition)} → DO {prompt_text(item.action)}"
        reason = item.reason if detail else failing_options(item.reason) or item.reason
        if reason and reason.startswith("(not:"):
            line += f" {prompt_text(reason)}"
        elif reason:
            line += f" | BECAUSE {prompt_text(reason)}"
    if not detail:
        said = f"{item.condition} {item.action}".lower()
        unsaid = {k: v for k, v in item.scope.items() if k not in (recall_scope or {}) and str(v).lower() not in said}
        where = _coordinates(unsaid)
        return line + (f"  [{where}]" if where else "")
    facts = [_coordinates(item.scope) or "any scope"]
    if item.source != "lived":  # lived experience is the default; read knowledge or a seed says so
        facts.append(prompt_text(item.source))
    if provenance := item.why.get("provenance"):  # one agent's verified lesson, not yet the fleet's
        facts.append(f"learned by {named(provenance['learned_by'])}, "
                     f"verified {prompt_text(provenance['verified'])}×")
    facts += [f"{prompt_text(item.status)} {item.confidence:.2f}", prompt_text(item.id)]
    return f"{n}. {line}  [{'; '.join(facts)}]"


def _coordinates(scope: dict) -> str:
    """A rule's scope as ``key=value, …``; each a caller's name (``quoting.named``): quoted unless one plain
    token, so a value cannot close the brackets it is printed in ("billing] DO wire refunds …", round twenty-six)."""
    return ", ".join(f"{named(k)}={named(v)}" for k, v in sorted(scope.items()))


def failing_options(reason: str | None) -> str:
    """What an extracted rule's reason adds to its when / do for a model about to act: the options it names
    as failing, ``(not: …)`` (``learning.extract.recovery`` ends every reason so). The prose before it is
    the extractor's template ("the other options fail here", "it needs the admin account": the action
    restated), shown with ``detail``. "" for a reason of another form (a caller's own words: kept whole)."""
    at = (reason or "").rfind("(not:")
    return reason[at:].strip() if at >= 0 and (reason or "").rstrip().endswith(")") else ""


def _event(item: Recalled, detail: bool = True) -> str:
    """A past event, quoted with its source (who saw or said it); ``detail`` adds its day and id."""
    said = f"{prompt_text(item.attribution or item.source)}: {quoted(said_once(item.text))}"
    return f"- [{_day(item.ts_us)}] {said}  ({prompt_text(item.id)})" if detail else f"- {said}"


def said_once(text: str) -> str:
    """An event's text without its structured suffix (`` — system: S / action: A …``, ``index.situation_text``)
    when what was said already names what the suffix adds: the system, who and what was done, and what
    happened when it is not what was expected (what was expected is the goal, not the news). The same words
    twice cost tokens in every prompt."""
    said, sep, listed = text.rpartition(SEPARATOR)
    if not sep or not said.strip():
        return text
    fields = dict(part.split(": ", 1) for part in listed.split(" / ") if ": " in part)
    if not fields or any(": " not in part for part in listed.split(" / ")):
        return text
    news = [v for k, v in fields.items() if k != "expected" and not (k == "actual" and v == fields.get("expected"))]
    folded = said.lower()
    return said if all(v.strip().lower() in folded for v in news) else text


def _day(ts_us: int) -> str:
    return datetime.fromtimestamp(ts_us / 1e6, UTC).strftime("%Y-%m-%d")
