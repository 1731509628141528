"""The workers (``hindbrain worker``): Kafka records → pure projectors → the warehouse.

Two engines run the same pipeline: a plain aiokafka consumer (the default, ``run_worker``)
and the Faust agent below (``--engine faust``). What follows describes the Faust agent; the
plain one does the same steps per fetch (``streams.kafka_runner.KafkaProjector``).

The agent is thin. For every batch, in this order:
 1. take up to ``batch_size`` events, or what arrived within ``batch_within`` seconds
    (``stream.take_events``, which acknowledges nothing by itself);
 2. decode, validate and project each record with the same pure code as the embedded
    runner (``streams.processing.project_batch``);
 3. send every record that failed a step to the dead-letter topic as a ``DeadLetter``
    record and wait for the broker's acks (it comes back through that topic into the
    ``dead_letters`` view, exactly as a replay would derive it);
 4. insert each table's rows into the warehouse, one Arrow insert per table, and wait (when the
    parts check finds rows of earlier rounds lost, the views are rebuilt from the topics' start
    first: ``streams.rebuild``);
 5. only then return to ``take_events``, which acknowledges the batch; Faust commits the
    acknowledged offsets on its commit interval.
A crash anywhere before 5 redelivers the batch to whichever worker owns the partition next,
and a step that fails (2-4) is turned into such a crash: the process exits at once with status
70, committing nothing (``take_events`` would otherwise acknowledge the failed batch). The
views are ``ReplacingMergeTree`` tables keyed by record identity, so a redelivered record
never counts twice. Authoritative state is the warehouse: the app has no Tables.
"""

from __future__ import annotations

import asyncio
import logging
import os
from functools import partial

import faust

from hindbrain.projections.warehouse import Warehouse
from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import now_us
from hindbrain.settings import Settings
from hindbrain.streams.kafka_log import KafkaLog
from hindbrain.streams.kafka_runner import group_timing
from hindbrain.streams.log import LogEntry
from hindbrain.streams.principals import principal_topic
from hindbrain.streams.processing import ProjectedBatch, project_batch
from hindbrain.streams.rebuild import insert_or_rebuild, rebuild_if_needed
from hindbrain.streams.sink import insert_batch
from hindbrain.streams.topics import TOPICS, kafka_name, key_of

log = logging.getLogger(__name__)


def make_app(settings: Settings, warehouse: Warehouse | None = None) -> faust.App:
    """A Faust app whose one agent projects every hindbrain topic into ``warehouse``
    (opened from ``settings`` on first use when not given)."""
    if not settings.kafka:
        raise ValueError("the worker needs HINDBRAIN_KAFKA (bootstrap servers, host:port)")
    timing = group_timing(settings.worker_session_timeout)  # the session the aiokafka engine's consumer keeps too
    # Faust makes its datadir on start with ``mkdir(exist_ok=True)``, no parents: under a home that did not exist
    # yet (a first ``hindbrain worker --engine faust``) the worker stopped with FileNotFoundError (round thirty-two).
    settings.home.mkdir(parents=True, exist_ok=True)
    app = faust.App(
        settings.worker_group,
        broker=f"kafka://{settings.kafka}",
        broker_credentials=settings.kafka_auth().faust_credentials(),  # the workers log in as the brain does
        store="memory://",
        web_enabled=False,
        consumer_auto_offset_reset="earliest",
        producer_acks=-1,
        topic_disable_leader=True,
        # Fetch and buffer whole batches: with Faust's defaults (1 MB per partition per fetch,
        # poll 500, buffer 4096) one worker projected 3.2k events/s of 1.2 KB; with these 9.5k.
        broker_max_poll_records=settings.batch_size,
        stream_buffer_maxsize=4 * settings.batch_size,
        consumer_max_fetch_size=16 * 1024 * 1024,
        broker_commit_interval=0.5,
        broker_session_timeout=timing["session_timeout_ms"] / 1000,
        broker_heartbeat_interval=timing["heartbeat_interval_ms"] / 1000,
        datadir=str(settings.home / "faust"),  # not ./<app id>-data in whatever folder it starts
        key_serializer="raw",
        value_serializer="raw",
    )
    # The declared topics and the bound principals' perceptions topics (``streams.principals``), each checked against
    # the settings' bindings. Named, not by the aiokafka engine's pattern: Faust's consumer passes aiokafka both a
    # topic list and the pattern, which it refuses (TypeError), so an unbound principal's topic is read by the
    # aiokafka engine only (docs/distributed.md, round thirty-three).
    prefix, principals = settings.kafka_prefix, settings.principal_bindings()
    names = [kafka_name(t, prefix) for t in (*(t.name for t in TOPICS), *map(principal_topic, principals))]
    source = app.topic(*names, key_type=bytes, value_type=bytes)
    dead_letters = app.topic(kafka_name("dead_letters", settings.kafka_prefix), key_type=bytes, value_type=bytes)
    views: dict = {}

    def warehouse_now() -> Warehouse:
        """The views, opened on first use; rebuilt first if they lost rows (``streams.rebuild``), whose
        replay reads the topics through a log client of the worker's own."""
        if "views" not in views:
            views["log"] = KafkaLog.of(settings)
            views["views"] = warehouse or Warehouse(settings.warehouse_url())
            views["views"].migrate()
            rebuild_if_needed(views["log"], views["views"], settings.worker_group)
        return views["views"]

    @app.agent(source)
    async def project(stream):
        async for events in stream.take_events(settings.batch_size, settings.batch_within):
            try:
                batch = project_batch([log_entry(e.message, prefix) for e in events], now_us(), principals=principals)
                await _send_dead_letters(dead_letters, batch)
                views_ = await asyncio.to_thread(warehouse_now)  # a rebuild there is long: off the event loop
                await asyncio.to_thread(insert_or_rebuild, partial(insert_batch, views_, batch), views["log"], views_,
                                        settings.worker_group)
            except Exception:
                _exit_uncommitted()

    app.hindbrain_project_agent = project  # for tests: the agent, by name
    return app


