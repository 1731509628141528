"""Write the golden encoded records: one ``<type>.v<N>.bin`` + ``<type>.v<N>.json`` per shipped schema version.

Run it ONLY when a NEW schema version is added (``schemas/avro/<type>.v<N>.avsc``)::

    python tests/golden/make_golden.py

It writes the files of versions that have none yet and never touches an existing golden:
a ``.bin`` is a record as some producer once wrote it, and the point of keeping it is that
today's reader must still read exactly those bytes. Regenerating it would hide a break.

Files:

* ``<type>.v<N>.bin``: ``registry.encode(type, SAMPLES[(type, N)], version=N)``, i.e. Avro
  single-object encoding (C3 01, CRC-64-AVRO fingerprint of the v<N> schema, body).
* ``<type>.v<N>.json``: the record that decoding the ``.bin`` with the CURRENT reader schema of
  ``<type>`` must give: the written sample plus the defaults of fields the writer did not have
  (a perception v1 reads with ``emotion: null``). Avro ``bytes`` are stored as
  ``{"$bytes": "<lowercase hex>"}``; every other value is plain JSON.

When a new version adds a field, the ``.json`` of the OLDER versions of that type must gain the
field with its default: edit those by hand (the diff is the review of what the new reader does to
old data) and leave their ``.bin`` alone. Adding a version without its golden fails
``tests/schemas/test_compatibility.py``; so does a version listed here without a sample.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

from hindbrain.schemas.codec import registry

GOLDEN = Path(__file__).resolve().parent
BYTES_MARKER = "$bytes"


def _envelope(record_id: str, version: int, *, agent: str | None = "agent-7", task: str | None = "t-42",
              causation_ids: tuple[str, ...] = (), producer: str = "sdk/hindbrain") -> dict:
    return {
        "record_id": record_id,
        "ts_us": 1_717_171_717_123_456,
        "tenant": "acme",
        "agent": agent,
        "task": task,
        "schema_version": version,
        "causation_ids": list(causation_ids),
        "producer": producer,
    }


def _perception(version: int) -> dict:
    record = {
        "envelope": _envelope("ev_00000000000000000000000000000001", version, causation_ids=("rc_1",)),
        "kind": "anomaly",
        "text": "clicked submit, nothing happened — ünïcödé ✓",
        "system": "IAM",
        "identity": "normal account",
        "action": "submit change",
        "expected": "success message",
        "actual": "no response",
        "entities": ["IAM", "change request"],
        "scope": {"env": "prod", "project": "p1"},
        "signal": "implicit",
        "success": False,
        "polarity": -0.5,
        "session": "s-1",
        "speaker": "user",
    }
    if version >= 2:
        record["emotion"] = "frustrated"
    if version >= 3:
        record["origin"] = "tool"
    return record


# One sample per shipped (type, version). Values are exactly representable (doubles like 0.75)
# so that the JSON round trip is exact. Add the sample of a new version here, then run the script.
SAMPLES: dict[tuple[str, int], dict] = {
    ("perception", 1): _perception(1),
    ("perception", 2): _perception(2),
    ("perception", 3): _perception(3),
    ("cognition", 1): {
        "envelope": _envelope("fr_00000000000000000000000000000002", 1),
        "fragment_id": "fr_00000000000000000000000000000002",
        "condition": "submit does nothing in IAM",
        "action": "switch to the admin account",
        "reason": "permission operations need admin",
        "evidence": "submit succeeded as admin",
        "scope": {"env": "test"},
        "source": "read",
        "citation": "IAM handbook §4.2",
        "confidence": 0.75,
        "seed": True,
        "event_ids": ["ev_00000000000000000000000000000001"],
        "entities": ["IAM"],
    },
    ("recall", 1): {
        "envelope": _envelope("rc_00000000000000000000000000000003", 1),
        "recall_id": "rc_00000000000000000000000000000003",
        "query": "how do I change IAM permissions?",
        "situation": {"system": "IAM", "actual": "no response"},
        "trigger": "anomaly",
        "scope": {"env": "prod"},
        "budget_tokens": 400,
        "k": 8,
        "layers": ["episodic", "semantic"],
        "candidates": [
            {"item_id": "fr_00000000000000000000000000000002", "item_kind": "fragment", "score": 1.25,
             "why_json": '{"lexical": 1.25}'},
            {"item_id": "ev_00000000000000000000000000000001", "item_kind": "event", "score": 0.5,
             "why_json": "{}"},
        ],
    },
    ("recall", 2): {
        "envelope": _envelope("rc_00000000000000000000000000000013", 2),
        "recall_id": "rc_00000000000000000000000000000013",
        "query": "how do I change IAM permissions?",
        "situation": {"system": "IAM", "actual": "no response"},
        "trigger": "anomaly",
        "scope": {"env": "prod"},
        "budget_tokens": 400,
        "k": None,
        "layers": [],
        "score_names": ["lexical", "semantic", "graph", "scenario", "utility", "freshness", "bm25", "chain",
                        "penalties"],
        "candidates": [
            {"item_id": "bl_00000000000000000000000000000014", "item_kind": "belief", "score": 0.8,
             "why_json": '{"briefing": {"layer": "scene"}}', "stage": None, "reason": None, "scores": []},
            {"item_id": "fr_00000000000000000000000000000002", "item_kind": "fragment", "score": 0.625,
             "why_json": '{"lexical": {"score": 0.5}, "gate": {"stage": "selected", "value": 0.3}}',
             "stage": "selected", "reason": None,
             "scores": [0.5, 0.75, 0.0, 0.25, 0.5, 1.0, 7.125, 0.0, 0.0]},
            {"item_id": "ev_00000000000000000000000000000001", "item_kind": "event", "score": 0.25,
             "why_json": None, "stage": "scope", "reason": "scope env=test does not match env=prod",
             "scores": [0.25, 0.5, 0.0, 0.0, 0.5, 0.875, 3.5, 0.0, 0.125]},
        ],
    },
    ("injection", 1): {
        "envelope": _envelope("in_00000000000000000000000000000004", 1,
                              causation_ids=("rc_00000000000000000000000000000003",)),
        "recall_id": "rc_00000000000000000000000000000003",
        "items": [
            {"item_id": "fr_00000000000000000000000000000002", "item_kind": "fragment", "rank": 1, "tokens": 12,
             "score": 1.25, "arm": "b"},
            {"item_id": "ev_00000000000000000000000000000001", "item_kind": "event", "rank": 2, "tokens": 9,
             "score": 0.5, "arm": None},
        ],
        "budget_tokens": 400,
    },
    ("outcome", 1): {
        "envelope": _envelope("oc_00000000000000000000000000000005", 1),
        "recall_id": "rc_00000000000000000000000000000003",
        "applied": ["fr_00000000000000000000000000000002"],
        "success": True,
        "steps": 5,
        "notes": "worked as admin",
    },
    ("decision", 1): {
        "envelope": _envelope("dc_00000000000000000000000000000006", 1, agent=None, task=None,
                              producer="job/promote@1"),
        "decision_id": "dc_00000000000000000000000000000006",
        "kind": "promote",
        "subject_ids": ["fr_00000000000000000000000000000002"],
        "evidence_ids": ["oc_00000000000000000000000000000005"],
        "inputs_json": '{"successes": 3}',
        "reason": "three successful applications",
        "decided_by": {"job": "promote", "version": "1", "parameters_json": '{"min_successes": 3}'},
        "payload_json": "{}",
    },
    ("dead_letter", 1): {
        "envelope": _envelope("dl_00000000000000000000000000000007", 1, agent=None, task=None,
                              producer="runner/hindbrain"),
        "topic": "perceptions",
        "position": 42,
        "stage": "decode",
        "reason": "value does not start with the Avro single-object marker C3 01",
        "original": b"\x00\xffnot avro\xc3",
    },
}


def to_json(value):
    """Avro-native value -> JSON value; bytes become ``{"$bytes": hex}``."""
    if isinstance(value, bytes):
        return {BYTES_MARKER: value.hex()}
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_json(v) for v in value]
    return value


def expected_under_current(record_type: str, written: dict) -> dict:
    """The written record as the current reader sees it: reader-only fields take their default."""
    expected = copy.deepcopy(written)
    for field in registry.current(record_type).parsed["fields"]:
        if field["name"] not in expected:
            if "default" not in field:
                raise SystemExit(f"{record_type}: reader field {field['name']!r} has no default; "
                                 "old records cannot be read, write the expectation by hand")
            expected[field["name"]] = copy.deepcopy(field["default"])
    return expected


def main() -> int:
    written_any = False
    for record_type in registry.record_types:
        for schema in registry.versions(record_type):
            stem = f"{record_type}.v{schema.version}"
            bin_path, json_path = GOLDEN / f"{stem}.bin", GOLDEN / f"{stem}.json"
            if bin_path.exists() or json_path.exists():
                print(f"keep   {stem} (goldens are never regenerated)")
                continue
            sample = SAMPLES.get((record_type, schema.version))
            if sample is None:
                print(f"error  {stem}: add a sample to SAMPLES in {Path(__file__).name}", file=sys.stderr)
                return 1
            value = registry.encode(record_type, sample, version=schema.version)
            expected = expected_under_current(record_type, sample)
            decoded_type, decoded = registry.decode(value)
            if (decoded_type, decoded) != (record_type, expected):
                print(f"error  {stem}: decodes to {decoded!r}, expected {expected!r}", file=sys.stderr)
                return 1
            bin_path.write_bytes(value)
            json_path.write_text(json.dumps(to_json(expected), indent=2, ensure_ascii=False, sort_keys=True) + "\n",
                                 encoding="utf-8")
            written_any = True
            print(f"wrote  {stem}")
    if not written_any:
        print("nothing to do: every shipped schema version already has its golden")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
