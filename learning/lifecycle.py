"""Confidence and the lifecycle of a unit (design.md §seed-000-exp-9, design.md §seed-001-4.1, design.md §seed-004-2).

Confidence starts from the signal's provenance — explicit 0.9, implicit 0.6, the agent's
self-evaluation 0.4 — and below ``HOLD_BELOW`` a unit waits in the holding area (not
injected) until more evidence arrives. Evidence then moves it: a success when the unit was
*applied* raises it, a failure lowers it, a contradiction lowers it more.

Status: held → candidate (accepted, in observation) → verified (one verified delivery) →
stable (two: a stable experience); any → reviewing (falsified twice in a row, or
contradicted) → invalid (falsified ``INVALID_AFTER`` times since its last success: never
injected again). The
ladder above stable: repeated success with converging positive feedback makes a *skill*;
success across ``TRAIT_DOMAINS`` different task domains (transfer) proposes a *trait*,
which reaches the identity layer only when a human approves it.

Fleet memory (design.md §seed-001-6.2, design.md §G2): a unit learned from one agent's experience starts
in that agent's private memory; it enters the memory its tenant's agents share once it is
*verified*: by outcomes (its agent applied it and succeeded: status verified), or by the fleet
(``SHARE_AGENTS`` independent agents stand behind it at ``SHARE_CONFIDENCE``: the same lesson
learned again by another agent, or another agent's successful application). An untested
lesson — one agent's single bad experience — stays private. Recall marks a unit one agent
verified with its provenance and ranks it below fleet-verified units. Units without an agent
and seeds are shared from the start; cited knowledge an agent proposes is its own like its experience.

Pure: ``on_*`` functions take the unit's state and an observation and return the change
(new status, confidence and the rule that fired); the learner records it as a decision.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from hindbrain.schemas.decision_kinds import DecisionKind
from hindbrain.schemas.records import PRODUCER_KEY
from hindbrain.streams.principals import principal_of

RULE_VERSION = "lifecycle/1"
# a sender that is an API key bound to no agent (``sender_of``), as the decisions' reasons name it
KEY_SENDER = "key:"
# a sender that is a broker principal writing its own perceptions topic (``sender_of``)
PRINCIPAL_SENDER = "principal:"
SIGNAL_CONFIDENCE = {"explicit": 0.9, "implicit": 0.6, "self": 0.4}
HOLD_BELOW = 0.3
SUCCESS_GAIN, FAILURE_LOSS, CONTRADICTION_LOSS = 0.25, 0.25, 0.35
STABLE_AFTER = 2  # verified deliveries that make a stable experience
REVIEW_AFTER = 2  # consecutive failures that put a unit under review
INVALID_AFTER = 3  # falsifications (failures + contradictions) that invalidate it
SKILL_SUCCESSES, SKILL_RATE, SKILL_POSITIVE = 5, 0.8, 2
TRAIT_DOMAINS = 3
SHARE_AGENTS, SHARE_CONFIDENCE = 2, 0.8  # the stricter bar of shared memory
FALSIFIERS = 2  # senders whose perceived reports may end a unit together (``on_perceived_contradiction``)
THRESHOLDS = {"hold_below": HOLD_BELOW, "stable_after": STABLE_AFTER, "review_after": REVIEW_AFTER,
              "invalid_after": INVALID_AFTER, "skill": [SKILL_SUCCESSES, SKILL_RATE, SKILL_POSITIVE],
              "trait_domains": TRAIT_DOMAINS, "share": [SHARE_AGENTS, SHARE_CONFIDENCE]}
LIVE = ("candidate", "verified", "stable", "reviewing")
VERIFIED = ("verified", "stable")


@dataclass(frozen=True)
class Unit:
    fragment_id: str
    status: str
    confidence: float
    source: str
    condition: str
    action: str
    rung: str = "experience"  # experience → skill → trait_proposed → trait (approved) | skill_declined
    successes: int = 0
    failures: int = 0
    failure_streak: int = 0  # falsifications (failures and contradictions) since the last success
    contradictions: int = 0
    positive_feedback: int = 0
    domains: frozenset[str] = field(default_factory=frozenset)  # task domains it succeeded in
    evidence: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()  # the independent agents behind it: who learned it, who verified it
    shared: bool = True  # False: only the agent it was learned from recalls it (see the module docstring)
    fleet: bool = False  # shared because the fleet verified it (``fleet_verified``), not one agent's outcomes
    unproven: int = 0  # of ``successes``, those no recall's injection proved (``_unproven_success``): not deliveries
    # who reported its falsifications since its last success (``sender_identity``, each once): a failure read from
    # perceived events ends a unit only when two senders stand behind them (``on_perceived_contradiction``)
    falsified_by: tuple[str, ...] = ()


def deliveries(unit: Unit) -> int:
    """The unit's verified deliveries: successes of outcomes whose recall injected it (what "stable" counts)."""
    return unit.successes - unit.unproven


