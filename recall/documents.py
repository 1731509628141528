"""The cue index's documents: what a tenant's index holds of an event, a cognitive unit or a belief.

``Doc`` is a perceived event or a unit as recall reads it, ``Counters`` an item's usage counters
(from outcome records and the learner's verdicts), ``Belief`` a belief as briefed; ``fragment_doc``
and ``belief_of`` make them from the views' rows (events: ``recall.event_documents``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from hindbrain.projections import fragments
from hindbrain.recall.cues import indexed_terms
from hindbrain.recall.provenance import Reason, said_text, unit_quarantine_reason
from hindbrain.recall.tokenize import estimate_tokens, tokens

LAYERS = ("episodic", "experience", "knowledge", "identity")  # identity: traits a human approved
TRAIT_RUNG = "trait"
COLD_SUMMARY_CHARS = 120
SHARED = 0  # the owner code of what every agent of the tenant may recall


def cold_summary(text: str) -> str:
    return text if len(text) <= COLD_SUMMARY_CHARS else text[: COLD_SUMMARY_CHARS - 1].rstrip() + "…"

LAYER_CODE = {name: i for i, name in enumerate(LAYERS)}
# Cue kinds the graph channel walks: fragments sharing an entity *and* an action form a chain.
LINK_PREFIXES = ("@entity:", "@action:")
COORDINATE_PREFIXES = ("@entity:", "@action:", "@scene:", "@anomaly:", "@cause:", "@time:", "@scope:")
FUNCTION_WORDS = frozenset({
    "a", "an", "the", "and", "or", "if", "then", "when", "is", "are", "be", "to", "of", "in", "on", "for", "with",
    "do", "does", "not", "it", "this", "that", "first", "else", "as", "by", "at", "from",
})


@dataclass(slots=True)
class Doc:
    id: str
    kind: str  # "event" | "fragment"
    layer: str
    text: str
    event_ids: list[str]
    source: str
    confidence: float
    scope: dict
    ts_us: int
    tokens: int = 0
    condition: str | None = None  # fragments: "when C"
    action: str | None = None  # fragments: "do A"; events: the action taken
    reason: str | None = None
    event_kind: str | None = None  # events: message | observation | action | anomaly | feedback | outcome
    status: str = "active"  # fragments: candidate | verified | stable | reviewing | invalid
    links: tuple[str, ...] = ()  # entity/action cue terms, for the graph channel
    exact: tuple[str, ...] = ()  # exact cues (codes, URLs, accounts, systems)
    conflicts: frozenset[str] = frozenset()  # ids of units this one is known to contradict
    last_used_us: int = 0  # the last outcome that applied it: freshness counts disuse from here
    owner: str | None = None  # the agent whose private memory holds it; None: shared in its tenant
    # A unit one agent verified and shared (not yet fleet-verified): {"learned_by", "agents",
    # "verified"}; recall ranks it below fleet-verified units and says so (design.md §issue-17).
    provenance: dict | None = None
    task: str | None = None  # events: the task that perceived it (its own recall has it in context)
    speaker: str | None = None  # events: who said it (a user's own turns are about that user)
    # Why it never steers another user's task (recall.provenance): a user's instruction-like
    # words (events), a rule steering money or the agent, or one resting on such words (units).
    quarantine: Reason | None = None  # in parts (``provenance.quarantine_text``)
    session: str | None = None  # events: the conversation it was perceived in (rendered with its quote)
    origin: str | None = None  # events: who produced the text, when the producer said (agent, user, tool, document)
    asks: float = 0.0  # events: the share of the text's sentences that are questions (recall.asking)
    fleet: bool = False  # units: independent agents verified it (``share``); it lifts a unit's quarantine
    evidence: str | None = None  # units: what showed it works (a promoted unit names its belief: its taint)
    # events: a report on how an option fared in a system, (system, identity, action, scope) (``system_report``):
    # every agent sees it (``owner`` did it), and the newest report on an option is the one that counts (recall.gate)
    report: tuple | None = None

    @property
    def fresh_since_us(self) -> int:
        return max(self.ts_us, self.last_used_us)


@dataclass(slots=True)
class Counters:
    """Usage counters of one item (design.md §D1), from outcome records, and the learner's verdicts."""

    applied: int = 0
    success: int = 0
    failure: int = 0
    contradiction: int = 0
    credited: int = 0  # applications the learner judged worked (``learning.attribution``)
    debited: int = 0  # ... and judged failed, though the task may have succeeded with another option
    unit: bool = False  # a cognitive unit: the learner judges it, so the reported outcomes alone never count

    @property
    def track(self) -> tuple[int, int]:
        """(worked, failed) as the utility channel counts them: the learner's verdicts on a unit
        (design.md §issue-29: applied, failed, then another option worked is a failure of it, not the task's
        success; round twenty-five: only applications its recall proved); the reported outcomes for what the
        learner does not judge (events, beliefs). A unit with no verdict yet has no track: outcomes that name
        it without a recall that injected it (forged, or a retry) would otherwise rank it for everyone."""
        if self.credited or self.debited or self.unit:
            return self.credited, self.debited
        return self.success, self.failure


