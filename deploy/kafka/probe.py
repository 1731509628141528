#!/usr/bin/env python3
"""Small helpers for kafka-up.sh / kafka-down.sh, standard library only (no lsof/nc needed).

    probe.py free-port              print a free TCP port on 127.0.0.1
    probe.py port-free PORT         exit 0 if nothing listens on 127.0.0.1:PORT and it can be bound
    probe.py cluster-id             print a random Kafka cluster id (base64url of 16 bytes, 22 chars)
    probe.py ready PORT [NODE_ID]   exit 0 if the broker on 127.0.0.1:PORT answers Kafka requests:
                                    ApiVersions, then a Metadata request whose broker list holds
                                    NODE_ID (only registered, unfenced brokers are listed)
    probe.py grant-agent PORT PREFIX
                                    (ACL mode) as the brain, allow the agent principal to write and
                                    describe its own topic, PREFIX + "perceptions.by.agent", and
                                    nothing else (CreateAcls, LITERAL)

In ACL mode (HINDBRAIN_KAFKA_ACL=1) the broker's listener is SASL_PLAINTEXT: ``ready`` and
``grant-agent`` log in with PLAIN as ``brain`` (HINDBRAIN_KAFKA_BRAIN_PASSWORD) first.
"""

from __future__ import annotations

import base64
import os
import socket
import struct
import sys

HOST = "127.0.0.1"
API_METADATA = 3
API_SASL_HANDSHAKE = 17
API_VERSIONS = 18
API_CREATE_ACLS = 30
API_SASL_AUTHENTICATE = 36
# CreateAcls codes (org.apache.kafka.common.acl / resource): a literal topic, allow
TOPIC, LITERAL, ALLOW = 2, 3, 3
WRITE, DESCRIBE = 4, 8
# The topics an agent principal's own producer may write: its perceptions topic, ``perceptions.by.<principal>``
# (docs/distributed.md, "The broker's principal is the sender, round thirty-three"): the topic names its writer,
# so the brain knows who wrote every record on it. The shared ``perceptions``, decisions, cognitions and every
# other topic are the brain's. (hindbrain.streams.principals names the topic the same way; this script imports
# nothing of hindbrain.)
AGENT = "agent"


def agent_topics(principal: str = AGENT) -> tuple[str, ...]:
    return (f"perceptions.by.{principal}",)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def port_free(port: int) -> bool:
    # Something answering a connect means busy; then make sure we could bind it ourselves.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as c:
        c.settimeout(0.5)
        if c.connect_ex((HOST, port)) == 0:
            return False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def cluster_id() -> str:
    # Same form as org.apache.kafka.common.Uuid.randomUuid().toString(); Kafka avoids ids that
    # start with '-' (they read like a command-line flag).
    while True:
        cid = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by broker")
        buf += chunk
    return buf


def _request(sock: socket.socket, api_key: int, version: int, corr: int, body: bytes) -> bytes:
    client_id = b"hindbrain-probe"
    # Request header v1: api_key, api_version, correlation_id, client_id (nullable string).
    header = struct.pack(">hhih", api_key, version, corr, len(client_id)) + client_id
    payload = header + body
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    size = struct.unpack(">i", _recv_exact(sock, 4))[0]
    resp = _recv_exact(sock, size)
    (got,) = struct.unpack(">i", resp[:4])  # response header v0: correlation_id
    if got != corr:
        raise ValueError(f"correlation id {got} != {corr}")
    return resp[4:]


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        vals = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return vals[0] if len(vals) == 1 else vals

    def string(self) -> str | None:
        n = self.take(">h")
        if n < 0:
            return None
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s


