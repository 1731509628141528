"""Topic declarations: which record type travels on which topic, keyed how, kept how long.

This module is the one place that declares topics, for both logs:

* the embedded log (``SqliteLog``) uses the bare names (``perceptions``, ...): one partition,
  everything kept;
* Kafka (``KafkaLog``) uses ``prefix + name`` (default prefix ``hindbrain.``), so that several
  brains can share one cluster, with the partition count, replication factor and retention
  declared here. ``create_missing_topics`` creates them; it never alters an existing topic.

**Keys** are ``tenant/agent``: Kafka's default partitioner hashes the key (murmur2), so one
agent's records stay in one partition and therefore in order.

**Retention: the log is kept forever** (``cleanup.policy=delete`` with ``retention.ms=-1`` and
``retention.bytes=-1``). The log is the audit: every view is rebuilt by replaying the topics
from offset 0, and ``explain`` reads the records behind an item. A record that expired would
silently drop rows from every rebuilt view and holes from every explanation, so nothing may
expire. ``compact`` is not an option either: it keeps only the newest record *per key*, and
the key is the agent, so compaction would delete almost the whole history. Storage grows
without bound; the remedy is tiered storage or a bigger disk, never a shorter retention.

**Partitions** are fixed up front: Kafka can add partitions but never remove them, and adding
some remaps keys to partitions, which breaks per-agent order across the change. The count
caps how many workers of one consumer group can share a topic.

**Replication**: 1 on the single-node development broker (``deploy/kafka``). In production use
3 replicas with ``min.insync.replicas=2`` (``create_missing_topics(replication_factor=3)``
derives the 2) and the producer's ``acks=all``: an acknowledged append then survives the loss
of any one broker, and appends fail rather than silently lose durability when two are down.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # aiokafka is only needed in distributed mode; the embedded path never imports it
    from aiokafka.admin import AIOKafkaAdminClient

DEFAULT_PREFIX = "hindbrain."
REPLICATION_FACTOR = 1  # the development broker has one node; production: 3 (see the module docstring)

# The audit log is kept forever (see the module docstring). retention.bytes is -1 by default too,
# but a cluster-wide log.retention.bytes would otherwise apply: state it per topic.
RETENTION = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}

_LEGAL_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")  # Kafka's own rule for topic names
_TOPIC_ALREADY_EXISTS = 36  # Kafka protocol error codes
_TOPIC_AUTHORIZATION_FAILED = 29


@dataclass(frozen=True)
class Topic:
    name: str
    record_type: str | None  # None: a topic no record type is declared for (tests, tools)
    partitions: int = 4


TOPICS = (
    # Agents write these, at fleet volume: 4 partitions, so up to 4 workers share each topic.
    Topic("perceptions", "perception", partitions=4),
    Topic("cognitions", "cognition", partitions=4),
    Topic("recalls", "recall", partitions=4),
    Topic("injections", "injection", partitions=4),
    Topic("outcomes", "outcome", partitions=4),
    # Learning jobs, not agents, write decisions: a few per job run. One partition gives every
    # consumer one total order of decisions across tenants and jobs (a belief induced, then
    # promoted, then retracted replays in exactly the order decided), at no throughput cost.
    Topic("decisions", "decision", partitions=1),
    # Dead letters are rare by design (a bad record) and read by people: one ordered stream.
    Topic("dead_letters", "dead_letter", partitions=1),
)
TOPIC_OF = {t.record_type: t.name for t in TOPICS}
# Not a record topic (no view projects it, replay does not read it as records): the neural
# tier's vectors, written by the embedder group (``streams.embedders``), keyed by text hash.
# A projection like the views, kept like the log so a replay rebuilds the tier without the model.
VECTORS = Topic("vectors", None, partitions=4)
DECLARED = {t.name: t for t in (*TOPICS, VECTORS)}


def key_of(record: dict) -> str:
    env = record["envelope"]
    return f"{env['tenant']}/{env['agent'] or ''}"


def kafka_name(name: str, prefix: str = DEFAULT_PREFIX) -> str:
    """The Kafka topic of a log topic. Raises ``ValueError`` if the result is not a legal Kafka name."""
    full = prefix + name
    if not _LEGAL_NAME.fullmatch(full) or full in {".", ".."}:
        raise ValueError(f"{full!r} is not a legal Kafka topic name (letters, digits, '.', '_', '-'; at most 249)")
    return full


def topic_config(replication_factor: int = REPLICATION_FACTOR) -> dict[str, str]:
    """Per-topic Kafka settings: kept forever, and with 3+ replicas an append needs 2 in sync."""
    return {**RETENTION, "min.insync.replicas": str(min(2, replication_factor))}


async def create_missing_topics(
    admin: AIOKafkaAdminClient,
    topics: Iterable[Topic] = TOPICS,
    *,
    prefix: str = DEFAULT_PREFIX,
    replication_factor: int = REPLICATION_FACTOR,
    timeout_s: float = 30.0,
) -> list[str]:
    """Create the Kafka topics (``prefix + name``) that do not exist yet; return the ones created.

    Idempotent and safe against concurrent callers: a topic that already exists, or that another
    client creates at the same moment, is left exactly as it is (its partitions and settings
    are not checked or altered). Returns once every created partition has a leader, so a
    producer or consumer can use it at once. ``admin`` is a started ``AIOKafkaAdminClient``.

    A principal without ``Create`` (a broker with ACLs: an agent's own client) is refused the creation even of
    a topic that exists; such a topic it may describe counts as existing, so a client can use the topics granted
    to it without the right to create them (docs/distributed.md, "A brain behind the broker's ACLs").

    Raises ``aiokafka.errors.KafkaError`` (the broker's error for the first topic it refused,
    e.g. an invalid config; ``TopicAuthorizationFailedError`` for a topic this principal may neither create nor
    see) and ``TimeoutError`` if leaders do not appear within ``timeout_s``.
    """
    from aiokafka.admin import NewTopic
    from aiokafka.errors import for_code

    wanted = {kafka_name(t.name, prefix): t for t in topics}
    if not wanted:
        return []
    config = topic_config(replication_factor)
    response = await admin.create_topics(
        [NewTopic(name, t.partitions, replication_factor, topic_configs=config) for name, t in wanted.items()],
        timeout_ms=int(timeout_s * 1000),
    )
    created, refused = [], []
    for name, code, message in response.topic_errors:
        if code == 0:
            created.append(name)
        elif code == _TOPIC_AUTHORIZATION_FAILED:
            refused.append(name)
        elif code != _TOPIC_ALREADY_EXISTS:
            raise for_code(code)(f"creating Kafka topic {name!r}: {message}")
    if refused:  # described only when refused: a principal allowed to create pays no extra round trip
        unseen = not_visible(await admin.describe_topics(refused))
        if unseen:
            raise for_code(_TOPIC_AUTHORIZATION_FAILED)(
                f"Kafka topic {unseen[0]!r}: this client's principal may not create it nor see it (the broker's "
                "ACLs grant it no Create, and no Describe or it does not exist)")
    await asyncio.wait_for(_leaders_elected(admin, created), timeout_s)
    return sorted(created)


def not_visible(described: list[dict]) -> list[str]:
    """The topics of a DescribeTopics answer that do not exist for the asking principal (absent or not
    authorized: the broker answers both with an error), in order."""
    return [t["topic"] for t in described if t["error_code"] or not t["partitions"]]


async def _leaders_elected(admin: AIOKafkaAdminClient, names: list[str]) -> None:
    """Poll the metadata until every partition of these topics has a leader (KRaft propagates
    a new topic to the brokers' metadata caches asynchronously)."""
    while names:
        described = await admin.describe_topics(names)
        if all(not t["error_code"] and t["partitions"] and all(p["leader"] >= 0 for p in t["partitions"])
               for t in described):
            return
        await asyncio.sleep(0.05)  # poll interval; the caller's wait_for bounds the whole wait
