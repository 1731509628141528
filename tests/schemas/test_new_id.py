"""Record ids come from a buffer of random bytes (``schemas.records._RandomHex``): unique across
buffer refills and threads, and a forked child never hands out the ids its parent will."""

from __future__ import annotations

import os
import re
import threading

from hindbrain.schemas.records import new_id


def test_ids_are_unique_and_well_formed_across_refills_and_threads():
    ids: list[str] = []

    def draw():
        ids.extend(new_id("perception") for _ in range(2_000))

    threads = [threading.Thread(target=draw) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == len(ids) == 8_000
    assert all(re.fullmatch(r"ev_[0-9a-f]{32}", i) for i in ids)


def test_a_forked_child_draws_its_own_ids():
    new_id("perception")  # the parent holds a partly used buffer
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, " ".join(new_id("perception") for _ in range(10)).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = set(os.read(read, 4096).decode().split())
    parent = {new_id("perception") for _ in range(300)}  # past the buffer's end: a refill too
    assert len(child) == 10 and not child & parent
