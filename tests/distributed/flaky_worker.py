"""``hindbrain worker`` (Faust) whose warehouse refuses one insert: the first one made after
the file named by $HINDBRAIN_TEST_REFUSE_FLAG exists (a ClickHouse hiccup, on cue). Settings
come from HINDBRAIN_* as for the real command. Used by test_worker_proofs."""

from __future__ import annotations

import os
from pathlib import Path

import faust

from hindbrain.projections.warehouse import Warehouse
from hindbrain.settings import Settings
from hindbrain.streams.worker import make_app


class RefusesOnce(Warehouse):
    flag = Path(os.environ["HINDBRAIN_TEST_REFUSE_FLAG"])
    refused = False

    def insert_arrow(self, table, data) -> None:
        if not RefusesOnce.refused and self.flag.exists():
            RefusesOnce.refused = True
            raise ConnectionError(f"simulated: the warehouse refused an insert into {table.name}")
        super().insert_arrow(table, data)


if __name__ == "__main__":
    settings = Settings()
    app = make_app(settings, RefusesOnce(settings.warehouse_url()))
    faust.Worker(app, loglevel="warning").execute_from_commandline()