@dataclass(slots=True)
class Belief:
    id: str
    text: str
    confidence: float
    support: int
    status: str
    scope: dict
    event_ids: list[str]
    ts_us: int
    tokens: int = 0
    cues: frozenset[str] = field(default_factory=frozenset)
    # Why it is never briefed to another user (design.md §issue-27: taint follows data): it rests on a
    # quarantined event or unit (``TenantIndex.add_belief``).
    quarantine: Reason | None = None  # in parts (``provenance.quarantine_text``)


Indexable = tuple[str, Doc, list[str]]  # (tenant, document, its cue terms)


def ts_us(ts) -> int:
    return ts if isinstance(ts, int) else int(ts.timestamp() * 1_000_000)


def _with_cues(doc: Doc, fields: dict) -> tuple[Doc, list[str]]:
    terms = indexed_terms(fields, doc.ts_us)
    doc.links, doc.exact = links_and_exact(terms)
    return doc, list(terms)


@lru_cache(maxsize=1 << 12)
def links_and_exact(terms: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The cue terms the graph channel walks, and the exact ones: per distinct term tuple (``indexed_terms``;
    the same bound)."""
    return (tuple(t for t in terms if t.startswith(LINK_PREFIXES)),
            tuple(t for t in terms if not t.startswith(COORDINATE_PREFIXES)))


def fragment_doc(row: dict) -> tuple[Doc, list[str]]:
    """A fragment as a document and its cue terms, from a ``fragments`` row."""
    doc = Doc(row["fragment_id"], "fragment", row["layer"], row["text"], list(row["event_ids"]), row["source"],
              float(row["confidence"]), dict(row["scope"]), ts_us(row["ts"]), condition=row["condition"],
              action=row["action"], reason=row["reason"], status=row["status"],
              owner=fragments.private_to(row["agent"], row["seed"]), evidence=row.get("evidence"),
              quarantine=unit_quarantine_reason(said_text(row), row["seed"]))
    return _with_cues(doc, {**row, "text": row["condition"]})  # the rendered text would repeat the action


def belief_of(row: dict) -> Belief:
    """A belief from a ``beliefs`` row."""
    cues = frozenset(t for t in tokens(row["text"]) if t not in FUNCTION_WORDS)
    return Belief(row["belief_id"], row["text"], float(row["confidence"]), int(row["support"]), row["status"],
                  dict(row["scope"]), list(row["event_ids"]), ts_us(row["ts"]), estimate_tokens(row["text"]), cues)


def semantic_text(doc: Doc) -> str:
    """What the embedder sees: for a unit its condition and action, for an event its text."""
    if doc.kind == "fragment":
        return f"{doc.condition} — {doc.action}"
    return doc.text
