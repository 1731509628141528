"""API keys, one tenant each, hashed at rest (MISSION G1: every request is bound to its tenant).

A key reads ``hb_<key id>_<secret>``. Only the key id, its tenant and the SHA-256 of the
secret are stored (``<home>/keys.sqlite``): the secret is 32 random bytes, so a plain hash is
enough (no salt or slow hash needed: there is nothing to guess), and the store never holds a
usable key. A revoked key keeps its row (who had access, until when) and stops resolving at
once, also on a running server: lookups are served from memory, and each one first asks
SQLite whether another connection changed the file since (``PRAGMA data_version``, a few
µs), reloading the live keys when it did.
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

PREFIX = "hb_"


@dataclass(frozen=True)
class KeyInfo:
    key_id: str
    tenant: str
    label: str
    created_us: int
    revoked_us: int | None


class KeyStore:
    def __init__(self, home: str | Path):
        self.path = Path(home) / "keys.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.execute("CREATE TABLE IF NOT EXISTS keys (key_id TEXT PRIMARY KEY, tenant TEXT NOT NULL, "
                       "secret_sha256 TEXT NOT NULL, label TEXT NOT NULL, created_us INTEGER NOT NULL, "
                       "revoked_us INTEGER)")
        self._reader = self._db()  # kept open: data_version only moves for *other* connections' commits
        self._lock = threading.Lock()
        self._version: int | None = None
        self._live: dict[str, tuple[str, str]] = {}  # key id → (tenant, secret digest)

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)

    def create(self, tenant: str, label: str = "") -> str:
        """A new key for ``tenant``; the only time the full key is ever shown."""
        if not tenant or not tenant.strip():
            raise ValueError("keys: field 'tenant': must not be empty")
        key_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
        with self._db() as db:
            db.execute("INSERT INTO keys VALUES (?, ?, ?, ?, ?, NULL)",
                       (key_id, tenant, _sha256(secret), label, time.time_ns() // 1000))
        return f"{PREFIX}{key_id}_{secret}"

    def revoke(self, key_id: str) -> bool:
        """Revoke by key id (or by the full key); False when no live key has that id."""
        key_id = _split(key_id)[0] if key_id.startswith(PREFIX) else key_id
        with self._db() as db:
            cur = db.execute("UPDATE keys SET revoked_us = ? WHERE key_id = ? AND revoked_us IS NULL",
                             (time.time_ns() // 1000, key_id))
        return cur.rowcount == 1

    def tenant_of(self, key: str | None) -> str | None:
        """The tenant a live key is bound to, else None (unknown, malformed or revoked)."""
        key_id, secret = _split(key or "")
        if not key_id:
            return None
        with self._lock:
            version = self._reader.execute("PRAGMA data_version").fetchone()[0]
            if version != self._version:
                self._live = {k: (t, d) for k, t, d in self._reader.execute(
                    "SELECT key_id, tenant, secret_sha256 FROM keys WHERE revoked_us IS NULL")}
                self._version = version
            row = self._live.get(key_id)
        if row is None or not hmac.compare_digest(row[1], _sha256(secret)):
            return None
        return row[0]

    def list(self, tenant: str | None = None) -> list[KeyInfo]:
        sql = "SELECT key_id, tenant, label, created_us, revoked_us FROM keys"
        with self._db() as db:
            rows = db.execute(sql + " WHERE tenant = ? ORDER BY created_us" if tenant else sql + " ORDER BY created_us",
                              (tenant,) if tenant else ()).fetchall()
        return [KeyInfo(*r) for r in rows]


def _sha256(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _split(key: str) -> tuple[str, str]:
    if not key.startswith(PREFIX) or key.count("_") < 2:
        return "", ""
    key_id, _, secret = key[len(PREFIX):].partition("_")
    return key_id, secret
