"""The embedded projector's column path for perceptions (``events.project_columns``, round fifteen)
gives the very rows of the per-record path (``events.project`` then ``Table.to_arrow``)."""

from __future__ import annotations

from hypothesis import given, reject, settings
from hypothesis import strategies as st

from hindbrain.brain import _perception, modelled
from hindbrain.projections import events
from hindbrain.projections.views import project_record
from hindbrain.schemas.api import InvalidInput
from hindbrain.streams.log import Position
from hindbrain.streams.processing import Decoded, ProjectedBatch, project_batch, project_perceptions

text = st.from_regex(r"[a-z请0-9][a-z请0-9 .,\n]{0,30}", fullmatch=True)
# An identifier as the API takes it (``schemas.api``: every character shown, no space at either end nor two in a
# row). Drawn as free text, one identifier in ten was refused, and a list of up to 20 perceptions was rejected
# whole more often than not: 88 of 148 cases drawn were thrown away (docs/speed.md, round thirty-three).
identifier = st.from_regex(r"[a-z请0-9]( ?[a-z请0-9.,]){0,15}", fullmatch=True)
perceptions = st.fixed_dictionaries({"tenant": st.sampled_from(["acme", "租户"]), "text": text}, optional={
    "agent": identifier, "task": identifier, "kind": st.sampled_from(["anomaly", "action", "observation", "message"]),
    "system": text, "action": text, "expected": text, "actual": text, "speaker": text, "session": identifier,
    "entities": st.lists(text, max_size=3), "scope": st.dictionaries(text, text, max_size=3),
    "success": st.booleans(), "polarity": st.floats(-1, 1), "emotion": text})


def decoded(fields: list[dict], first: int = 7) -> list[Decoded]:
    try:
        values = [modelled(f) for f in fields]
    except InvalidInput:  # what the API refuses never reaches a projector
        reject()
    return [Decoded(Position("perceptions", 0, first + n), "perception", _perception(v)) for n, v in enumerate(values)]


@settings(max_examples=60, deadline=None)
@given(st.lists(perceptions, min_size=1, max_size=20))
def test_the_column_path_gives_the_rows_of_the_per_record_path(fields):
    items = decoded(fields)
    rows = [row for d in items for row in project_record(d.record_type, d.record, d.position)["events"]]
    columns = events.project_columns([d.record for d in items], [d.position for d in items])
    assert columns.equals(events.TABLE.to_arrow(rows))
    assert columns.to_pylist() == events.TABLE.to_arrow(rows).to_pylist()


def test_a_batch_takes_the_perceptions_as_columns_and_leaves_the_rest_to_the_per_record_path():
    items = decoded([{"tenant": "acme", "text": "the export hangs"}, {"tenant": "acme", "text": "it hangs again"}])
    batch = ProjectedBatch()
    assert project_perceptions(items, batch) == []
    assert batch.count == 2 and [t.num_rows for t in batch.tables["events"]] == [2] and not batch.rows


def test_a_perception_the_columns_cannot_take_goes_to_the_per_record_path_which_dead_letters_it():
    items = decoded([{"tenant": "acme", "text": "the export hangs"}, {"tenant": "acme", "text": "it hangs again"}])
    broken = dict(items[1].record)
    del broken["speaker"]
    items[1] = items[1]._replace(record=broken)
    batch = ProjectedBatch()
    rest = project_perceptions(items, batch)
    assert rest == items and not batch.tables  # nothing taken: the per-record path says which record and why
    project_batch(rest, 0, batch)
    assert len(batch.rows["events"]) == 1 and [dl["stage"] for dl in batch.dead_letters] == ["project"]
