"""Packaging: the top-level folders install as ``hindbrain.*`` and nothing else.

(a) The editable install (``pip install -e .``, what ``make install`` does) maps ``schemas/``,
``streams/`` ... to ``hindbrain.schemas``, ``hindbrain.streams`` ..., ships the ``.avsc`` files,
and does not put ``streams`` or ``schemas`` on everyone's import path.

(b) A built wheel, installed with ``--no-deps`` into a fresh venv, works on its own: from a
neutral folder it imports hindbrain from that venv (not from this checkout), reads and writes
records with the registry, and runs a Brain. The fresh venv sees the dependencies already
installed here through a ``.pth`` file, so the test downloads nothing at install time. Building
the wheel uses the current environment's setuptools when it satisfies ``[build-system]
requires`` (the dev extra installs it: ``make install``) and otherwise lets ``build`` make its usual
isolated environment, which needs the package index (and took ~3 s more on a busy machine).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from importlib import metadata, resources
from pathlib import Path

import pytest

import hindbrain.streams

REPO = Path(__file__).resolve().parents[1]
SUBPACKAGES = {"schemas": "schemas", "streams": "streams", "projections": "projections", "recall": "recall",
               "jobs": "jobs"}  # hindbrain.<name> -> the repo folder it comes from
SHIPPED_AVSC = sorted(p.name for p in (REPO / "schemas" / "avro").glob("*.avsc"))
# Not needed to build a wheel, and some are large or private (the dev venv, Kafka's cache).
NOT_COPIED = {".git", ".venv", "build", "dist", "tests", "bench", "deploy", "docs", "reports", ".hindbrain",
              ".ci", "__pycache__", ".pytest_cache", ".ruff_cache"}


def _env() -> dict[str, str]:
    """The caller's environment without what would make a subprocess find code or data by accident."""
    return {k: v for k, v in os.environ.items()
            if k not in {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"} and not k.startswith("HINDBRAIN_")}


def _run(args: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(map(str, args))} exited {done.returncode}\n--- stdout\n{done.stdout[-4000:]}\n"
        f"--- stderr\n{done.stderr[-4000:]}"
    )
    return done


def _inside(path: str | Path, folder: Path) -> bool:
    return Path(path).resolve().is_relative_to(folder.resolve())


# -- (a) the editable install ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def editable():
    """Skip (a) when hindbrain is installed from a wheel: (b) covers that install."""
    if not _inside(hindbrain.__file__, REPO):
        pytest.skip(f"hindbrain is imported from {hindbrain.__file__}, not from an editable install of {REPO}")


@pytest.mark.parametrize("name,folder", sorted(SUBPACKAGES.items()))
def test_editable_subpackages_come_from_the_repo_folders(editable, name, folder):
    module = importlib.import_module(f"hindbrain.{name}")
    assert Path(module.__file__).resolve() == REPO / folder / "__init__.py"


def test_editable_hindbrain_comes_from_the_repo(editable):
    assert Path(hindbrain.__file__).resolve() == REPO / "hindbrain" / "__init__.py"
    assert Path(hindbrain.streams.__file__).resolve().parent == REPO / "streams"


def test_schemas_ship_their_avsc_files():
    folder = resources.files("hindbrain.schemas") / "avro"
    shipped = {e.name: e.read_bytes() for e in folder.iterdir() if e.name.endswith(".avsc")}
    assert sorted(shipped) == SHIPPED_AVSC
    assert "perception.v1.avsc" in shipped and "perception.v2.avsc" in shipped
    for name, content in shipped.items():
        assert content == (REPO / "schemas" / "avro" / name).read_bytes()


_NEUTRAL_IMPORT_CHECK = textwrap.dedent(
    """
    import importlib.util, json, sys
    import hindbrain, hindbrain.schemas, hindbrain.streams, hindbrain.projections, hindbrain.recall, hindbrain.jobs

    top_level = {}
    for name in ("schemas", "streams", "projections", "recall", "jobs"):
        spec = importlib.util.find_spec(name)
        top_level[name] = None if spec is None else [spec.origin, *(spec.submodule_search_locations or [])]
    loaded = {name: getattr(module, "__file__", None) for name, module in list(sys.modules.items())}
    print(json.dumps({"top_level": top_level, "loaded": loaded, "streams": hindbrain.streams.__file__,
                      "schemas": hindbrain.schemas.__file__, "sys_path": sys.path}))
    """
)


def test_top_level_names_do_not_resolve_to_our_folders(editable, tmp_path):
    """From a neutral folder, ``import streams``/``import schemas`` must not find this repo's folders."""
    done = _run([sys.executable, "-c", _NEUTRAL_IMPORT_CHECK], cwd=tmp_path)
    report = json.loads(done.stdout)
    assert _inside(report["streams"], REPO / "streams")
    assert _inside(report["schemas"], REPO / "schemas")
    for name, where in report["top_level"].items():
        assert where is None or not any(p and _inside(p, REPO) for p in where), (
            f"`import {name}` resolves to this repo ({where}): the install leaks a top-level package"
        )
    # The project's own virtualenv may live inside the repo (make creates .venv there): its
    # site-packages is the installation, not the source tree.
    venv = Path(sys.prefix)

    def in_source_tree(path: str) -> bool:
        # Relative entries ('' = the subprocess's neutral cwd, the editable finder's hook
        # name) are not folders of this repo; resolving them here would use pytest's cwd.
        return Path(path).is_absolute() and _inside(path, REPO) and not _inside(path, venv)

    for name, file in report["loaded"].items():
        if file and in_source_tree(file):
            assert name == "hindbrain" or name.startswith("hindbrain."), f"{name} was imported from {file}"
    assert not any(p and in_source_tree(p) for p in report["sys_path"]), "the repo is on sys.path"


# -- (b) the wheel ------------------------------------------------------------------------------------------


def _build_wheel(source: Path, outdir: Path) -> subprocess.CompletedProcess:
    base = [sys.executable, "-m", "build", "--wheel", "--outdir", outdir]
    offline = subprocess.run([str(a) for a in [*base, "--no-isolation"]], cwd=source, env=_env(),
                             capture_output=True, text=True, timeout=600)
    if offline.returncode == 0:
        return offline
    # The current environment lacks the build requirements (e.g. a newer setuptools): let `build`
    # install them into an isolated environment, as `pip wheel .` would.
    return _run(base, cwd=source)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    if importlib.util.find_spec("build") is None:
        reason = "the 'build' package is not installed (it is a dev dependency: pip install -e '.[dev]')"
        print(f"SKIP wheel tests: {reason}")
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"  # build in a copy: setuptools writes build/ and *.egg-info next to pyproject.toml
    shutil.copytree(REPO, source, ignore=lambda folder, names: [
        n for n in names if n in NOT_COPIED or n.endswith((".egg-info", ".pyc", ".so"))  # the build compiles its own
    ])
    _build_wheel(source, work / "dist")
    wheels = list((work / "dist").glob("hindbrain-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_the_wheel_holds_only_the_hindbrain_package(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    version = metadata.version("hindbrain")
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"hindbrain", f"hindbrain-{version}.dist-info"}, tops
    for folder in ["hindbrain", *(f"hindbrain/{name}" for name in SUBPACKAGES)]:
        assert f"{folder}/__init__.py" in names
    assert sorted(n.rsplit("/", 1)[1] for n in names if n.endswith(".avsc")) == SHIPPED_AVSC
    assert all(n.startswith("hindbrain/schemas/avro/") for n in names if n.endswith(".avsc"))
    assert "hindbrain/sim/recall_bench.json" in names  # the measured numbers the learning report charts
    assert "hindbrain/recall/static_use.npz" in names  # the fast semantic tier's distilled table
    assert "hindbrain/recall/fusion_trees_use_e5_dialogue.json" in names  # a dialogue's trees (recall.e5_dialogue)
    assert [n for n in names if n.startswith("hindbrain/recall/_scan.") and n.endswith(".so")]  # compiled by the build
    assert [n for n in names if n.startswith("hindbrain/schemas/_avro.") and n.endswith(".so")]  # the Avro writer
    assert not [n for n in names if "/tests/" in n or n.startswith("tests/")]


def _fresh_venv(where: Path, wheel: Path) -> Path:
    """A venv holding only the wheel; returns its python. Dependencies come from this interpreter."""
    pip_version = tuple(int(p) for p in metadata.version("pip").split(".")[:2])
    if pip_version >= (22, 3):  # `pip --python` installs into another environment: no pip needed in the venv
        _run([sys.executable, "-m", "venv", "--without-pip", where], cwd=where.parent)
        python = where / "bin" / "python"
        # --no-compile: the smoke run imports a handful of modules; byte-compiling all of them is time spent for nothing
        _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "--quiet",
              "--no-compile", wheel], cwd=where.parent)
    else:
        _run([sys.executable, "-m", "venv", where], cwd=where.parent)
        python = where / "bin" / "python"
        _run([python, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", "--no-compile", wheel],
             cwd=where.parent)
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=where).stdout
    # Lines of a .pth are appended to sys.path after the venv's own site-packages, so the venv's
    # hindbrain wins over anything of ours on those paths (whose own .pth files are not run).
    ours = [p for p in dict.fromkeys([*site.getsitepackages(), sysconfig.get_paths()["purelib"]]) if Path(p).is_dir()]
    (Path(purelib.strip()) / "_hindbrain_test_dependencies.pth").write_text("\n".join(ours) + "\n")
    return python


