"""Running the learner beside the embedded runner: restore, catch up, then follow appends.

The learner's offset is a consumer offset in the log, like the projector's. On open it
*restores* its state by folding the log up to that offset (its own decisions carry the
units' states), then *catches up* on what it has not processed (after a crash: the same
records get the same derived ids, so the views absorb repeats), then follows every batch
the Brain appends. Its records are appended like any other, so the views, the recall index
and replay see them. A record the rules fail on becomes a dead letter (stage ``learn``);
the stream goes on.

What the learner appends is appended after the record it learned from, in a call of its own.
When that append fails (a full disk), the record it learned from is durable already and its
writer must not hear an error (a retry would append it twice): the learner's records are held
and appended with the next batch (or at ``commit``), and until then its committed offset stays
at the record they came from, so a crash re-derives them on reopen instead of losing them.

A snapshot of the learner's state (``home/cache/learner.snapshot``, written on close and
every ``SNAPSHOT_EVERY`` records) lets a reopened brain fold only the log after it. It is a
cache: unreadable, from other rules, or ahead of the log, it is ignored and the log folded.

In a fleet (Kafka), ``kafka_learner.KafkaLearner`` feeds the same ``Learner`` from the topics.
"""

from __future__ import annotations

import logging
import pickle
from pathlib import Path

from hindbrain.learning.learner import Learner
from hindbrain.learning.lifecycle import RULE_VERSION
from hindbrain.learning.records import is_own
from hindbrain.recall import _scan
from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import now_us
from hindbrain.streams.processing import Decoded, dead_letter, decoded_entries
from hindbrain.streams.sqlite_log import ALL_TOPICS
from hindbrain.switching import LONG_TEXT_CHARS, RECALLS

CONSUMER = "learner"
COMMIT_EVERY = 2000  # records between offset commits (a commit is a durable write)
SNAPSHOT_EVERY = 100_000  # records between snapshots of the learner's state
SNAPSHOT_VERSION = 11  # 2: a tenant's state holds its recent event ids (Learner._repeated); 3: what a restore teaches;
# 4: those ids are a ``RecentSet`` of compact ids, and the last event per place keeps its id compact; 5: the last
# event's words are hashed the same in every process (``_scan.stable_hashes``; 4 kept the process's salted hash);
# 6: those words are the tokenizer's that end a word at a CJK character (a Latin name before Chinese text was one
# token with the clause): 5's hashes of such words would not match the next event's after an upgrade; 7: a tenant's
# state holds its proven units (``TenantState.proven``), which a 6 lacks; 8: the last event per place is a
# ``_scan.LastEvents`` (columns, places hashed), where a 7 holds a ``Recent`` of key tuples: a 7 is ignored and
# the log folded (a snapshot is a cache); 9: the state's classes live in ``learning.learner_state`` (an 8 names
# ``learning.learner``'s, which no longer hold them: it would not unpickle, and is folded again the same way); 10: a
# tenant's state holds who each recall was for (``TenantState.recalled_by``) and a unit who falsified it
# (``Unit.falsified_by``): a 9 lacks both and its units were decided without them, so it is folded again; 11: the
# state's class is ``learner_state.TenantState`` (a 10 names ``_Tenant``: it would not unpickle, and is folded again)

log = logging.getLogger(__name__)



def learn_dead_letters(failed: list[tuple[Decoded, Exception]]) -> list[tuple[str, dict]]:
    """A dead letter (stage ``learn``) for each record a rule failed on (``Learner.learn``'s second
    result), the record kept as encoded with the error named: the embedded and the Kafka learner's."""
    return [("dead_letter", dead_letter(decoded.position, "learn", f"{type(exc).__name__}: {exc}",
                                        registry.encode(decoded.record_type, decoded.record), now_us(),
                                        decoded.record["envelope"]["tenant"])) for decoded, exc in failed]

