"""The cognitive units as the batch jobs see them: one row per fragment with its lifecycle
state and use, read once per run (the IO edge of consolidation, forgetting and archive)."""

from __future__ import annotations

from dataclasses import dataclass

from hindbrain.learning.lifecycle import LIVE
from hindbrain.projections.fragments import private_to

UNITS_SQL = """
SELECT f.tenant, f.fragment_id, f.condition, f.action, f.source, f.layer, f.citation, f.scope,
       toUnixTimestamp64Micro(f.ts) AS ts, ifNull(s.status, 'candidate') AS status,
       ifNull(s.confidence, f.confidence) AS confidence, ifNull(s.successes, 0) AS successes,
       ifNull(s.failures, 0) AS failures,
       greatest(toUnixTimestamp64Micro(f.ts), ifNull(u.last_used, 0)) AS last_used, ifNull(d.step, 0) AS step,
       ifNull(d.since, 0) AS step_since, f.agent, f.seed, sh.fragment_id != '' AS shared_later,
       ifNull(f.reason, '') AS reason
FROM (SELECT * FROM fragments FINAL) AS f
LEFT JOIN (SELECT tenant, fragment_id, status, confidence, successes, failures FROM unit_states FINAL) AS s
    USING (tenant, fragment_id)
LEFT JOIN (SELECT tenant, item AS fragment_id, toUnixTimestamp64Micro(max(ts)) AS last_used
           FROM outcomes FINAL ARRAY JOIN applied AS item GROUP BY tenant, item) AS u USING (tenant, fragment_id)
LEFT JOIN (SELECT tenant, subject_ids[1] AS fragment_id,
                  argMax(JSONExtractInt(payload_json, 'step'), ts) AS step,
                  argMax(JSONExtractInt(payload_json, 'idle_since_us'), ts) AS since
           FROM decisions FINAL WHERE kind = 'unit_decayed' GROUP BY tenant, fragment_id) AS d
    USING (tenant, fragment_id)
LEFT JOIN (SELECT DISTINCT tenant, subject_ids[1] AS fragment_id FROM decisions FINAL WHERE kind = 'unit_shared') AS sh
    USING (tenant, fragment_id)
"""


@dataclass(frozen=True)
class UnitRow:
    tenant: str
    fragment_id: str
    condition: str
    action: str
    source: str
    layer: str
    citation: str | None
    scope: dict
    ts_us: int
    status: str = "candidate"
    confidence: float = 0.6
    successes: int = 0
    failures: int = 0
    last_used_us: int = 0  # the newest outcome that applied it (else its own time)
    step: int = 0  # the accessibility-decay step last recorded (jobs.forgetting)
    step_since_us: int = 0  # the idle period that step belongs to
    agent: str | None = None  # who proposed it
    seed: bool = False
    shared_later: bool = False  # a unit_shared decision moved it into the shared memory
    reason: str = ""  # why the action works ("" when the unit gives none)

    @property
    def live(self) -> bool:
        return self.status in LIVE

    @property
    def owner(self) -> str | None:
        """The agent whose private memory holds it (None: the tenant's shared memory)."""
        return None if self.shared_later else private_to(self.agent, self.seed)


def read_units(warehouse) -> list[UnitRow]:
    return [UnitRow(*row) for row in warehouse.query(UNITS_SQL)]