_WHEEL_SMOKE = textwrap.dedent(
    """
    import json, sys
    from importlib import resources
    from pathlib import Path

    import hindbrain
    import hindbrain.streams
    from hindbrain import Brain
    from hindbrain.schemas import registry
    from hindbrain.schemas.records import envelope

    golden, home = Path(sys.argv[1]), Path(sys.argv[2])
    record_type, old = registry.decode(golden.read_bytes())
    record = {"envelope": envelope("perception", "acme", agent="agent-7"), "kind": "message", "text": "hello"}
    again = registry.decode(registry.encode("perception", record))

    brain = Brain.open(home)
    try:
        event_id = brain.perceive(tenant="acme", agent="agent-7", kind="anomaly",
                                  text="clicked submit in IAM, nothing happened")
        pack = brain.recall(tenant="acme", query="IAM submit nothing happened")
        recalled = [i for item in pack.items for i in item.event_ids]
        rendered = pack.render()
    finally:
        brain.close()
    print(json.dumps({
        "prefix": sys.prefix,
        "hindbrain": hindbrain.__file__,
        "streams": hindbrain.streams.__file__,
        "avsc": sorted(e.name for e in (resources.files("hindbrain.schemas") / "avro").iterdir()),
        "old": [record_type, old["emotion"], old["envelope"]["schema_version"]],
        "roundtrip": [again[0], all(again[1][k] == v for k, v in record.items()), again[1]["emotion"]],
        "event_id": event_id,
        "recalled": recalled,
        "rendered": rendered,
    }))
    """
)


def test_the_wheel_works_in_a_fresh_venv(wheel, tmp_path):
    venv = tmp_path / "venv"
    python = _fresh_venv(venv, wheel)
    neutral = tmp_path / "elsewhere"
    neutral.mkdir()
    golden = REPO / "tests" / "golden" / "perception.v1.bin"
    done = _run([python, "-c", _WHEEL_SMOKE, golden, tmp_path / "brain"], cwd=neutral)
    report = json.loads(done.stdout.strip().splitlines()[-1])

    assert _inside(report["prefix"], venv)
    assert _inside(report["hindbrain"], venv) and not _inside(report["hindbrain"], REPO), report["hindbrain"]
    assert _inside(report["streams"], venv)
    assert report["avsc"] == SHIPPED_AVSC
    assert report["old"] == ["perception", None, 1]
    assert report["roundtrip"] == ["perception", True, None]
    assert report["event_id"] in report["recalled"]
    assert "clicked submit in IAM" in report["rendered"]
    assert (tmp_path / "brain" / "log.sqlite").is_file()
    assert (venv / "bin" / "hindbrain").is_file(), "the `hindbrain` console script is installed"