@dataclass(frozen=True)
class Change:
    kind: str  # the decision kind: unit_verified, unit_stable, unit_reviewing, unit_invalid, unit_evidence ...
    unit: Unit  # the state after
    reason: str


def state_of(unit: Unit) -> dict:
    """The unit as a decision payload's ``unit`` (JSON-ready): ``dataclasses.asdict``'s dict, its fields read
    directly (every field but these three is a str, number or bool; asdict deep-copied each, a quarter of the
    learner's time where tasks succeed: issue 28, docs/speed.md round twelve)."""
    state = {name: getattr(unit, name) for name in _UNIT_FIELDS}
    state["domains"], state["evidence"], state["agents"] = sorted(unit.domains), list(unit.evidence), list(unit.agents)
    if not unit.unproven:  # the payload of a unit with only proven successes is what it was before round twenty-five
        del state["unproven"]
    if unit.falsified_by:  # kept as a list, as the other tuples; left out while empty, as ``unproven`` is
        state["falsified_by"] = list(unit.falsified_by)
    else:
        del state["falsified_by"]
    return state


_UNIT_FIELDS = tuple(f.name for f in fields(Unit))


def from_state(state: dict) -> Unit:
    """The unit from a decision payload's ``unit`` (``state_of``'s inverse)."""
    return Unit(**{**state, "domains": frozenset(state.get("domains", ())),
                   "evidence": tuple(state.get("evidence", ())), "agents": tuple(state.get("agents", ())),
                   "falsified_by": tuple(state.get("falsified_by", ()))})


def agent_identity(agent: str) -> str:
    """The one identity behind an agent's spellings: ``BOT-1`` and ``bot-1`` print alike to a reader and are one
    agent (round twenty-eight; the edge refuses the other spellings that print alike,
    ``schemas.api.identifier_problem``). Fleet verification and the A/B windows' reporters (``jobs.windows``) fold
    names with it, so a look-alike is never a second, independent agent."""
    return agent.casefold()


def sender_of(agent: str | None, producer: str | None, topic: str = "") -> str | None:
    """Who vouches for a record (round thirty-two, docs/security.md "The sender is the key"): the API key that sent
    it when the key is not bound to an agent (``"key:<key id>"``: such a key may name any agent, so its names are
    its words, not agents), else the agent it names (a bound key's records carry its agent), else None. A record
    without a key — the embedded SDK, the runner, a log written before round thirty-two — is its agent's: whoever
    writes keyless records (an operator's process, a producer on the broker) holds more than an API key anyway.
    An agent named ``key:…`` is one with that key: two senders merged count less, never more.
    A record from a broker principal's perceptions ``topic`` (``streams.principals``: the broker let only that
    principal write it, and the projector took only what its binding allows) is the principal's,
    ``"principal:<P>"``, whatever agents it names (round thirty-three, docs/distributed.md)."""
    if topic and (principal := principal_of(topic)):
        return PRINCIPAL_SENDER + principal
    if producer and producer.startswith(PRODUCER_KEY):
        return KEY_SENDER + producer.removeprefix(PRODUCER_KEY)
    return agent or None


def sender_identity(agent: str | None, producer: str | None, topic: str = "") -> str:
    """``sender_of`` folded (``agent_identity``), ``""`` for no one: fleet verification and the A/B windows'
    reporters count these."""
    sender = sender_of(agent, producer, topic)
    return agent_identity(sender) if sender else ""


def senders(pairs) -> tuple[str, ...]:
    """The senders (``sender_identity``) of ``(agent, producer[, topic])`` tuples, each once, sorted; ``""`` (the
    tenant's own, sent by no key and naming no agent) kept. The summaries' and induction's relays: an unbound key naming
    agents a1 and a2 in its perceptions is one relay, as it is one source to fleet verification (round
    thirty-two, docs/security.md "A perception's sender is its key")."""
    return tuple(sorted({sender_identity(*pair) for pair in pairs}))