def _str(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def sasl_login(sock: socket.socket, user: str, password: str) -> None:
    """SASL/PLAIN on a fresh connection (SaslHandshake v1, SaslAuthenticate v1); raises if refused."""
    r = _Reader(_request(sock, API_SASL_HANDSHAKE, 1, 101, _str("PLAIN")))
    if (err := r.take(">h")) != 0:
        raise ValueError(f"SaslHandshake error {err}")
    token = b"\0" + user.encode() + b"\0" + password.encode()
    r = _Reader(_request(sock, API_SASL_AUTHENTICATE, 1, 102, struct.pack(">i", len(token)) + token))
    if (err := r.take(">h")) != 0:
        raise ValueError(f"SaslAuthenticate error {err}: {r.string()}")


def _connect(port: int, timeout: float) -> socket.socket:
    """A connection to the broker, logged in as the brain in ACL mode."""
    sock = socket.create_connection((HOST, port), timeout=timeout)
    sock.settimeout(timeout)
    if os.environ.get("HINDBRAIN_KAFKA_ACL") == "1":
        try:
            sasl_login(sock, "brain", os.environ["HINDBRAIN_KAFKA_BRAIN_PASSWORD"])
        except BaseException:
            sock.close()
            raise
    return sock


def grant_agent(port: int, prefix: str, timeout: float = 10.0, principal: str = AGENT) -> None:
    """Allow ``User:<principal>`` to write and describe ``prefix`` + each of ``agent_topics(principal)``, LITERAL
    names (CreateAcls v1)."""
    creations = [struct.pack(">b", TOPIC) + _str(prefix + topic) + struct.pack(">b", LITERAL)
                 + _str(f"User:{principal}") + _str("*") + struct.pack(">bb", operation, ALLOW)
                 for topic in agent_topics(principal) for operation in (WRITE, DESCRIBE)]
    with _connect(port, timeout) as sock:
        r = _Reader(_request(sock, API_CREATE_ACLS, 1, 3, struct.pack(">i", len(creations)) + b"".join(creations)))
    r.take(">i")  # throttle_time_ms
    for _ in range(r.take(">i")):
        err, message = r.take(">h"), r.string()
        if err:
            raise ValueError(f"CreateAcls error {err}: {message}")


def ready(port: int, node_id: int = 1, timeout: float = 3.0) -> tuple[bool, str]:
    try:
        with _connect(port, timeout) as sock:
            # ApiVersions v0: empty body; always answered, whatever the broker's version.
            r = _Reader(_request(sock, API_VERSIONS, 0, 1, b""))
            err = r.take(">h")
            if err != 0:
                return False, f"ApiVersions error {err}"
            versions = {}
            for _ in range(r.take(">i")):
                key, lo, hi = r.take(">hhh")
                versions[key] = (lo, hi)
            lo, hi = versions.get(API_METADATA, (0, -1))
            if not lo <= 4 <= hi:
                # Metadata v4 (the last non-flexible version) is outside what this broker serves:
                # ApiVersions answering means request processing is on, which is enough.
                return True, f"ApiVersions ok (Metadata v{lo}-v{hi}, probe skipped it)"
            # Metadata v4: topics = [] (none), allow_auto_topic_creation = false.
            r = _Reader(_request(sock, API_METADATA, 4, 2, struct.pack(">ib", 0, 0)))
            r.take(">i")  # throttle_time_ms
            brokers = []
            for _ in range(r.take(">i")):
                nid = r.take(">i")
                host = r.string()
                bport = r.take(">i")
                r.string()  # rack
                brokers.append((nid, host, bport))
            cid = r.string()
            if not any(b[0] == node_id for b in brokers):
                return False, f"node {node_id} not yet registered/unfenced (brokers={brokers})"
            return True, f"cluster {cid}, brokers {brokers}"
    except (OSError, ValueError, struct.error) as e:
        return False, f"{type(e).__name__}: {e}"


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    cmd = argv[0]
    if cmd == "free-port":
        print(free_port())
        return 0
    if cmd == "port-free":
        return 0 if port_free(int(argv[1])) else 1
    if cmd == "cluster-id":
        print(cluster_id())
        return 0
    if cmd == "ready":
        ok, why = ready(int(argv[1]), int(argv[2]) if len(argv) > 2 else 1)
        if os.environ.get("PROBE_VERBOSE"):
            print(why, file=sys.stderr)
        return 0 if ok else 1
    if cmd == "grant-agent":
        grant_agent(int(argv[1]), argv[2])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
