#!/usr/bin/env python3
"""Print the server.properties lines of kafka-up.sh's ACL mode (appended after the template's: a later
key wins): every listener SASL_PLAINTEXT with PLAIN, the standard authorizer, nothing allowed without
an ACL, and three principals — ``broker`` (the JVM talking to itself: a password drawn at each start),
``brain`` (a super user: the projector, the learner, the replicas) and ``agent`` (an agent's own
producer: kafka-up.sh grants it its own perceptions topic, ``perceptions.by.agent``, probe.py
``grant-agent``). Ports from BROKER_PORT and CONTROLLER_PORT, passwords from HINDBRAIN_KAFKA_BRAIN_PASSWORD and
HINDBRAIN_KAFKA_AGENT_PASSWORD. Standard library only."""

from __future__ import annotations

import os
import secrets


def jaas_value(text: str) -> str:
    """A JAAS option value, quoted (a quote or backslash in a password escaped)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def acl_properties(broker_port: str, controller_port: str, brain: str, agent: str, broker: str) -> str:
    login = f"org.apache.kafka.common.security.plain.PlainLoginModule required username=\"broker\" " \
            f"password={jaas_value(broker)} user_broker={jaas_value(broker)}"
    return "\n".join([
        "",
        "############################# ACL mode (kafka-up.sh, HINDBRAIN_KAFKA_ACL=1) #############################",
        f"listeners=SASL_PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
        f"advertised.listeners=SASL_PLAINTEXT://127.0.0.1:{broker_port}",
        "inter.broker.listener.name=SASL_PLAINTEXT",
        "listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms=PLAIN",
        "sasl.mechanism.inter.broker.protocol=PLAIN",
        "sasl.mechanism.controller.protocol=PLAIN",
        "listener.name.controller.sasl.enabled.mechanisms=PLAIN",
        f"listener.name.controller.plain.sasl.jaas.config={login};",
        f"listener.name.sasl_plaintext.plain.sasl.jaas.config={login} user_brain={jaas_value(brain)} "
        f"user_agent={jaas_value(agent)};",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users=User:broker;User:brain",
        "allow.everyone.if.no.acl.found=false",
        "",
    ])


if __name__ == "__main__":
    print(acl_properties(os.environ["BROKER_PORT"], os.environ["CONTROLLER_PORT"],
                         os.environ["HINDBRAIN_KAFKA_BRAIN_PASSWORD"], os.environ["HINDBRAIN_KAFKA_AGENT_PASSWORD"],
                         secrets.token_urlsafe(24)), end="")
