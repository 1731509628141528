"""Keyed events (``recall.keyed``): a perception whose scope names ``store_key`` is a version of
a stored item. The newest version is the live one; the older ones and a tombstone stay in the
log and the views but are never recalled; the rule holds after a reopen (the index rebuilt
from the views), and the write hygiene never merges two items because their words are alike."""

from hindbrain import Brain


def version(b, key, text, *, deleted=False, kind="observation", namespace="acme.bot"):
    scope = {"store_namespace": namespace, "store_key": key, **({"store_deleted": "true"} if deleted else {})}
    return b.perceive(tenant="acme", agent="bot", kind=kind, text=text, scope=scope)


def recalled(b, query):
    return [i.id for i in b.recall(tenant="acme", agent="bot", query=query, k=20, budget_tokens=5000)]


def test_the_newest_version_is_the_one_recalled_and_the_log_keeps_all(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        old = version(b, "plan", "the deploy window is Tuesday night")
        new = version(b, "plan", "the deploy window moved to Thursday night")
        other = version(b, "plan", "the deploy window is Tuesday night", namespace="acme.other")
        plain = b.perceive(tenant="acme", agent="bot", kind="observation", text="the deploy window was discussed")
        found = recalled(b, "when is the deploy window")
        assert new in found and other in found and plain in found and old not in found
        assert len(b.sql("SELECT event_id FROM events WHERE scope['store_key'] = 'plan'")) == 3
        assert b.explain(old)[0]["record"]["text"] == "the deploy window is Tuesday night"
    with Brain.open(tmp_path / "b", embedder="none") as b:  # the index rebuilt from the views: the same rule
        found = recalled(b, "when is the deploy window")
        assert new in found and old not in found


def test_a_tombstone_deletes_the_item_and_a_later_version_restores_it(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        first = version(b, "note", "the printer on floor 3 jams on A3 paper")
        tomb = version(b, "note", "deleted the note about the printer", deleted=True)
        assert first not in recalled(b, "printer floor 3 paper") and tomb not in recalled(b, "printer note deleted")
        back = version(b, "note", "the printer on floor 3 was replaced, A3 works")
        assert recalled(b, "printer floor 3 paper") == [back]
    with Brain.open(tmp_path / "b", embedder="none") as b:
        assert recalled(b, "printer floor 3 paper") == [back]


def test_a_keyed_phatic_message_is_still_a_version(tmp_path):
    """"ok" is transactional (never indexed) unless it is a stored item's value: then it is the
    live version, and the version before it is replaced."""
    with Brain.open(tmp_path / "b", embedder="none") as b:
        old = version(b, "ack", "the vendor has not confirmed the order yet", kind="message")
        version(b, "ack", "ok", kind="message")
        assert old not in recalled(b, "has the vendor confirmed the order")


def test_alike_words_in_two_items_are_two_memories_for_the_write_hygiene(tmp_path):
    """Consecutive near-identical events of one agent merge (the newest kept); two stored items
    do not, whatever they say. The control pair, unkeyed, does merge."""
    with Brain.open(tmp_path / "b", embedder="none") as b:
        version(b, "a", "customer 42 prefers email contact")
        version(b, "b", "customer 42 prefers email contact")
        assert b.sql("SELECT count() AS n FROM decisions WHERE kind = 'events_merged'")[0]["n"] == 0
        for _ in range(2):
            b.perceive(tenant="acme", agent="bot", kind="observation", text="customer 42 prefers email contact")
        assert b.sql("SELECT count() AS n FROM decisions WHERE kind = 'events_merged'")[0]["n"] == 1
