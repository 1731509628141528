"""DocTable: documents as packed rows, objects only once read, every change on the one object."""

import dataclasses
import io
import time

import numpy as np
import orjson
import pytest

from hindbrain.recall.doc_table import DocTable, decoders, packed, unpacked
from hindbrain.recall.documents import Doc


def doc(n: int) -> Doc:
    """A document with a value in every kind of field (sets, nested tuples, dicts, floats)."""
    return Doc(f"e{n}", "event", "episodic", f"text {n} 页面", [f"e{n}"], "perceived", 0.6 + n / 1000,
               {"team": "ops", "n": str(n)}, 1_700_000_000_000_000 + n, tokens=n, action="submit",
               links=("@entity:iam", f"@action:{n}"), exact=("@code:403",), conflicts=frozenset({"u1", "u2"}),
               owner="a1", provenance={"learned_by": "a1", "agents": 1}, quarantine=None, asks=1 / 3,
               report=("iam", "", "submit", (("team", "ops"),)))


def fields(d: Doc) -> dict:
    return {f.name: getattr(d, f.name) for f in dataclasses.fields(d)}


def test_a_packed_document_reads_back_field_for_field_and_is_made_once():
    table = DocTable(Doc)
    originals = [doc(n) for n in range(5)]
    for d in originals:
        table.append(d)
    assert table.made == 5
    table.pack()
    assert table.made == 0 and len(table) == 5
    assert [fields(table.peek(n)) for n in range(5)] == [fields(d) for d in originals]
    assert table.made == 0  # peek keeps nothing
    first = table[2]
    assert table[2] is first and table[-3] is first and table.made == 1


def test_take_is_reading_each_number_the_same_objects_made_once():
    table = DocTable(Doc)
    for n in range(6):
        table.append(doc(n))
    table.pack()
    held = table[4]  # one already an object, the others made by take
    taken = table.take([4, 0, 5, 0, -1])
    assert taken[0] is held and taken[1] is taken[3] is table[0] and taken[2] is table[5] and taken[4] is table[5]
    assert [d.id for d in taken] == ["e4", "e0", "e5", "e0", "e5"] and table.made == 3
    with pytest.raises(IndexError):
        table.take([1, 6])


def test_a_change_through_the_table_sticks_and_later_documents_pack_after():
    table = DocTable(Doc)
    table.append(doc(0))
    table.pack()
    table[0].status = "merged"
    held = table[0]
    table.append(doc(1))
    table.pack()
    assert table[0] is held and table[0].status == "merged" and table.peek(0).status == "merged"
    assert table[1].id == "e1" and [d.id for d in table] == ["e0", "e1"] and [d.id for d in table[0:2]] == ["e0", "e1"]


def test_a_table_over_saved_rows_makes_them_on_read_and_packs_what_follows():
    saved = DocTable(Doc)
    for n in range(3):
        saved.append(doc(n))
    saved.pack()
    rows = [np.frombuffer(packed(saved.peek(n), saved.fields), np.uint8) for n in range(3)]
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    table = DocTable.over(Doc, np.concatenate(rows), offsets)
    table.append(doc(3))
    table.pack()
    assert len(table) == 4 and table.made == 0
    assert [fields(table.peek(n)) for n in range(4)] == [fields(doc(n)) for n in range(4)]


def test_reading_while_packing_never_blocks_the_buffer():
    """A row read is a copy: a reader holding one cannot stop ``pack`` from growing the buffer."""
    table = DocTable(Doc)
    table.append(doc(0))
    table.pack()
    row = table._rows[0 : table._ends[0]]
    for n in range(1, 200):
        table.append(doc(n))
    table.pack()
    assert bytes(row) and table.peek(199).id == "e199"


class Recording:
    """A tiny embedder that records the texts it embeds and waits for ``gate`` before each batch."""

    name, dim = "recording", 8

    def __init__(self):
        import threading

        self.gate, self.seen = threading.Event(), []

    def embed_queries(self, texts):
        return self.embed_passages(texts)

    def embed_passages(self, texts):
        self.gate.wait(10)
        self.seen += texts
        return np.ones((len(texts), self.dim), dtype=np.float32)


