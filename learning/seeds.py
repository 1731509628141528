"""Cold-start seeds (design.md §seed-001-5.1): curated cognitions imported from a YAML or JSON file.

A seed file is a list of entries, or a mapping with ``tenant`` and ``cognitions``::

    tenant: acme
    cognitions:
      - condition: submit does nothing in IAM
        action: switch to the admin account
        reason: permission operations need admin
        evidence: runbook IAM-7
        scope: {env: prod}
        source: lived            # or read, with citation:
        entities: [IAM]

Each entry becomes a ``brain.learn(..., seed=True)`` proposal: it enters at the seed's
higher initial confidence (0.9) and still passes the learner's write gate. An entry
without a trigger condition — or failing any acceptance check, or any field's validation —
is refused with a message naming the entry; the others are imported. Ids derive from the
tenant, condition and action, so importing the same file twice adds nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from hindbrain.learning.records import derived_id
from hindbrain.learning.write_gate import failed_check
from hindbrain.schemas.api import InvalidInput, LearnInput, validated

ENTRY_FIELDS = ("condition", "action", "reason", "evidence", "scope", "source", "citation", "entities", "confidence",
                "agent", "event_ids")


@dataclass
class SeedReport:
    """What ``Brain.seed`` did: the fragment ids imported and one message per refused entry."""

    imported: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


class SeedFileError(ValueError):
    """The file as a whole cannot be read as seeds (syntax, or not a list of entries)."""


def read_seed_file(path: str | Path) -> tuple[str | None, list]:
    """``(tenant or None, entries)`` from a ``.yaml``/``.yml``/``.json`` seed file."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise SeedFileError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}") from None
    if isinstance(data, dict):
        tenant, data = data.get("tenant"), data.get("cognitions")
    else:
        tenant = None
    if not isinstance(data, list):
        raise SeedFileError(f"{path}: expected a list of cognitions (or a mapping with 'cognitions:')")
    return tenant, data


def proposals(tenant: str, entries: list) -> tuple[list[LearnInput], list[str]]:
    """The entries that may be imported (as ``learn`` inputs) and a message per refused one."""
    accepted, refused = [], []
    for n, entry in enumerate(entries, 1):
        problem, data = _check(tenant, entry)
        if problem:
            refused.append(f"entry {n}{_label(entry)}: refused: {problem}")
        else:
            accepted.append(data)
    return accepted, refused


def _check(tenant: str, entry) -> tuple[str | None, LearnInput | None]:
    if not isinstance(entry, dict):
        return f"expected a mapping with condition/action, got {type(entry).__name__}", None
    unknown = sorted(set(entry) - set(ENTRY_FIELDS))
    if unknown:
        return f"unknown field(s) {unknown}; known: {list(ENTRY_FIELDS)}", None
    condition = entry.get("condition")
    if not isinstance(condition, str) or not condition.strip():
        return "no 'condition': a seed must say when it applies (its trigger condition)", None
    if entry.get("agent"):  # a seed is the operator's word, shared at once (``learning.authority``)
        return "field 'agent': a seed is the operator's, never an agent's: leave 'agent' out", None
    failed = failed_check(condition, entry.get("action") or "")
    if failed:
        return f"fails '{failed[0]}': {failed[1]}", None
    fragment_id = derived_id("fr", "seed", tenant, condition, str(entry.get("action")))
    try:
        return None, validated(LearnInput, "seed", tenant=tenant, seed=True, fragment_id=fragment_id, **entry)
    except InvalidInput as exc:
        return str(exc).removeprefix("seed: "), None


def _label(entry) -> str:
    if isinstance(entry, dict):
        said = entry.get("condition") or entry.get("action")
        if isinstance(said, str) and said.strip():
            return f" ({said[:40]!r})"
    return ""
