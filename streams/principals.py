"""The broker's principals as senders: a perceptions topic per principal, and what each may speak for.

An agent principal ``P`` on a broker with ACLs may write one LITERAL topic, ``<prefix>perceptions.by.<P>``
(``deploy/kafka/acl_properties.py``), so every record on that topic was written by ``P``: the topic is the
attestation, at no cost per record. The brain's settings bind each principal to what it may speak for
(``HINDBRAIN_KAFKA_PRINCIPALS`` = ``P=tenant[/agent]`` entries, comma-separated): a tenant, or one agent of it.
``binding_reason`` is the check ``processing.invalid_reason`` runs for every record of such a topic, on every
path: a record naming another tenant or another agent, or on the topic of a principal the settings do not bind,
is a dead letter with its reason (docs/distributed.md, "The broker's principal is the sender, round thirty-three").

Pure: no IO, no settings read here (``Settings.kafka_principals`` parses the variable with ``parse_principals``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

SETTING = "HINDBRAIN_KAFKA_PRINCIPALS"
# The log topic a principal's perceptions travel on is this prefix and its name (Kafka's: ``prefix`` + it).
TOPIC_PREFIX = "perceptions.by."
# One partition a principal: a 100-agent fleet is 100 partitions; one principal's records keep one order.
PARTITIONS = 1
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")  # a topic name's characters (Kafka's rule), no leading dot


@dataclass(frozen=True)
class Binding:
    """What principal ``principal`` may speak for: every agent of ``tenant``, or only ``agent``."""

    principal: str
    tenant: str
    agent: str | None = None

    def __str__(self) -> str:
        return f"{self.tenant}/{self.agent}" if self.agent else f"{self.tenant} (any agent)"


class Principals(Mapping[str, Binding]):
    """The bindings by principal: read-only, and picklable (a replay's worker processes get the log's)."""

    __slots__ = ("_by",)

    def __init__(self, bindings: Iterable[Binding] = ()):
        self._by = {b.principal: b for b in bindings}

    def __getitem__(self, principal: str) -> Binding:
        return self._by[principal]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by)

    def __len__(self) -> int:
        return len(self._by)

    def __repr__(self) -> str:
        return f"Principals({list(self._by.values())!r})"

    def __reduce__(self):
        return Principals, (tuple(self._by.values()),)


NO_PRINCIPALS = Principals()


def parse_principals(text: str | None) -> Principals:
    """``HINDBRAIN_KAFKA_PRINCIPALS`` (``P=tenant[/agent]``, comma-separated; blank: none) as bindings by principal.
    Raises ``ValueError`` naming the setting and the entry: a missing ``=``, an empty principal or tenant, a
    principal that cannot be part of a topic name, an empty agent after ``/``, a principal bound twice."""
    out: dict[str, Binding] = {}
    for entry in (text or "").split(","):
        if not entry.strip():
            continue
        binding = _binding(entry.strip())
        if binding.principal in out:
            raise ValueError(f"{SETTING} entry {entry.strip()!r}: principal {binding.principal!r} is bound twice")
        out[binding.principal] = binding
    return Principals(out.values())


def _binding(entry: str) -> Binding:
    """One ``P=tenant[/agent]`` entry, or ``ValueError`` naming it."""
    def refused(why: str) -> ValueError:
        return ValueError(f"{SETTING} entry {entry!r}: {why} (expected principal=tenant or principal=tenant/agent)")

    principal, sep, speaks_for = (part.strip() for part in entry.partition("="))
    if not sep:
        raise refused("no '='")
    if not _NAME.fullmatch(principal):
        raise refused(f"the principal {principal!r} is not a name a topic can carry (letters, digits, '.', '_', "
                      "'-', not starting with '.')")
    tenant, slash, agent = (part.strip() for part in speaks_for.partition("/"))
    if not tenant:
        raise refused("the tenant is empty")
    if slash and not agent:
        raise refused("the agent after '/' is empty")
    return Binding(principal, tenant, agent or None)


def principal_topic(principal: str) -> str:
    """The log topic principal ``principal``'s perceptions travel on."""
    return TOPIC_PREFIX + principal


def principal_of(topic: str) -> str | None:
    """The principal whose topic ``topic`` is (a log topic, without the Kafka prefix), or None."""
    return topic.removeprefix(TOPIC_PREFIX) if topic.startswith(TOPIC_PREFIX) else None


def binding_reason(principals: Principals, principal: str, tenant: str, agent: str | None) -> str | None:
    """Why a record on principal ``principal``'s topic naming ``tenant``/``agent`` cannot be taken, or None: its
    principal is not bound, or it names another tenant, or another agent than the one the principal is bound to."""
    binding = principals.get(principal)
    if binding is None:
        return f"topic {principal_topic(principal)!r} is principal {principal!r}'s, which {SETTING} does not bind"
    if tenant != binding.tenant or (binding.agent is not None and agent != binding.agent):
        return f"principal {principal!r} speaks for {binding}, not {tenant}/{agent or ''}"
    return None
