"""The fleet's views projected again from the topics' start, when they lost rows of rounds committed before.

A part the warehouse acknowledged and its disk did not keep (``Warehouse.check_written``) is found
after a round's inserts; when it held only that round's blocks, the round fails uncommitted and is
projected again from the group's committed offsets. When it held blocks of earlier rounds (a merge
a full disk broke: ``PartsNotWritten.earlier``), or the engine set a part aside as broken when it
loaded it (``Warehouse.broken_parts``), the lost rows are of offsets the group committed long ago,
of any partition (a merge mixes them), some owned by other workers; nothing records which. So the
views are rebuilt in place: every partition of every topic read from its start to its end as it is
then (``streams.replay``: no group, nothing committed; the views deduplicate the rows they hold),
while the group goes on past those ends as before.

The need is recorded in the broker before anything is dropped or replayed, and cleared only once the
replay returned: a worker that dies meanwhile (a second full disk, a SIGKILL) leaves it, and whichever
worker of the group starts next rebuilds (``rebuild_if_needed``). It is the committed offset of a
group of its own (``<group>.rebuild``, which no consumer joins) on one partition: 1 pending, 0 not.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from hindbrain.projections.warehouse import PartsNotWritten, Warehouse
from hindbrain.streams.replay import ReplayReport, replay
from hindbrain.streams.topics import TOPICS

log = logging.getLogger(__name__)

MARK = (TOPICS[0].name, 0)  # the topic and partition whose offset in ``marker_group`` records the need


def marker_group(group: str) -> str:
    """The group whose committed offset says that ``group``'s views are to be rebuilt."""
    return f"{group}.rebuild"


def pending(kafka_log, group: str) -> bool:
    return kafka_log.committed(marker_group(group), *MARK) > 0


def rebuild(kafka_log, warehouse: Warehouse, group: str, broken=()) -> ReplayReport:
    """Records the need, drops the ``broken`` detached parts, projects every topic again from its start,
    clears the need. Raises what the replay raises (the need stays recorded)."""
    kafka_log.commit(marker_group(group), *MARK, 1)
    warehouse.drop_detached(broken)
    report = replay(kafka_log, warehouse)
    kafka_log.commit(marker_group(group), *MARK, 0)
    log.warning("the views of %s were projected again from the topics' start: %d records in %.1f s",
                group, report.records, report.seconds)
    return report


def rebuild_if_needed(kafka_log, warehouse: Warehouse, group: str) -> ReplayReport | None:
    """At a projector's start: ``rebuild`` when the engine found parts broken as it loaded them, or a
    rebuild was left unfinished; None (one query and one offset fetched) otherwise."""
    broken = warehouse.broken_parts()
    if broken:
        log.warning("the views lost parts the engine found broken at open (%s)",
                    ", ".join(f"{table}/{part}" for table, part in broken))
    if broken or pending(kafka_log, group):
        return rebuild(kafka_log, warehouse, group, broken)
    return None


def insert_or_rebuild(insert: Callable[[], None], kafka_log, warehouse: Warehouse, group: str) -> None:
    """``insert()`` (a fetch's rows and the parts check); when the check finds rows of earlier rounds lost,
    ``rebuild``, which projects this fetch's records too (fetched, so before the topics' ends). A loss of
    the round's own rows raises as before: the fetch is not committed, and is projected again."""
    try:
        insert()
    except PartsNotWritten as exc:
        if not exc.earlier:
            raise
        log.warning("%s: rows of rounds committed before are gone; projecting the topics again", exc)
        rebuild(kafka_log, warehouse, group)
