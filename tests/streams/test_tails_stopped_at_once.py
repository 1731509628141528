"""A tail stopped before its first poll stops cleanly.

aiokafka's group-less consumer creates a task in ``start()`` that ``stop()`` cancels and awaits;
cancelled before its first step, it raised ``CancelledError`` out of the brain's close (a brain
over Kafka closed just after it opened, under load: test_kafka_lost_parts once). The tail here is
told to stop before it starts, so its loop never polls: the condition arranged, not hoped for.
(The vector tail awaits a seek before its loop, which gives the task its turn: no test can make it
fail today; it starts its consumer the same way all the same.)
"""

from __future__ import annotations

from hindbrain.streams.kafka_runner import IndexTail


def test_an_index_tail_stopped_before_its_first_poll_stops_cleanly(kafka):
    with kafka.log() as log:
        seen = []
        tail = IndexTail(log, {}, seen.extend)
        tail._stop.set()  # the loop's condition is false from the start: start(), then stop() at once
        tail.start()
        tail.stop()  # raises what ended the loop
        assert not tail.alive and seen == []
