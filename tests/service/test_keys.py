"""API keys: bound to one tenant and one role, hashed at rest, revocable, shown once."""

import sqlite3

import pytest

from hindbrain.cli import main
from hindbrain.service.keys import KeyStore


def test_keys_are_hashed_at_rest_and_resolve_to_their_tenant(tmp_path):
    keys = KeyStore(tmp_path)
    acme, globex = keys.create("acme"), keys.create("globex")
    assert keys.tenant_of(acme) == "acme" and keys.tenant_of(globex) == "globex"
    secret = acme.split("_", 2)[2]
    stored = (tmp_path / "keys.sqlite").read_bytes()
    assert secret.encode() not in stored and acme.encode() not in stored
    rows = sqlite3.connect(tmp_path / "keys.sqlite").execute("SELECT secret_sha256 FROM keys").fetchall()
    assert len(rows) == 2 and all(len(r[0]) == 64 for r in rows)
    for bad in (None, "", "hb_", "nonsense", acme + "x", acme.replace("hb_", "xx_")):
        assert keys.tenant_of(bad) is None, bad


def test_the_cli_creates_lists_and_revokes_keys_with_their_roles(tmp_path, capsys):
    assert main(["--home", str(tmp_path), "keys", "create", "--tenant", "acme", "--label", "ci"]) == 0
    key = capsys.readouterr().out.strip()
    assert KeyStore(tmp_path).tenant_of(key) == "acme"
    assert main(["--home", str(tmp_path), "keys", "create", "--tenant", "acme", "--role", "analyst"]) == 0
    out = capsys.readouterr()
    analyst = out.out.strip()
    assert KeyStore(tmp_path).resolve(analyst).role == "analyst" and "analyst key of tenant 'acme'" in out.err
    assert main(["--home", str(tmp_path), "keys", "list"]) == 0
    key_id = key.split("_")[1]
    listed = capsys.readouterr().out
    assert f"{key_id}  acme  agent  live  ci" in listed  # agent: the least privilege, by default
    assert f"{analyst.split('_')[1]}  acme  analyst  live" in listed
    assert main(["--home", str(tmp_path), "keys", "revoke", key_id]) == 0
    assert KeyStore(tmp_path).tenant_of(key) is None
    assert main(["--home", str(tmp_path), "keys", "revoke", key_id]) == 1  # already revoked
    assert main(["--home", str(tmp_path), "keys", "create"]) == 2  # no tenant
    with pytest.raises(SystemExit) as refused:
        main(["--home", str(tmp_path), "keys", "create", "--tenant", "acme", "--role", "root"])
    assert refused.value.code == 2 and "invalid choice: 'root'" in capsys.readouterr().err
    assert len(KeyStore(tmp_path).list()) == 2