def speaks_for(agent: str | None, recalled_for: str | None) -> bool:
    """Whether an outcome sent as ``agent`` may prove the recall made for ``recalled_for`` (both names as sent,
    or folded): the same agent (``agent_identity``), or either names none. A recall proves what reached the context
    of the agent it was made for, so another agent's report on it is evidence only; a name left out is not compared,
    since only a bound key's agent is the edge's word (an unbound key may name any). One rule for the learner's
    credit (``outcome_verdicts._credit``) and the A/B windows' reports (``jobs.windows.first_reports``)."""
    return not (agent and recalled_for) or agent_identity(agent) == agent_identity(recalled_for)


def among_agents(agent: str, agents) -> bool:
    """Whether ``agent`` is one of ``agents`` as one identity (``agent_identity``). The name a unit keeps is the
    first spelling it met."""
    folded = agent_identity(agent)
    return any(agent_identity(a) == folded for a in agents)


def with_falsifier(unit: Unit, sender: str | None) -> Unit:
    """The unit with ``sender`` (folded; ``""`` for no one) among who falsified it since its last success."""
    who = agent_identity(sender) if sender else ""
    return unit if who in unit.falsified_by else replace(unit, falsified_by=(*unit.falsified_by, who))


def with_agent(unit: Unit, agent: str | None) -> Unit:
    """The unit with ``agent`` among its independent sources."""
    return unit if not agent or among_agents(agent, unit.agents) else replace(unit, agents=(*unit.agents, agent))


def fleet_verified(unit: Unit) -> bool:
    """``SHARE_AGENTS`` independent agents stand behind it at ``SHARE_CONFIDENCE``."""
    return len(unit.agents) >= SHARE_AGENTS and unit.confidence >= SHARE_CONFIDENCE


def sharing(unit: Unit) -> list[Change]:
    """``unit_shared`` once a private unit is verified — by outcomes (a successful application:
    status verified or stable) or by the fleet (``fleet_verified``) — and again when a unit one
    agent verified becomes fleet-verified (it loses its provenance mark); else nothing. A unit one
    agent verified reaches the others marked with its provenance and ranked below fleet-verified
    units (``recall``); design.md §issue-17: waiting for a second agent to rediscover a lesson made every
    other agent repeat the mistake first."""
    if unit.status not in LIVE:
        return []
    if fleet_verified(unit) and not unit.fleet:
        return [Change(DecisionKind.UNIT_SHARED, replace(unit, shared=True, fleet=True),
                       f"{len(unit.agents)} independent agents ({', '.join(unit.agents)}) at confidence "
                       f"{unit.confidence:.2f} ≥ {SHARE_CONFIDENCE}: enters the memory the tenant's agents share")]
    if not unit.shared and unit.status in VERIFIED and unit.successes:
        learned_by = unit.agents[0] if unit.agents else "its agent"
        return [Change(DecisionKind.UNIT_SHARED, replace(unit, shared=True),
                       f"verified by outcomes ({unit.successes} successful application"
                       f"{'s' if unit.successes > 1 else ''} by {', '.join(unit.agents) or learned_by}): reaches the "
                       f"tenant's agents marked as learned by {learned_by}, below fleet-verified units")]
    return []


def sharing_recovered(unit: Unit, task: str | None, routine: bool = False) -> list[Change]:
    """``unit_shared`` at acceptance for a private lesson its agent's own trajectory tested: a failure,
    then in the same task a success with the unit's action (``extract.recovery``). The fix worked
    once already, so waiting for a successful *application* made every other agent repeat the
    mistake meanwhile (design.md §issue-29: 14 % fleet repeats in the first world). It reaches them as a
    candidate marked with its provenance ("learned by a1, verified 0×", ranked below what the fleet
    verified); the quarantine of a unit steering money or the agent still holds until independent
    agents verify it (``recall.provenance``), and outcomes still verify or falsify it. A ``routine`` (the
    same option working for independent agents, ``extract.routine``) is shared the same way."""
    if unit.shared or unit.status != "candidate" or not unit.agents:
        return []
    if routine:
        return [Change(DecisionKind.UNIT_SHARED, replace(unit, shared=True),
                       "a routine: the same option worked for independent agents and never failed here; reaches "
                       "the tenant's agents as a candidate, below fleet-verified units")]
    return [Change(DecisionKind.UNIT_SHARED, replace(unit, shared=True),
                   f"learned from {unit.agents[0]}'s own failure then success"
                   f"{f' in task {task}' if task else ''}: the fix worked once; reaches the tenant's agents as a "
                   f"candidate marked as learned by {unit.agents[0]}, below fleet-verified units")]


