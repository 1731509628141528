"""A chDB session that starts from its engine's description as another session read it (``DescribedSession``).

It builds on clickhouse-connect's private start (``Client._init_common_settings``, its ``init_sequence``), checked
at import: a version where those moved raises ``ImportError`` here, and ``warehouse`` then opens every session the
public way (each reading the engine itself: slower, never different)."""

from __future__ import annotations

from clickhouse_connect.driver._backend.models import ClientConfig
from clickhouse_connect.driver._backend.orchestration import InitializationResult, init_sequence, run_sync
from clickhouse_connect.driver._chdbclient import ChdbClient

if not all(hasattr(ChdbClient, name) for name in ("_init_common_settings", "_apply_init_result", "_execute_operation")):
    raise ImportError("clickhouse-connect's ChdbClient start is not the one DescribedSession builds on")


class DescribedSession(ChdbClient):
    """A chDB session that starts from its engine's description as another session of that engine read it
    (``described``), or reads it and keeps it as ``described`` for the next. clickhouse-connect's client start
    reads the engine's version, time zone and its ~1,300 settings (``system.settings``: ~6 ms of CPU a session,
    most of it a ``SettingDef`` made of each row), and a warehouse opens four sessions at a brain's open. What
    a new session reads there is the engine's defaults, whichever session asks: a session's own settings are
    set after its start (``settings=``, ``SET``), so one reading serves every session of the engine (of the
    default ``tz_source``: the only one used here)."""

    def __init__(self, path: str, described: InitializationResult | None = None, **options):
        self.described = described
        super().__init__(path=path, **options)

    def _init_common_settings(self, tz_source) -> None:
        # clickhouse-connect's own start (``Client._init_common_settings``), its reading done once
        if self.described is None:
            config = ClientConfig(settings=self._initial_settings or {}, timezone_policy=tz_source)
            self.described = run_sync(init_sequence(config), self._execute_operation)
        self._apply_init_result(self.described)