class LearnerRuntime:
    def __init__(self, log, runner, extractor=None, snapshot: Path | None = None):
        self.log, self.runner = log, runner
        self.learner = Learner(extractor)
        self.snapshot = snapshot  # a cache of the fold: the log stays the truth
        self._next = 0  # the first log offset not yet processed
        self._uncommitted = 0
        self._since_snapshot = 0
        self._already: set[str] = set()
        self._held: list = []  # records learned whose append failed, oldest first (module docstring)
        self._held_from: int | None = None  # the log offset of the first record they came from

    def start(self, chunk: int = 20_000) -> None:
        committed = self.log.committed(CONSUMER, ALL_TOPICS, 0)
        offset = self._load_snapshot(committed)
        while offset < committed and (entries := self.log.read_all(offset, min(chunk, committed - offset))):
            self.learner.process(decoded_entries(entries), restoring=True)
            offset = entries[-1].offset + 1
        self._next = committed
        # Records it appended after its last commit (then crashed) are not appended twice.
        self._already = {d.record["envelope"]["record_id"] for entries in _chunks(self.log, committed, chunk)
                         for d in decoded_entries(entries) if is_own(d.record)}
        while entries := self.log.read_all(self._next, chunk):
            self.observe(decoded_entries(entries), end=entries[-1].offset + 1)
        self._already = set()
        self.commit()
        self.runner.listeners.append(self.observe)

    def observe(self, batch: list[Decoded], end: int | None = None) -> None:
        """Runner listener: learn from an appended batch and append what was learned."""
        fresh = [d for d in batch if d.position.offset >= self._next]
        if not fresh:
            return
        self._next = end or fresh[-1].position.offset + 1
        out, failed = [], []
        for long_text, part in _long_text_parts(fresh):
            if long_text:
                RECALLS.give_way()  # a long text's learning waits for the recalls in flight (hindbrain/switching.py)
            learned, failing = self.learner.learn(part)  # a rule bug must not stop the stream; the record is kept
            out += learned
            failed += failing
        if self._already:
            out = [(rt, r) for rt, r in out if r["envelope"]["record_id"] not in self._already]
        out += learn_dead_letters(failed)
        self._uncommitted += len(fresh)
        if out:
            self._held += out
            if self._held_from is None:
                self._held_from = fresh[0].position.offset
        self._append_held()
        if self._uncommitted >= COMMIT_EVERY:
            self.commit()

    def _append_held(self) -> bool:
        """Append the records learned and not yet appended; False if the log refused them
        (they stay held, see the module docstring)."""
        if not self._held:
            return True
        held, self._held = self._held, []  # taken first: the append comes back here (observe)
        try:
            self.runner.submit(held)
        except Exception as exc:  # noqa: BLE001 - held and retried; the writer's own record is durable
            self._held[:0] = held
            log.warning("the learner's %d records are held: appending them failed: %s", len(self._held), exc)
            return False
        if not self._held:
            self._held_from = None
        return True

    def wait_until_caught_up(self, timeout_s: float = 30.0) -> None:
        """The embedded learner follows each append synchronously: always caught up."""

    def reading(self):
        """Hold while reading the learner's state outside ``observe`` (the SDK's ``approve``,
        ``invalidate``, ``pending_traits``): the group-commit thread's appends change it."""
        return self.log.lock

    def commit(self, snapshot: bool = False) -> None:
        """Commit the learner's offset; with ``snapshot`` (on close) or every
        ``SNAPSHOT_EVERY`` records, also write the snapshot of its state at that offset.
        While learned records are held, only up to the record they came from, no snapshot.

        Under the log's lock, as every ``observe`` runs: the group-commit thread's append feeds the
        learner, and a snapshot pickled meanwhile met a tenant's dict changing size (a close right
        after a recall, whose record that thread committed 5 ms later)."""
        with self.log.lock:
            self._commit(snapshot)

    def _commit(self, snapshot: bool) -> None:
        if not self._append_held():
            self.log.commit(CONSUMER, ALL_TOPICS, 0, self._held_from)
            return
        self._since_snapshot += self._uncommitted
        self._uncommitted = 0
        if self.snapshot is not None and (snapshot or self._since_snapshot >= SNAPSHOT_EVERY):
            self.log.commit(CONSUMER, ALL_TOPICS, 0, self._next)  # written first: a snapshot is never ahead of it
            self._write_snapshot()
        else:  # with the log's next append, no sync of its own (``SqliteLog.commit_later``; a crash re-derives)
            self.log.commit_later(CONSUMER, ALL_TOPICS, 0, self._next)

    def _write_snapshot(self) -> None:
        state = {"version": SNAPSHOT_VERSION, "rules": RULE_VERSION, "offset": self._next,
                 "tenants": self.learner.tenants, "counts": self.learner.counts}
        self.snapshot.parent.mkdir(parents=True, exist_ok=True)
        partial = self.snapshot.with_suffix(".partial")
        # streamed to the file: the whole pickle (~13 MB at 100k events) made in memory first, then written, was
        # ~10 ms of the ~90 ms snapshot on the caller's path (issue 28, round twenty-two); the same bytes
        with partial.open("wb") as out:
            pickle.dump(state, out, protocol=pickle.HIGHEST_PROTOCOL)
        partial.replace(self.snapshot)  # atomic: a crash leaves the previous snapshot
        self._since_snapshot = 0

    def _load_snapshot(self, committed: int) -> int:
        """The offset the fold starts from: the snapshot's (its state loaded) or 0."""
        if self.snapshot is None or not self.snapshot.exists():
            return 0
        try:
            state = pickle.loads(self.snapshot.read_bytes())
        except Exception:  # noqa: BLE001 - a cache must never stop a brain from opening
            return 0  # unreadable (or from another version of the code): fold the log instead
        if (state.get("version"), state.get("rules")) != (SNAPSHOT_VERSION, RULE_VERSION) or \
                state["offset"] > committed:
            return 0
        self.learner.tenants, self.learner.counts = state["tenants"], state["counts"]
        return state["offset"]


def _long_text_parts(batch: list[Decoded]) -> list[tuple[bool, list[Decoded]]]:
    """``batch`` cut before each record holding a long text, each part with whether it starts with one: the
    learner gives way to the recalls in flight before those, as it did before each long text's record."""
    # one C pass (``_scan.long_text_cuts``): this comprehension was ~0.2 µs of the learner's ~4.5 an event on
    # perceive_many's path (issue 28, round twenty-three)
    cuts = _scan.long_text_cuts(batch if type(batch) is list else list(batch), LONG_TEXT_CHARS)
    bounds = [0, *(n for n in cuts if n), len(batch)]
    starts = set(cuts)
    return [(a in starts, batch[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]


def _chunks(log, offset: int, chunk: int):
    while entries := log.read_all(offset, chunk):
        yield entries
        offset = entries[-1].offset + 1