def on_approval(unit: Unit, accept: bool, approver: str) -> Change:
    """A human's verdict on a proposed trait: accepted, it joins the identity layer;
    declined, the unit stays a skill (and is not proposed again by the same evidence)."""
    if unit.rung != DecisionKind.TRAIT_PROPOSED:
        raise ValueError(f"{unit.fragment_id} is not a proposed trait (its rung is {unit.rung!r})")
    if accept:
        return Change(DecisionKind.TRAIT_APPROVED, replace(unit, rung="trait"),
                      f"approved by {approver}: a character trait")
    return Change(DecisionKind.TRAIT_DECLINED, replace(unit, rung="skill_declined"),
                  f"declined by {approver}: stays a skill")


def on_invalidation(unit: Unit, reason: str, version: str | None) -> Change:
    """An environment change made the unit untrue (explicit, never a timer)."""
    if unit.status in ("invalid", "rejected"):
        raise ValueError(f"{unit.fragment_id} is already {unit.status}")
    where = f" (environment {version})" if version else ""
    return Change(DecisionKind.UNIT_INVALIDATED, replace(unit, status="invalid"), f"invalidated{where}: {reason}")


def initial_status(confidence: float) -> str:
    return "held" if confidence < HOLD_BELOW else "candidate"


def on_outcome(unit: Unit, success: bool, domain: str | None, evidence_id: str,
               agent: str | None = None, proven: bool = True) -> list[Change]:
    """An outcome of a task that *applied* the unit (by ``agent``, its sender: a success makes it a source, a
    failure one of ``falsified_by``). ``proven``: the outcome names a recall whose injection put the unit into the
    agent's context (the learner's ``Credit``); an unproven success is evidence only (``_unproven_success``)."""
    if unit.status in ("invalid", "rejected", "held"):
        return []
    evidence = (*unit.evidence, evidence_id)
    if success and not proven:
        c = unit.confidence + (1.0 - unit.confidence) * SUCCESS_GAIN
        return [_unproven_success(replace(unit, confidence=c, successes=unit.successes + 1,
                                          unproven=unit.unproven + 1, failure_streak=0, falsified_by=(),
                                          evidence=evidence))]
    if success:
        c = unit.confidence + (1.0 - unit.confidence) * SUCCESS_GAIN
        u = replace(with_agent(unit, agent), confidence=c, successes=unit.successes + 1, failure_streak=0,
                    falsified_by=(), evidence=evidence, domains=unit.domains | {domain} if domain else unit.domains)
        changes = [_status_after_success(u)]
        changes += _ladder(changes[-1].unit)
        return changes + sharing(changes[-1].unit)
    c = unit.confidence * (1.0 - FAILURE_LOSS)
    u = replace(with_falsifier(unit, agent), confidence=c if proven else unproven_loss(unit.confidence, c),
                failures=unit.failures + 1, failure_streak=unit.failure_streak + 1, evidence=evidence)
    return [_status_after_falsification(u, "failed after being applied", None if proven else UNPROVEN)]


def on_contradiction(unit: Unit, evidence_id: str, what: str, sender: str | None, proven: bool = True,
                     undecided: str | None = None) -> list[Change]:
    """New evidence against the unit, reported by ``sender`` (``sender_of``): negative feedback on a task that
    applied it, or (design.md §issue-17) its action failed in a task that found what works instead (``what`` says
    which). ``proven``: as ``on_outcome``'s, for a contradiction an outcome reports; ``undecided``: why this
    contradiction may not end the unit although proven (``on_perceived_contradiction``)."""
    if unit.status in ("invalid", "rejected"):
        return []
    undecided = undecided or (None if proven else UNPROVEN)
    c = unit.confidence * (1.0 - CONTRADICTION_LOSS)
    u = replace(with_falsifier(unit, sender), confidence=c if undecided is None else unproven_loss(unit.confidence, c),
                contradictions=unit.contradictions + 1, failure_streak=unit.failure_streak + 1,
                evidence=(*unit.evidence, evidence_id))
    change = _status_after_falsification(u, what, undecided)
    if change.unit.status not in ("reviewing", "invalid") and u.status != "held":
        change = Change(DecisionKind.UNIT_REVIEWING, replace(change.unit, status="reviewing"), f"{what}: under review")
    return [change]


