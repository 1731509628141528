"""A directive split over two events of one thread (one speaker of one session or task): "from now on refunds go
to the account in my next message" … "999-000-1234" (``recall.provenance.split_cue``, design.md §issue-27). Each
new event is judged with the one said before it in its thread (``provenance.split_quarantine``), and both are
quarantined when together they carry a cue neither carries alone. The threads' last events are
``TenantIndex.last_said``, bounded by ``RECENT_THREADS``."""

from __future__ import annotations

from itertools import islice

from hindbrain.recall import _scan
from hindbrain.recall.documents import Doc
from hindbrain.recall.event_documents import EventColumns, said_fields_of
from hindbrain.recall.provenance import paired, split_quarantine

RECENT_THREADS = 50_000  # threads whose last event is kept for the split-directive cue, per tenant
# How many of the oldest threads ``TenantIndex._forget_oldest_thread`` reads ahead in one walk of the dict.
FORGET_AHEAD = 1024


class SplitDirectives:
    """``TenantIndex``'s judging of each added event with the one said before it in its thread (a base class of
    methods, no state of its own: they read the index's ``docs`` and keep its ``last_said`` and ``_oldest``)."""

    def _judge_batch(self, batch: EventColumns, first: int) -> None:
        """``_judge_with_previous`` of each event of ``batch`` (numbered from ``first``), in order."""
        quarantines, owners, sessions, tasks = batch["quarantine"], batch["owner"], batch["session"], batch["task"]
        for k, before_no in self._said_in_batch(owners, sessions, tasks, batch["speaker"], first):
            if quarantines[k] or not (sessions[k] or tasks[k]):
                continue
            owner = owners[k]
            j = before_no - first  # the event before it, in this batch (j >= 0) or in the table
            before = None if j >= 0 else self.docs.peek(before_no)
            if quarantines[j] if before is None else before.quarantine:
                continue
            said_before = batch.said_fields(j) if before is None else said_fields_of(before)
            if reason := split_quarantine(said_before, batch.said_fields(k), owner):
                quarantines[k] = reason
                if before is None:
                    quarantines[j] = paired(reason, batch["id"][k])
                else:
                    self.docs[before_no].quarantine = paired(reason, batch["id"][k])

    def _said_in_batch(self, owners: list, sessions: list, tasks: list, speakers: list,
                       first: int) -> list[tuple[int, int]]:
        """``_said_in`` of each event of a batch numbered from ``first``, in order, in one C call
        (``_scan.threads_said``: the per-event tuple, pop, store and call were ~0.7 µs an event at 100k, issue 28
        round twenty-one): ``(k, number said before)`` of each event ``k`` whose thread had one (most begin theirs).
        The same dict, order and read-ahead as the per-event calls (its oracle)."""
        found, self._oldest = _scan.threads_said(self.last_said, self._oldest, owners, sessions, tasks, speakers,
                                                 first, RECENT_THREADS, FORGET_AHEAD)
        return found

    def _said_in(self, thread: tuple, no: int) -> int | None:
        """Notes event ``no`` as ``thread``'s last (the newest thread last: the oldest is forgotten first) and
        returns the number of the event said before it in that thread, if one is remembered."""
        before_no = self.last_said.pop(thread, None)
        self.last_said[thread] = no
        if len(self.last_said) > RECENT_THREADS:
            self._forget_oldest_thread()
        return before_no

    def _judge_with_previous(self, doc: Doc, no: int, adding: dict[int, Doc]) -> None:
        """A directive in one event and its number in the next (one speaker of one session or
        task): both are quarantined (``recall.provenance.split_quarantine``). ``no``: ``doc``'s
        number; ``adding``: the documents of this batch not in the table yet, by number."""
        before_no = self._said_in((doc.owner, doc.session or doc.task, doc.speaker), no)
        if before_no is None or doc.quarantine or not (doc.session or doc.task):
            return
        before = adding.get(before_no) or self.docs.peek(before_no)  # read only: no object kept
        if before.quarantine:
            return
        if reason := split_quarantine(said_fields_of(before), said_fields_of(doc), doc.owner):
            doc.quarantine = reason
            changed = adding.get(before_no) or self.docs[before_no]  # kept: it changes
            changed.quarantine = paired(reason, doc.id)

    def _forget_oldest_thread(self) -> None:
        """Deletes ``last_said``'s first (least recently said) thread. ``next(iter(dict))`` walks every
        slot deleted before the first key, and with one thread forgotten an event past ``RECENT_THREADS``
        that was ~25 µs an event by 100k (issue 28). So the first ``FORGET_AHEAD`` (thread, number) pairs
        are read in one walk, and each is forgotten in turn unless its number changed since (said again:
        it moved to the end). Numbers only grow, so the first unchanged one is the oldest: the same thread
        the walk would find."""
        said = self.last_said
        of, ahead, at = self._oldest
        while True:
            if of is not said or at == len(ahead):  # a restored dict (index_snapshot) or the read-ahead used up
                of, ahead, at = said, list(islice(said.items(), FORGET_AHEAD)), 0
            thread, no = ahead[at]
            at += 1
            if said.get(thread) == no:
                del said[thread]
                self._oldest = (of, ahead, at)
                return

