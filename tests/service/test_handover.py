"""The replica → owner records channel (``service.handover``): frames, token, refusals."""

from __future__ import annotations

import asyncio
import struct
import tempfile
from pathlib import Path

import pytest

from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import envelope
from hindbrain.service.handover import RecordsLink, frame, serve_records, unframe
from hindbrain.streams.processing import to_messages

TOKEN = "handover-test-token"


def _records() -> list[tuple[str, dict]]:
    env = dict(tenant="acme", agent="bot-1", task="t1")
    recall = {"envelope": envelope("recall", record_id="rc_1", **env), "recall_id": "rc_1", "query": "vpn 403 ✓",
              "situation": {}, "trigger": None, "scope": {}, "budget_tokens": 800, "k": None, "layers": [],
              "score_names": ["lexical"],
              "candidates": [{"item_id": "ev_1", "item_kind": "event", "score": 0.5, "why_json": None,
                              "stage": "selected", "reason": None, "scores": [0.5]}]}
    injection = {"envelope": envelope("injection", causation_ids=["rc_1"], **env), "recall_id": "rc_1",
                 "budget_tokens": 800, "items": [{"item_id": "ev_1", "item_kind": "event", "rank": 0, "tokens": 9,
                                                  "score": 0.5, "arm": None}]}
    return [("recall", recall), ("injection", injection)]


def test_a_frame_carries_the_records_and_the_log_messages_to_project_and_append_them():
    records = _records()
    data = frame(records)
    (size,) = struct.unpack_from("<I", data)
    got, messages = unframe(data[4:])
    assert size == len(data) - 4
    assert got == [(rt, r) for rt, r in records]
    assert messages == to_messages(records)  # the very bytes the owner would have encoded
    assert [registry.decode(m.value) for m in messages] == [(rt, r) for rt, r in records]


def test_a_record_off_its_schema_is_refused_before_anything_is_sent():
    bad = [("recall", {**_records()[0][1], "budget_tokens": "many"})]
    with pytest.raises(Exception, match="schema"):
        frame(bad)


@pytest.mark.parametrize("cut", [1, 9, -1])
def test_a_frame_cut_short_or_padded_does_not_parse(cut):
    body = frame(_records())[4:]
    with pytest.raises(ValueError, match="frame"):
        unframe(body[:cut] if cut > 0 else body + b"x")


def test_the_owner_queues_frames_in_order_refuses_what_append_refuses_and_needs_the_token():
    appended: list = []

    async def append(records, messages):
        if records[0][1]["recall_id"] == "refuse":
            raise RuntimeError("the log is gone")
        appended.append((records, messages))

    async def run():
        with tempfile.TemporaryDirectory(prefix="hb-ho-") as folder:
            path = str(Path(folder) / "records.sock")
            server = await serve_records(path, TOKEN, append)
            try:
                link = RecordsLink(path, TOKEN)
                first = await link.send(frame(_records()))
                refused = [("recall", {**_records()[0][1], "recall_id": "refuse"})]
                second = await link.send(frame(refused))
                third = await link.send(frame(_records()[1:]))  # the connection survives a refusal
                link.close()
                stranger = RecordsLink(path, "guessed")
                with pytest.raises(asyncio.IncompleteReadError):  # closed unanswered, nothing queued
                    await stranger.send(frame(_records()))
                return first, second, third
            finally:
                server.close()

    assert asyncio.run(run()) == (True, False, True)
    assert [[rt for rt, _ in records] for records, _ in appended] == [["recall", "injection"], ["injection"]]
    assert all(len(records) == len(messages) for records, messages in appended)


def test_a_connection_open_when_the_owners_loop_shuts_down_ends_without_an_error_logged():
    """SIGTERM stops the owner's loop while each replica's connection waits for its next frame:
    the loop cancels the handler, and Python 3.11's stream protocol then called ``exception()`` on the
    cancelled task, so every stop printed an "Exception in callback ... CancelledError" traceback."""
    logged: list[dict] = []

    async def append(records, messages):
        pass

    async def run(folder: str) -> bool:
        asyncio.get_running_loop().set_exception_handler(lambda _, context: logged.append(context))
        path = str(Path(folder) / "records.sock")
        server = await serve_records(path, TOKEN, append)
        link = RecordsLink(path, TOKEN)
        sent = await link.send(frame(_records()))
        server.close()
        return sent  # the link stays open: asyncio.run cancels its handler, as the owner's loop at a stop

    with tempfile.TemporaryDirectory(prefix="hb-ho-") as folder:
        assert asyncio.run(run(folder)) is True
    assert logged == []
