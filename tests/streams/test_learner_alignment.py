"""The Kafka learner folds its topics in time across partitions (``kafka_learner._aligned``): catching up on a
backlog, a poll brought a topic's outcomes before the perceptions that made their units, and those outcomes
credited nothing — the fold-equality test over Kafka lost every verification 1 run in 4 once the learner read
a sixth topic (injections)."""

from hindbrain.learning.kafka_learner import HELD_BATCHES, _aligned
from hindbrain.streams.log import Position
from hindbrain.streams.processing import Decoded


def rec(topic, offset, ts):
    return Decoded(Position(topic, 0, offset), "x", {"envelope": {"ts_us": ts}})


def test_a_record_waits_until_every_partition_behind_is_read_up_to_its_time():
    outcome = rec("outcomes", 0, 50)
    perceptions = [rec("perceptions", n, ts) for n, ts in enumerate((10, 20))]
    fetched_to = {("outcomes", 0): 1, ("perceptions", 0): 2}
    ready, waiting, reached = _aligned([outcome, *perceptions], [("perceptions", 0)],
                                       {("perceptions", 0): 20, ("outcomes", 0): 50}, fetched_to, 100)
    assert ready == perceptions and waiting == [outcome]
    assert reached == {("outcomes", 0): 0, ("perceptions", 0): 2}  # the outcome's offset is not committed past
    later = rec("perceptions", 2, 40)  # the next poll reads perceptions past 50: all goes, in time order
    ready, waiting, reached = _aligned([*waiting, later, rec("perceptions", 3, 60)], [("perceptions", 0)],
                                       {("perceptions", 0): 60}, {("outcomes", 0): 1, ("perceptions", 0): 4}, 100)
    assert [d.record["envelope"]["ts_us"] for d in ready] == [40, 50, 60] and waiting == []
    assert reached == {("outcomes", 0): 1, ("perceptions", 0): 4}


def test_caught_up_partitions_bound_nothing_and_a_batch_is_at_most_the_limit():
    held = [rec("outcomes", n, 100 - n) for n in range(5)]
    ready, waiting, reached = _aligned(held, [], {}, {("outcomes", 0): 5}, 3)
    assert [d.record["envelope"]["ts_us"] for d in ready] == [96, 97, 98] and len(waiting) == 2
    assert reached == {("outcomes", 0): 0}  # offsets 0 and 1 still wait: nothing of the partition is committed past


def test_what_waits_is_bounded():
    held = [rec("outcomes", n, 100 + n) for n in range(HELD_BATCHES * 2 + 1)]
    ready, waiting, _ = _aligned(held, [("perceptions", 0)], {("perceptions", 0): 1}, {("outcomes", 0): 17}, 2)
    assert [d.record["envelope"]["ts_us"] for d in ready] == [100, 101] and len(waiting) == len(held) - 2
