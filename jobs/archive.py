"""Capacity and cold storage (design.md §F4–F5, design.md §seed-001-4.2, design.md §seed-004-8): the wall clock
keeps active memory small without deleting anything (the log keeps it all).

* **Capacity per kind, value-based eviction** (``units_evicted``): when a tenant holds more
  than ``CAPACITY[layer]`` live units in a layer, the lowest-value ones are proposed for
  eviction — value = confidence × accessibility × (1 + successes) / (1 + failures) — and the
  learner archives them (``unit_archived``: kept in the views, no longer injected). Red-line
  units are never evicted.
* **Cold storage** (``events_cold``): perceived events older than ``COLD_AFTER_DAYS`` that
  no recall ever injected — and, beyond ``HOT_EVENTS`` per tenant (the timeline's
  watermark), the oldest never-injected ones — keep their summary (``SUMMARY_CHARS``) and
  vector in the recall index; the full text is dropped there (the log and the events view
  keep it; ``explain`` shows it).
"""

from __future__ import annotations

from hindbrain.jobs import forgetting
from hindbrain.jobs.units import UnitRow
from hindbrain.learning.records import decision
from hindbrain.projections.unit_states import UNITS_EVICTED
from hindbrain.recall.documents import COLD_SUMMARY_CHARS
from hindbrain.recall.index_decisions import EVENTS_COLD

PRODUCER = "hindsight/hindbrain"
JOB = "hindsight.archive"
CAPACITY = {"experience": 20_000, "knowledge": 20_000}
COLD_AFTER_DAYS = 30
HOT_EVENTS = 200_000
SUMMARY_CHARS = COLD_SUMMARY_CHARS
CHUNK = 5_000  # event ids per events_cold decision
_US_PER_DAY = 86_400 * 1_000_000

COLD_SQL = """
SELECT tenant, event_id, toUnixTimestamp64Micro(ts) AS ts
FROM events FINAL
WHERE event_id NOT IN (SELECT arrayJoin(item_ids) FROM injections)
  AND event_id NOT IN (SELECT arrayJoin(subject_ids) FROM decisions FINAL WHERE kind = 'events_cold')
ORDER BY tenant, ts
"""
HOT_SQL = "SELECT tenant, count() FROM events FINAL GROUP BY tenant"
COLD_COUNT_SQL = ("SELECT tenant, sum(length(subject_ids)) FROM decisions FINAL WHERE kind = 'events_cold' "
                  "GROUP BY tenant")


def value(unit: UnitRow, now_us: int) -> float:
    idle = (now_us - unit.last_used_us) / _US_PER_DAY
    return unit.confidence * forgetting.accessibility(idle, forgetting.volatility(unit)) * \
        (1 + unit.successes) / (1 + unit.failures)


def evictions(units: list[UnitRow], now_us: int, run_id: str, capacity: dict[str, int] | None = None
              ) -> list[tuple[str, dict]]:
    """A ``units_evicted`` proposal per tenant and layer over its capacity."""
    capacity = capacity or CAPACITY
    by_kind: dict[tuple[str, str], list] = {}
    for u in units:
        if u.live and u.layer in capacity:
            by_kind.setdefault((u.tenant, u.layer), []).append(u)
    out = []
    for (tenant, layer), live in sorted(by_kind.items()):
        over = len(live) - capacity[layer]
        candidates = [u for u in live if forgetting.volatility(u) != "red_line"]
        if over <= 0 or not candidates:
            continue
        ranked = sorted(candidates, key=lambda u: (value(u, now_us), u.ts_us, u.fragment_id))
        chosen = [u.fragment_id for u in ranked[:over]]
        out.append(decision(UNITS_EVICTED, tenant, chosen, [], f"{len(live)} live {layer} units > capacity "
                            f"{capacity[layer]}: the {len(chosen)} of lowest value are archived (kept, not injected)",
                            {"layer": layer, "evicted": chosen, "capacity": capacity[layer]}, now_us, JOB,
                            {"capacity": capacity, "value": "confidence x accessibility x (1+successes)/(1+failures)"},
                            f"{run_id}:{tenant}:{layer}", producer=PRODUCER))
    return out


def cold(warehouse, now_us: int, run_id: str) -> list[tuple[str, dict]]:
    """``events_cold`` decisions for the events that leave the hot timeline."""
    totals = dict(warehouse.query(HOT_SQL))
    already = dict(warehouse.query(COLD_COUNT_SQL))
    candidates: dict[str, list[tuple[str, int]]] = {}
    for tenant, event_id, ts in warehouse.query(COLD_SQL):
        candidates.setdefault(tenant, []).append((event_id, ts))
    out = []
    cutoff = now_us - COLD_AFTER_DAYS * _US_PER_DAY
    for tenant, events in sorted(candidates.items()):  # oldest first
        hot = totals.get(tenant, 0) - already.get(tenant, 0)
        chosen = []
        for event_id, ts in events:
            if ts < cutoff or hot > HOT_EVENTS:
                chosen.append(event_id)
                hot -= 1
        for n in range(0, len(chosen), CHUNK):
            ids = chosen[n:n + CHUNK]
            out.append(decision(EVENTS_COLD, tenant, ids, [], f"{len(ids)} events older than {COLD_AFTER_DAYS} days "
                                f"(or beyond {HOT_EVENTS:,} hot events) that no recall injected: summary and vector "
                                "kept, the full text stays in the log", {"summary_chars": SUMMARY_CHARS}, now_us, JOB,
                                {"cold_after_days": COLD_AFTER_DAYS, "hot_events": HOT_EVENTS},
                                f"{run_id}:{tenant}:{n}", producer=PRODUCER))
    return out

