"""``BrainThread``'s groups (hindbrain.service.http): a group of recalls alone opens no log
transaction, so the runner's committer never waits for a recall's CPU, nor a recall for the
committer's sync (docs/speed.md, "Served recalls, round twenty-one"); anything that writes is
still one transaction."""

from __future__ import annotations

import asyncio
import threading
import time

from hindbrain import Brain
from hindbrain.service.http import PERCEIVE, RECALL, BrainThread, writes_in_group


def _free_to_another_thread(lock) -> bool:
    """Whether a thread other than the caller could take ``lock`` now (an ``RLock`` is its holder's again)."""
    got: list[bool] = []

    def take() -> None:
        got.append(lock.acquire(timeout=0.2))
        if got[0]:
            lock.release()

    other = threading.Thread(target=take)
    other.start()
    other.join()
    return got[0]


def test_only_a_group_of_deferred_recalls_alone_stays_out_of_a_transaction():
    recall, perceive, learn = (RECALL, (), {}, None), (PERCEIVE, ({}, None), {}, None), (print, (), {}, None)
    assert not writes_in_group([recall, recall, recall], recalls_deferred=True)
    assert writes_in_group([recall, perceive], recalls_deferred=True)
    assert writes_in_group([learn, recall], recalls_deferred=True)
    assert writes_in_group([recall], recalls_deferred=False)  # HINDBRAIN_RECALL_COMMIT_MS=0: appended in the group


def test_a_served_recall_holds_no_log_lock_and_its_records_still_commit(tmp_path):
    brain = Brain.open(tmp_path, embedder="none")
    owner = BrainThread(brain)
    seen: dict[str, tuple] = {}
    recall, perceive_each = brain.recall, brain.perceive_each

    def watched_recall(**fields):
        seen["recall"] = (brain.log.group_from, _free_to_another_thread(brain.log.lock))
        return recall(**fields)

    def watched_perceive_each(events, sent_by):
        seen["perceive"] = (brain.log.group_from, _free_to_another_thread(brain.log.lock))
        return perceive_each(events, sent_by=sent_by)

    brain.recall, brain.perceive_each = watched_recall, watched_perceive_each
    try:
        async def calls():
            event_id = await owner.call(PERCEIVE, {"tenant": "acme", "text": "the deploy failed with 403 on IAM"}, None)
            pack = await owner.call(RECALL, tenant="acme", query="deploy 403 IAM")
            return event_id, pack

        event_id, pack = asyncio.run(calls())
        assert [i.event_ids for i in pack.items] == [[event_id]]
        assert seen["recall"] == (None, True)  # no group: another thread may append meanwhile
        assert seen["perceive"][0] is not None and seen["perceive"][1] is False  # a write is still grouped
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(brain.log.read_all(0)) < 3:
            time.sleep(0.02)  # the recall's records: the runner's committer, within its window
        topics = [e.topic for e in brain.log.read_all(0)]
        assert topics == ["perceptions", "recalls", "injections"]
    finally:
        owner.close()
        brain.close()