def test_the_neural_queue_holds_numbers_and_embeds_each_text_as_added():
    """Queued documents are numbers (the texts stay in the table), and the text embedded is the
    one the document was added with, not a cold summary made while it waited."""
    from hindbrain.recall.documents import cold_summary
    from hindbrain.recall.event_documents import event_doc
    from hindbrain.recall.index import RecallIndex
    from hindbrain.recall.semantic import SemanticIndex

    embedder = Recording()
    semantic = SemanticIndex(embedder, inline_limit=0)
    try:
        index = RecallIndex(semantic)
        index.add([("z", *event_doc("z0", {"text": "first", "scope": {}}, 0, "a1"))])
        while semantic._tenants["z"].queue:  # the background thread holds it, waiting at the gate
            time.sleep(0.01)
        long = "the export job fails with a timeout " * 8
        index.add([("t", *event_doc(f"e{n}", {"text": f"{long}{n}", "scope": {}}, n, "a1")) for n in range(3)])
        queued = list(semantic._tenants["t"].queue)
        assert len(queued) == 3 and all(text is None for _, _, text in queued)
        index.tenant("t").cool(["e1"])
        assert index.tenant("t").docs[1].text == cold_summary(f"{long}1")
        embedder.gate.set()
        assert semantic.wait(20)
        assert sorted(embedder.seen) == sorted(["first", *(f"{long}{n}" for n in range(3))])
    finally:
        semantic.close()


def test_a_row_of_another_width_is_refused_not_read_into_the_wrong_fields():
    decode_at = [(at, d) for at, d in enumerate(decoders(Doc)) if d is not None]
    row = packed(doc(1), tuple(f.name for f in dataclasses.fields(Doc)))
    assert fields(unpacked(Doc, decode_at, row)) == fields(doc(1))
    with pytest.raises(ValueError, match="holds 29 values"):
        unpacked(Doc, decode_at, orjson.dumps(orjson.loads(row)[:-1]))


def over_snapshot_rows(n: int) -> DocTable:
    """A table over the packed rows of documents 0..n-1, as a snapshot stores them."""
    saved = DocTable(Doc)
    for k in range(n):
        saved.append(doc(k))
    saved.pack()
    rows = [np.frombuffer(saved.row(k), np.uint8) for k in range(n)]
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    return DocTable.over(Doc, np.concatenate(rows), offsets)


def test_a_documents_row_is_its_current_state_whether_stored_held_changed_or_not_packed_yet():
    table = over_snapshot_rows(2)  # 0, 1: a snapshot's rows
    table.append(doc(2))
    table.pack()  # 2: this process's buffer
    table.append(doc(3))  # 3: held, not packed yet
    table[0].status = "merged"  # 0: made and changed after it was stored
    assert table.made == 2
    assert [table.row(n) for n in range(4)] == [packed(table.peek(n), table.fields) for n in range(4)]
    assert orjson.loads(table.row(0))[table.fields.index("status")] == "merged"
    assert table.made == 2  # reading rows makes no object


def test_the_rows_written_at_once_are_the_rows_one_by_one_with_their_offsets():
    table = over_snapshot_rows(4)  # 0-3: a snapshot's rows
    for n in range(4, 9):
        table.append(doc(n))
    table.pack()  # 4-8: this process's buffer
    table.append(doc(9))  # 9: held, not packed yet
    table[1].status = "merged"
    table[5].tokens = 12345  # held and changed, in each buffer
    for count in (0, 1, 3, 4, 5, 8, 10):
        out = io.BytesIO()
        offsets = table.write_rows(out, count)
        one_by_one = [table.row(n) for n in range(count)]
        assert out.getvalue() == b"".join(one_by_one)
        assert offsets.tolist() == np.concatenate([[0], np.cumsum([len(r) for r in one_by_one])]).tolist()
    assert table.made == 3
