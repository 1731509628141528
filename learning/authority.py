"""Who may raise a unit's trust (design.md §issue-27, point 2).

A unit's trust comes from where it came from: an agent's proposal starts at its source's
default confidence, private to that agent, and a rule steering money or the agent waits in
quarantine until independent agents verify it (``recall.provenance``). Two fields of a
proposal skip that climb: ``seed=True`` (curated: shared at once, never quarantined) and a
``confidence`` above the source's default. Only an operator may set them (an admin key, the
embedded ``Brain.seed``, the CLI), and never *as an agent*: an agent identity beside a seed
is what let any agent key mint a fleet-wide rule. The operator who granted it is written in
the record's ``envelope.producer`` (``granted_by``) so ``explain`` can name them.
"""

from __future__ import annotations

from hindbrain.projections.fragments import DEFAULT_CONFIDENCE

OPERATOR = "operator"  # the embedded SDK's caller: whoever opened the Brain owns it


def trust_raised(seed: bool, confidence: float | None, source: str) -> str | None:
    """The field by which a proposal asks for more trust than an agent's word gets, or None:
    ``seed``, or a ``confidence`` above the default of its ``source`` (lowering it is no grant:
    an agent unsure of its lesson may say so)."""
    if seed:
        return "seed"
    if confidence is not None and confidence > DEFAULT_CONFIDENCE[source]:
        return "confidence"
    return None


def refusal(raised: str, who: str) -> str:
    """Why ``who`` (an agent, an agent's key) may not set the field ``raised``."""
    what = "a curated seed (shared at once, never quarantined)" if raised == "seed" else \
        "a confidence above the source's default"
    return (f"{what} is an operator's grant, not {who}'s: propose the unit without '{raised}' (it earns trust "
            f"through verified outcomes), or import it as an operator (an admin key without an agent, "
            f"Brain.seed, `hindbrain seed`)")


def granted_by(producer: str, seed: bool, confidence: float | None, source: str) -> str | None:
    """Who granted a unit's raised trust, from its record (``envelope.producer``), or None
    when nothing was raised."""
    return producer if trust_raised(seed, confidence, source) else None


def key_grant(role: str, key_id: str, key_agent: str | None, fields: dict) -> tuple[str | None, str | None]:
    """``(granted_by, refusal)`` for a ``learn`` request sent with an API key: a proposal that
    raises trust (``trust_raised``) is granted by an admin key not bound to an agent (named by
    its key id), and refused for any other key (an agent's, or one bound to an agent); a
    proposal that raises nothing needs no grant."""
    raised = trust_raised(bool(fields.get("seed")), fields.get("confidence"), fields.get("source") or "lived")
    if raised is None:
        return None, None
    if role != "admin" or key_agent:
        who = f"an agent key ({key_id}, bound to {key_agent!r})" if key_agent else f"a key of role {role!r} ({key_id})"
        return None, f"learn: field {raised!r}: {refusal(raised, who)}"
    return f"admin key {key_id}", None
