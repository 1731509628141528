"""When hindsight runs (design.md §E4, design.md §seed-002 pit 2): after more than ``min_new_events``
new events or ``max_days`` since the last run; otherwise it skips and says why. Running
on every event wasted compute and induced beliefs from noise; never running let them go stale.
"""

from __future__ import annotations

from dataclasses import dataclass

_US_PER_DAY = 86_400 * 1_000_000


@dataclass(frozen=True)
class TriggerPolicy:
    min_new_events: int = 500
    max_days: float = 3.0


def due(new_events: int, last_run_us: int | None, now_us: int, policy: TriggerPolicy) -> tuple[bool, str]:
    """(run?, why)."""
    if last_run_us is None:
        return (True, "never ran before") if new_events else (False, "no events yet")
    days = (now_us - last_run_us) / _US_PER_DAY
    if new_events > policy.min_new_events:
        return True, f"{new_events} new events > {policy.min_new_events}"
    if days > policy.max_days and new_events:
        return True, f"{days:.1f} days since the last run > {policy.max_days}"
    return False, (f"{new_events} new events ≤ {policy.min_new_events} and {days:.1f} days since the last run "
                   f"≤ {policy.max_days}")