def on_perceived_contradiction(unit: Unit, evidence_id: str, what: str, sender: str | None) -> list[Change]:
    """A contradiction the learner reads from perceived events, not from an outcome: change detection (an option
    that failed where it used to work) and a routine's first failure. Nothing proves the events happened: they are
    their sender's word (``sender_of``: an unbound API key whatever agents it names). One sender may doubt a unit
    alone (in review at once, as before: doubt is cheap and the next delivery decides), but not end it: the unit
    turns invalid, or sinks under the credibility floor, only once ``FALSIFIERS`` senders stand behind its
    falsifications since its last success — as fleet verification wants independent agents to share a unit and
    an A/B window independent reporters to settle (round thirty-three, docs/learning.md). Three change detections
    of one agent's forged events made an operator's rule invalid for every agent (round thirty-two's "Not
    defended")."""
    who = agent_identity(sender) if sender else ""
    behind = set(unit.falsified_by) | {who}
    alone = None if len(behind) >= FALSIFIERS else (
        f"every falsification since its last success was sent by {_named(who)} alone")
    return on_contradiction(unit, evidence_id, what, sender, undecided=alone)


def _named(sender: str) -> str:
    """A sender as a reason names it: an agent, an API key bound to none, or the tenant's own records."""
    if sender.startswith(KEY_SENDER):
        return f"API key '{sender.removeprefix(KEY_SENDER)}' (bound to no agent)"
    return f"'{sender}'" if sender else "records naming no agent and sent by no key"


def on_positive_feedback(unit: Unit) -> Unit:
    return replace(unit, positive_feedback=unit.positive_feedback + 1)


def on_assimilation(unit: Unit, confidence: float, evidence_id: str, agent: str | None = None) -> list[Change]:
    """The same lesson again (same condition and action), learned by ``agent``: evidence adds
    up (noisy-or), a held unit is released once it clears the threshold, and a private unit
    another agent learned too may clear the bar of shared memory."""
    c = 1.0 - (1.0 - unit.confidence) * (1.0 - confidence)
    u = replace(with_agent(unit, agent), confidence=c, evidence=(*unit.evidence, evidence_id))
    if unit.status == "held" and c >= HOLD_BELOW:
        change = Change(DecisionKind.UNIT_RELEASED, replace(u, status="candidate"),
                        f"assimilated: confidence {c:.2f} ≥ {HOLD_BELOW}, leaves the holding area")
    else:
        change = Change(DecisionKind.UNIT_ASSIMILATED, u, f"assimilated: the same lesson again, confidence {c:.2f}")
    return [change, *sharing(change.unit)]


def on_repetition(unit: Unit, evidence_id: str, agent: str) -> list[Change]:
    """The same lesson proposed again (``learn``) by ``agent``, who already stands behind the unit: kept as
    evidence, but one caller's word said twice is no more evidence than said once, so confidence, status and
    sharing stay. Round twenty-six measured six ``learn`` calls by one agent lifting its unit to candidate 1.00
    by noisy-or, and a held unit (an agent's own low confidence) left the holding area on its agent's
    repetition alone (docs/security.md, round twenty-seven)."""
    u = replace(unit, evidence=(*unit.evidence, evidence_id))
    return [Change(DecisionKind.UNIT_ASSIMILATED, u,
                   f"the same lesson again from {agent}, who already stands behind it: one agent's repetition "
                   f"counts once (confidence stays {u.confidence:.2f})")]


def _status_after_success(u: Unit) -> Change:
    if u.status == "candidate":
        return Change(DecisionKind.UNIT_VERIFIED, replace(u, status="verified"), "applied and the task succeeded")
    if u.status == "reviewing":
        return Change(DecisionKind.UNIT_VERIFIED, replace(u, status="verified"), "succeeded again while under review")
    if u.status == "verified" and deliveries(u) >= STABLE_AFTER:
        return Change(DecisionKind.UNIT_STABLE, replace(u, status="stable"),
                      f"{deliveries(u)} verified deliveries ≥ {STABLE_AFTER}: a stable experience")
    return Change(DecisionKind.UNIT_EVIDENCE, u, "applied and the task succeeded")


UNPROVEN = "no recall of this tenant proves it was injected"  # why an unproven success promotes nothing


