"""Opening a Brain in distributed mode: Kafka is the log, ClickHouse (or chDB) the views.

Two shapes, one code path for writes and reads:

* ``clickhouse="chdb:///path"`` (single node): chDB serves one process per folder, so this
  Brain runs the projecting consumer (``KafkaProjector``) itself, in a background thread,
  and the fleet's learner (``KafkaLearner``) in another.
* ``clickhouse="http://host:8123"``: ``hindbrain worker`` processes (Faust) project and one
  ``hindbrain learner`` process learns; the Brain only appends and reads. Start at least one
  worker, or ``sql``/``explain`` wait for the projection in vain and time out saying so.

In both, the recall index is built from the views, then kept current by ``IndexTail`` from
where the views end (records of other Brains arrive within about ``POLL_S`` plus a fetch),
and this Brain's own records are indexed the moment they are appended.
"""

from __future__ import annotations

from hindbrain.learning.kafka_learner import KafkaLearner
from hindbrain.projections.warehouse import Warehouse
from hindbrain.settings import Settings
from hindbrain.streams.gc_pause import Refreezer
from hindbrain.streams.kafka_log import KafkaLog
from hindbrain.streams.kafka_runner import IndexTail, KafkaProjector, KafkaRunner
from hindbrain.streams.rebuild import rebuild_if_needed


def view_positions(warehouse: Warehouse) -> dict[tuple[str, int], int]:
    """Per (topic, partition), the next offset after the last record the views hold."""
    rows = warehouse.query(" UNION ALL ".join(
        f"SELECT _topic, _partition, max(_offset) + 1 FROM {view} GROUP BY _topic, _partition"
        for view in ("events", "fragments", "outcomes", "decisions")))
    return {(topic, partition): offset for topic, partition, offset in rows}


def learner_group(cfg: Settings) -> str:
    """The learner's consumer group (its committed offsets), beside the projector's."""
    return f"{cfg.worker_group}.learner"


def open_distributed(brain_cls, cfg: Settings, extractor=None):
    from hindbrain.brain import extractor_of, open_views

    log = KafkaLog.of(cfg)
    warehouse = open_views(cfg, log)
    runner = KafkaRunner(log, cfg.worker_group, perceptions_topic=cfg.perceptions_topic())
    brain = brain_cls(log, warehouse, cfg, runner=runner)
    # The index loads the views and then follows the topics from where the views end: both read
    # before this process's projector starts inserting, or a batch projected between the two
    # reads would be in the positions but not in the index (a replayed brain once indexed none
    # of its events that way: tests/streams/test_kafka_embedders.py). With a ClickHouse server,
    # other workers project meanwhile and that window remains (docs/distributed.md).
    single_node = cfg.warehouse_url().startswith("chdb://")
    if single_node:  # views that lost rows are rebuilt before the index loads them (streams/rebuild.py)
        rebuild_if_needed(log, warehouse, cfg.worker_group)
    brain.index.load(warehouse)
    positions = view_positions(warehouse)
    if single_node:
        projector = KafkaProjector(log, warehouse, cfg.worker_group, cfg.batch_size)
        projector.start()
        brain.services.append(projector)
        learner = KafkaLearner(log, learner_group(cfg), extractor or extractor_of(cfg), cfg.batch_size)
        learner.start()  # single node: this process is the fleet's one learner
        brain.services.append(learner)
        brain.learning = learner
    refreeze = Refreezer()  # what the index holds, out of the full collections (streams/gc_pause.py)

    def index_then_refreeze(batch: list) -> None:
        brain.index.observe(batch)
        refreeze(batch)

    tail = IndexTail(log, positions, index_then_refreeze)
    tail.start()
    brain.services.append(tail)
    if cfg.kafka_embedders and brain.index.semantic is not None:
        from hindbrain.recall.semantic import EmbeddingCache
        from hindbrain.streams.embedders import VectorTail

        model = brain.index.semantic.embedder  # the vectors land where the following index looks for them
        vectors = VectorTail(log, EmbeddingCache(cfg.home / "cache" / "embeddings.sqlite", model.name, model.dim))
        vectors.start()
        brain.services.append(vectors)
    brain.runner.listeners += [brain.index.observe, refreeze]
    return brain
