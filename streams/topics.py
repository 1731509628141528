"""Topic declarations: which record type travels on which topic, keyed how.

Keys are ``tenant/agent`` so that, on Kafka, one agent's records stay in one partition and
therefore in order. Retention is declared with the Kafka issue; the embedded log keeps all.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Topic:
    name: str
    record_type: str


TOPICS = (
    Topic("perceptions", "perception"),
    Topic("cognitions", "cognition"),
    Topic("recalls", "recall"),
    Topic("injections", "injection"),
    Topic("outcomes", "outcome"),
    Topic("decisions", "decision"),
    Topic("dead_letters", "dead_letter"),
)
TOPIC_OF = {t.record_type: t.name for t in TOPICS}


def key_of(record: dict) -> str:
    env = record["envelope"]
    return f"{env['tenant']}/{env['agent'] or ''}"
