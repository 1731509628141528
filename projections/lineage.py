"""``lineage``: which records concern which subject (event, fragment, recall, decision ...).

A plain ClickHouse VIEW over the projected tables, not a table of its own: every fact it
shows is already a row somewhere (an event's own row, a feedback fact, a decision's
subject list), so storing it again would double the rows every record writes. Each row
keeps the log coordinates of its record, so ``Brain.explain`` reads the records
themselves from the log: the explanation is the evidence, not a summary of it.
"""

from __future__ import annotations

COLUMNS = (
    ("tenant", "String"),
    ("subject_id", "String"),
    ("relation", "String"),
    ("record_id", "String"),
    ("record_type", "String"),
    ("_topic", "String"),
    ("_partition", "UInt32"),
    ("_offset", "UInt64"),
)

# (source table, subject expression, relation expression, record id, record type, filter)
_PARTS = (
    ("events", "event_id", "'perceived'", "event_id", "'perception'", ""),
    ("fragments", "fragment_id", "'proposed'", "fragment_id", "'cognition'", ""),
    ("fragments", "arrayJoin(event_ids)", "'supports'", "fragment_id", "'cognition'", ""),
    ("feedback_signals", "item_id", "signal", "record_id",
     "multiIf(signal = 'recalled', 'recall', signal = 'injected', 'injection', 'outcome')", ""),
    ("recalls", "recall_id", "'issued'", "recall_id", "'recall'", ""),
    ("injections", "recall_id", "'injected_for'", "injection_id", "'injection'", ""),
    ("outcomes", "assumeNotNull(recall_id)", "'outcome_of'", "outcome_id", "'outcome'", "WHERE recall_id IS NOT NULL"),
    ("decisions", "arrayJoin(subject_ids)", "concat('decision:', kind)", "decision_id", "'decision'", ""),
    ("decisions", "arrayJoin(evidence_ids)", "'evidence_for_decision'", "decision_id", "'decision'", ""),
)


def view_sql(database: str) -> str:
    selects = [
        f"SELECT tenant, {subject} AS subject_id, CAST({relation} AS String) AS relation, {record} AS record_id, "
        f"CAST({record_type} AS String) AS record_type, CAST(_topic AS String) AS _topic, _partition, _offset "
        f"FROM `{database}`.`{table}` FINAL {where}".rstrip()
        for table, subject, relation, record, record_type, where in _PARTS
    ]
    return f"CREATE VIEW IF NOT EXISTS `{database}`.`lineage` AS\n" + "\nUNION ALL\n".join(selects)


def drop_sql(database: str) -> str:
    return f"DROP VIEW IF EXISTS `{database}`.`lineage`"