def log_entry(message, prefix: str) -> LogEntry:
    """A Kafka message (on a topic of ``prefix``) as the pure pipeline reads it. A tombstone (null value, which a
    foreign producer may write) is an empty value, dead-lettered like any other: as ``None`` it made the
    dead letter itself fail, the batch exit the worker, and every restart meet it again."""
    key = message.key.decode("utf-8", "replace") if message.key else None
    return LogEntry(message.topic.removeprefix(prefix), message.partition, message.offset, key, message.value or b"")


EXIT_BATCH_FAILED = 70  # EX_SOFTWARE


def _exit_uncommitted() -> None:
    """A batch failed (the warehouse or the dead-letter topic refused it): exit now.

    Not raise: ``take_events`` acknowledges a batch in a ``finally``, so when this body raises
    it acknowledges the failed batch anyway, Faust restarts the agent and commits offsets past
    records that never reached the warehouse (silent loss). ``os._exit`` runs no shutdown code,
    so nothing is acknowledged or committed; the batch is redelivered to whichever worker owns
    its partitions next (this one, restarted by its supervisor, or another after the session
    timeout)."""
    log.critical("projecting a batch failed: exiting without committing it", exc_info=True)
    logging.shutdown()  # flush the log handlers; os._exit does not
    os._exit(EXIT_BATCH_FAILED)


async def _send_dead_letters(topic, batch: ProjectedBatch) -> None:
    pending = [
        await topic.send(key=key_of(dl).encode(), value=registry.encode("dead_letter", dl))
        for dl in batch.dead_letters
    ]
    for delivered in pending:
        await delivered  # the broker acknowledged it (acks=all)
    if pending:
        log.warning("dead-lettered %d record(s): %s", len(pending), [d["reason"] for d in batch.dead_letters][:3])


ENGINES = ("faust", "aiokafka")


def run_worker(settings: Settings, loglevel: str = "info", engine: str = "aiokafka") -> None:
    """Run one worker until it is stopped (SIGTERM / Ctrl-C). Blocks.

    ``engine="aiokafka"`` (the default) runs the pipeline (``streams.kafka_runner.KafkaProjector``:
    fetch → project → dead letters → insert → commit) on a plain aiokafka consumer that takes
    whole fetches as a batch. ``engine="faust"`` is the Faust agent above, the same pipeline
    behind Faust's per-event stream machinery: profiled (docs/distributed.md), each event
    costs ~3 event-loop iterations, 4 tasks or futures and ~10 callbacks before the batch
    sees it, so one Faust worker projects ~9.5k events/s where the plain consumer does ~27k
    (``bench/distributed.py``).
    """
    if engine == "faust":
        faust.Worker(make_app(settings), loglevel=loglevel).execute_from_commandline()
    elif engine == "aiokafka":
        _run_plain_worker(settings, loglevel)
    else:
        raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")


def _run_plain_worker(settings: Settings, loglevel: str) -> None:
    import signal
    import threading

    from hindbrain.streams.kafka_log import KafkaLog
    from hindbrain.streams.kafka_runner import KafkaProjector

    logging.basicConfig(level=loglevel.upper())
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    log_ = KafkaLog.of(settings)
    warehouse = Warehouse(settings.warehouse_url())
    warehouse.migrate()
    projector = KafkaProjector(log_, warehouse, settings.worker_group, settings.batch_size,
                               settings.worker_session_timeout)
    projector.start()
    try:
        while not stop.wait(1.0):
            if not projector.alive:  # a batch failed: nothing of it was committed; exit like Faust's worker
                log.critical("the projector stopped: exiting without committing its last batch",
                             exc_info=projector.error)
                os._exit(EXIT_BATCH_FAILED)
    finally:
        projector.stop()  # leaves the group: its partitions move to the other workers
        warehouse.close()
        log_.close()
