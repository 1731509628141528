"""API keys, one tenant and one role each, hashed at rest (design.md §G1: every request is bound
to its tenant; design.md §issue-19: least privilege per key, ``roles.py``).

A key reads ``hb_<key id>_<secret>``. Only the key id, its tenant, its role and the SHA-256
of the secret are stored (``<home>/keys.sqlite``): the secret is 32 random bytes, so a plain
hash is enough (no salt or slow hash needed: there is nothing to guess), and the store never
holds a usable key. A revoked key keeps its row (who had access, until when) and stops
resolving at once, also on a running server: lookups are served from memory, and each one
first asks SQLite whether another connection changed the file since (``PRAGMA data_version``,
a few µs), reloading the live keys when it did.

The schema is versioned (``PRAGMA user_version``): ``MIGRATIONS[n]`` takes a store from
version n to n + 1, so a store made by an older hindbrain is brought up to date when it is
opened, and a fresh store is built by the same steps (one schema, whichever way it came).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from hindbrain.schemas.api import valid_identifier
from hindbrain.service.roles import DEFAULT_ROLE, ROLES

PREFIX = "hb_"

MIGRATIONS = (
    # 1: keys bound to a tenant (design.md §issue-8)
    "CREATE TABLE IF NOT EXISTS keys (key_id TEXT PRIMARY KEY, tenant TEXT NOT NULL, secret_sha256 TEXT NOT NULL, "
    "label TEXT NOT NULL, created_us INTEGER NOT NULL, revoked_us INTEGER)",
    # 2: roles (design.md §issue-19). A key made before roles existed could call every route; it becomes
    # an admin key, the role that still can, so a running fleet is not cut off by an upgrade.
    # `keys list` shows them as admin: re-issue them with least privilege and revoke the old.
    "ALTER TABLE keys ADD COLUMN role TEXT NOT NULL DEFAULT 'admin'",
    # 3: a key bound to one agent (design.md §issue-19): it acts as that agent only. NULL: any agent of
    # its tenant, as every key before.
    "ALTER TABLE keys ADD COLUMN agent TEXT",
)


@dataclass(frozen=True)
class KeyInfo:
    """A key as ``list`` shows it: never its secret."""

    key_id: str
    tenant: str
    role: str
    label: str
    created_us: int
    revoked_us: int | None
    agent: str | None = None


@dataclass(frozen=True)
class LiveKey:
    """Who a live key speaks for (``KeyStore.resolve``): its tenant, its role, and the one
    agent it acts as (None: any agent of its tenant)."""

    key_id: str
    tenant: str
    role: str
    agent: str | None = None


class KeyStore:
    def __init__(self, home: str | Path):
        self.path = Path(home) / "keys.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            migrate(db)
        self._reader = self._db()  # kept open: data_version only moves for *other* connections' commits
        self._lock = threading.Lock()
        self._version: int | None = None
        self._live: dict[str, tuple[LiveKey, str]] = {}  # key id → (the key, its secret's digest)

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)

    def create(self, tenant: str, label: str = "", role: str = DEFAULT_ROLE, agent: str | None = None) -> str:
        """A new key for ``tenant`` with ``role`` (agent, analyst or admin; see ``roles.py``),
        bound to ``agent`` when given (it then acts as that agent only: ``roles.acting_agent``);
        the only time the full key is ever shown. Raises ValueError naming the field."""
        if not tenant or not tenant.strip():
            raise ValueError("keys: field 'tenant': must not be empty")
        if role not in ROLES:
            raise ValueError(f"keys: field 'role': must be one of {', '.join(ROLES)}, not {role!r}")
        if agent is not None and not agent.strip():
            raise ValueError("keys: field 'agent': must not be empty (leave it out for any agent)")
        valid_identifier("keys", "tenant", tenant)  # InvalidInput (a ValueError) naming the field
        if agent is not None:
            valid_identifier("keys", "agent", agent)
        key_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
        with self._db() as db:
            db.execute("INSERT INTO keys (key_id, tenant, secret_sha256, label, created_us, revoked_us, role, agent) "
                       "VALUES (?, ?, ?, ?, ?, NULL, ?, ?)",
                       (key_id, tenant, _sha256(secret), label, time.time_ns() // 1000, role, agent))
        return f"{PREFIX}{key_id}_{secret}"

    def revoke(self, key_id: str, tenant: str | None = None) -> bool:
        """Revoke by key id (or by the full key); with ``tenant``, only a key of that tenant.
        False when no such live key exists."""
        key_id = _split(key_id)[0] if key_id.startswith(PREFIX) else key_id
        with self._db() as db:
            cur = db.execute("UPDATE keys SET revoked_us = ? WHERE key_id = ? AND revoked_us IS NULL "
                             "AND (? IS NULL OR tenant = ?)", (time.time_ns() // 1000, key_id, tenant, tenant))
        return cur.rowcount == 1

    def resolve(self, key: str | None) -> LiveKey | None:
        """The tenant and role of a live key, else None (unknown, malformed or revoked).
        From memory, after one ``PRAGMA data_version`` read (see the module docstring)."""
        key_id, secret = _split(key or "")
        if not key_id:
            return None
        with self._lock:
            version = self._reader.execute("PRAGMA data_version").fetchone()[0]
            if version != self._version:
                self._live = {k: (LiveKey(k, t, r, a), d) for k, t, r, a, d in self._reader.execute(
                    "SELECT key_id, tenant, role, agent, secret_sha256 FROM keys WHERE revoked_us IS NULL")}
                self._version = version
            row = self._live.get(key_id)
        if row is None or not hmac.compare_digest(row[1], _sha256(secret)):
            return None
        return row[0]

    def tenant_of(self, key: str | None) -> str | None:
        """The tenant a live key is bound to, else None (unknown, malformed or revoked)."""
        live = self.resolve(key)
        return live.tenant if live else None

    def list(self, tenant: str | None = None) -> list[KeyInfo]:
        """Every key (of ``tenant``), live and revoked, oldest first."""
        sql = "SELECT key_id, tenant, role, label, created_us, revoked_us, agent FROM keys"
        with self._db() as db:
            rows = db.execute(sql + " WHERE tenant = ? ORDER BY created_us" if tenant else sql + " ORDER BY created_us",
                              (tenant,) if tenant else ()).fetchall()
        return [KeyInfo(*r) for r in rows]


def migrate(db: sqlite3.Connection) -> int:
    """Brings the store up to ``len(MIGRATIONS)``; returns the version it found. The write lock
    is taken first (``BEGIN IMMEDIATE``), so processes opening one store at once (the owner and
    its recall replicas) migrate it once."""
    db.execute("BEGIN IMMEDIATE")
    try:
        found = db.execute("PRAGMA user_version").fetchone()[0]
        if found > len(MIGRATIONS):
            raise RuntimeError(f"keys.sqlite is at schema version {found}, newer than this hindbrain knows "
                               f"({len(MIGRATIONS)}): upgrade hindbrain")
        for step in MIGRATIONS[found:]:
            db.execute(step)
        db.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return found


def _sha256(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _split(key: str) -> tuple[str, str]:
    if not key.startswith(PREFIX) or key.count("_") < 2:
        return "", ""
    key_id, _, secret = key[len(PREFIX):].partition("_")
    return key_id, secret