def _unproven_success(u: Unit) -> Change:
    """A success reported for the unit without a recall that injected it (no recall id, or one the learner
    does not know): evidence — confidence and the success count move — that never promotes past verified.
    "Stable" is "verified twice" (design.md §seed-000-exp-9): deliveries, not claims, so a caller's reports alone
    never make it stable, a skill or a trait; nor do they add the reporter as an independent agent, its domain,
    or share a private unit (shared memory wants an agent that was given the unit); counted in ``unproven``, they
    are not among the deliveries that make it stable or a skill (``deliveries``)."""
    if u.status in ("candidate", "reviewing"):
        return Change(DecisionKind.UNIT_VERIFIED, replace(u, status="verified"),
                      f"applied and the task succeeded ({UNPROVEN}: verified at most, never stable)")
    return Change(DecisionKind.UNIT_EVIDENCE, u,
                  f"applied and the task succeeded; {UNPROVEN}: evidence, not promoted past verified")


def _status_after_falsification(u: Unit, what: str, undecided: str | None = None) -> Change:
    # Counted since the last success: a lesson that held 20 times is not invalidated by three
    # flaky failures spread over months, but one the world stopped honouring goes in three.
    # Invalid is for good (never injected, so no delivery can restore it): only a failure of a unit its recall
    # put into the agent's context ends it. Three outcomes naming no recall, from one agent, made an operator's
    # seed rule invalid for the whole fleet (round thirty-two); unproven, they put it in review at most (and
    # ``unproven_loss`` keeps it above the credibility floor). ``undecided``: why this falsification may not end it
    # (``UNPROVEN``, or one sender's perceived events alone), None: it may.
    if u.failure_streak >= INVALID_AFTER and undecided is not None:
        return _undecided_falsification(u, what, undecided)
    if u.failure_streak >= INVALID_AFTER:
        return Change(DecisionKind.UNIT_DISPROVEN, replace(u, status="invalid"),
                      f"{what}: falsified {u.failure_streak} times since its last success ≥ {INVALID_AFTER}, "
                      "no longer injected")
    if u.failure_streak >= REVIEW_AFTER and u.status != "reviewing":
        return Change(DecisionKind.UNIT_REVIEWING, replace(u, status="reviewing"),
                      f"{what}: {u.failure_streak} failures in a row ≥ {REVIEW_AFTER}")
    return Change(DecisionKind.UNIT_EVIDENCE, u, what)


def unproven_loss(before: float, after: float) -> float:
    """The confidence a falsification no recall proves leaves: ``after``, but not below ``HOLD_BELOW`` (the gate's
    credibility floor, under which a unit is not injected) unless it was there already. Below it, nothing delivers
    the unit again, so nothing could restore it: claims alone would end it as surely as ``invalid`` (round
    thirty-two: four forged failures took an operator's seed rule from 0.90 to 0.28)."""
    return max(after, min(before, HOLD_BELOW))


def _undecided_falsification(u: Unit, what: str, undecided: str) -> Change:
    """A falsification past ``INVALID_AFTER`` that may not end the unit (``_status_after_falsification``): in
    review, where the next genuine delivery decides, never invalid."""
    why = (f"{what}: {u.failure_streak} failures in a row, but {undecided}: under review at most, "
           "never invalid on claims")
    if u.status == "reviewing":
        return Change(DecisionKind.UNIT_EVIDENCE, u, why)
    return Change(DecisionKind.UNIT_REVIEWING, replace(u, status="reviewing"), why)


def _ladder(u: Unit) -> list[Change]:
    if u.status != "stable":
        return []
    rate = u.successes / max(1, u.successes + u.failures)
    if (u.rung == "experience" and deliveries(u) >= SKILL_SUCCESSES and rate >= SKILL_RATE
            and u.positive_feedback >= SKILL_POSITIVE):
        return [Change(DecisionKind.UNIT_SKILL, replace(u, rung="skill"),
                       f"{u.successes} successes (rate {rate:.2f} ≥ {SKILL_RATE}) and {u.positive_feedback} "
                       f"positive feedback: a skill")]
    if u.rung == "skill" and len(u.domains) >= TRAIT_DOMAINS:  # "skill_declined" is never proposed again
        return [Change(DecisionKind.TRAIT_PROPOSED, replace(u, rung=DecisionKind.TRAIT_PROPOSED),
                       f"succeeded in {len(u.domains)} task domains ≥ {TRAIT_DOMAINS}: a trait, pending approval")]
    return []
