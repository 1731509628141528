"""``hindbrain replay``: rebuild every view from the log into a fresh warehouse, compare.

The live views are brought up to the end of the log first (as a Brain would on open),
then the log is replayed into an empty target and both digests are printed per view.
Progress (the two stages) goes to standard error (``hindbrain.progress``).
"""

from __future__ import annotations

from pathlib import Path

from hindbrain.progress import stage
from hindbrain.projections.warehouse import Warehouse
from hindbrain.settings import Settings
from hindbrain.streams.replay import replay, replay_size
from hindbrain.streams.runner import EmbeddedRunner
from hindbrain.streams.sqlite_log import SqliteLog

REPLAY_DATABASE = "hindbrain_replay"


def run_replay(home: Path, into: str | None, check: bool, workers: int = 0) -> int:
    settings = Settings(home=home)
    if not settings.log_path().exists():
        print(f"no log at {settings.log_path()}: nothing to replay")
        return 1
    log = SqliteLog(settings.log_path())
    try:
        live = Warehouse(settings.warehouse_url())
        try:
            with stage("the live views up to the end of the log", unit="records") as progress:
                live.migrate()
                progress.advance(EmbeddedRunner(log, live).catch_up())
                live_digest = live.digest()
        finally:
            live.close()
        # chDB serves one folder per process: the live warehouse is closed before the
        # target opens, so the target may be another chDB folder or a server.
        target = Warehouse(into or settings.warehouse_url(), database=REPLAY_DATABASE)
        try:
            with stage("replay into a fresh database", total=replay_size(log), unit="records") as progress:
                target.reset()
                report = replay(log, target, workers=workers, progress=progress.advance)
        finally:
            target.close()
    finally:
        log.close()
    print(f"replayed {report.records} records with {report.workers or 'no'} worker processes in {report.seconds:.2f}s "
          f"({report.records_per_second:,.0f} records/s), {report.dead_letters} dead-lettered")
    print(f"{'view':<18}{'rows':>10}  {'digest':<22}{'live':>6}")
    same = True
    for view, (rows, digest) in report.digest.items():
        equal = live_digest.get(view) == (rows, digest)
        same &= equal
        print(f"{view:<18}{rows:>10}  {digest:<22}{'same' if equal else 'DIFF':>6}")
    print("every view equals the live one" if same else "some views differ from the live ones")
    return 0 if same or not check else 1
