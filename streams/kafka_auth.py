"""How hindbrain's Kafka clients log in to the cluster: one frozen value, every client's options.

A broker with ACLs (``deploy/kafka`` ACL mode, docs/distributed.md "A brain behind the broker's ACLs") admits
only clients that authenticate, and then allows each principal its own topics. Every Kafka client hindbrain
starts (``KafkaLog``'s producer, reader, admin and committers, the projector's, learner's, index tail's and
embedders' consumers, the Faust workers, a replay's worker processes) takes its login from one ``KafkaAuth``,
so none can be forgotten: they all reach the cluster through ``KafkaLog.client_options`` or ``faust_credentials``.

Contract: a ``KafkaAuth`` is valid or is not made — ``ValueError`` naming the setting (its environment name)
that is wrong. The password is a ``SecretStr``: no repr, error or log line of this module shows it; it is
revealed only in the mapping handed to the client library.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr

PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL")
# The mechanisms aiokafka and Faust both speak with a user name and a password.
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True)
class KafkaAuth:
    """The login of every Kafka client of one process. The default (``PLAINTEXT``, no user) is no login at
    all: the development and test brokers' mode, and what every client did before this existed."""

    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str = "PLAIN"
    username: str | None = None
    password: SecretStr | None = None

    def __post_init__(self) -> None:
        reason = auth_problem(self.security_protocol, self.sasl_mechanism, self.username, self.password)
        if reason:
            raise ValueError(reason)

    @property
    def sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    def client_options(self) -> dict[str, Any]:
        """The keyword arguments an aiokafka client (producer, consumer, admin) takes for this login; empty
        without one, so a plain broker's clients are made exactly as before."""
        if not self.sasl:
            return {}
        options = {"security_protocol": self.security_protocol, "sasl_mechanism": self.sasl_mechanism,
                   "sasl_plain_username": self.username,
                   "sasl_plain_password": self.password.get_secret_value()}
        if (context := self.ssl_context()) is not None:
            options["ssl_context"] = context
        return options

    def ssl_context(self) -> ssl.SSLContext | None:
        """TLS for ``SASL_SSL``: the system's trusted CAs and host name checks; None over plain TCP."""
        return ssl.create_default_context() if self.security_protocol == "SASL_SSL" else None

    def faust_credentials(self):
        """The Faust app's ``broker_credentials`` for this login (None: none)."""
        if not self.sasl:
            return None
        import faust

        return faust.SASLCredentials(
            username=self.username, password=self.password.get_secret_value(), mechanism=self.sasl_mechanism,
            ssl_context=self.ssl_context())


def auth_problem(protocol: str, mechanism: str, username: str | None, password: SecretStr | None) -> str | None:
    """Why these settings are not a login hindbrain can use, naming the setting; None when they are.

    Credentials given to a ``PLAINTEXT`` protocol are refused rather than ignored: a deployment that set a
    password and forgot the protocol would otherwise run without logging in, and learn it only from the
    broker's refusals."""
    if protocol not in PROTOCOLS:
        return f"HINDBRAIN_KAFKA_SECURITY_PROTOCOL must be one of {', '.join(PROTOCOLS)}, not {protocol!r}"
    if mechanism not in MECHANISMS:
        return f"HINDBRAIN_KAFKA_SASL_MECHANISM must be one of {', '.join(MECHANISMS)}, not {mechanism!r}"
    given = password is not None and password.get_secret_value() != ""
    if not protocol.startswith("SASL_"):
        if username or given:
            return ("HINDBRAIN_KAFKA_SASL_USERNAME and HINDBRAIN_KAFKA_SASL_PASSWORD need "
                    "HINDBRAIN_KAFKA_SECURITY_PROTOCOL SASL_PLAINTEXT or SASL_SSL (it is PLAINTEXT)")
        return None
    if not username:
        return f"HINDBRAIN_KAFKA_SASL_USERNAME is required with HINDBRAIN_KAFKA_SECURITY_PROTOCOL={protocol}"
    if not given:
        return f"HINDBRAIN_KAFKA_SASL_PASSWORD is required with HINDBRAIN_KAFKA_SECURITY_PROTOCOL={protocol}"
    return None
