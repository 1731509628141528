"""Where the owner's resident bytes per event go (issue 28, point 3), through ``Brain.open`` with
defaults and ``perceive_many`` in batches of 5,000 (``bench/api.py``'s distinct structured events).

    .venv/bin/python bench/memory.py                       # 20k events
    .venv/bin/python bench/memory.py --size 100000 --top 25

Prints, per event: the RSS growth over the import (what ``bench/api.py`` reports, native
allocations included: the vector graph, numpy, chDB), the Python heap growth ``tracemalloc``
sees, and its biggest holders by source line (``--top``), measured after a full collection.
Then where the RSS growth lives (``/proc/self/smaps``: glibc's main heap, anonymous mappings,
which hold pymalloc's arenas, numpy's large arrays and the threads' arenas, and file pages), what
the embedded chDB's allocator (jemalloc) holds and has allocated, and what the recall index's
parts report about themselves (vectors, lexical index). The tracing makes the import ~2x slower
and its own tables count in the RSS: ``--no-trace`` for the RSS of record, ``bench/api.py`` for speed.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import ctypes.util
import gc
import random
import re
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import TENANT, event, resident_bytes  # noqa: E402  (the numbers of record use the same events)

from hindbrain import Brain  # noqa: E402
from hindbrain.heap_trim import release_free_heap  # noqa: E402

BATCH = 5_000


def rss_by_kind() -> collections.Counter:
    """Resident bytes by kind of mapping: ``heap`` (glibc's main arena), ``anon`` (other
    anonymous memory), ``chdb`` (the engine's code pages), ``files`` (other files and libraries)."""
    out, kind = collections.Counter(), "anon"
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(maxsplit=6)
            if head and not head[0].endswith(":") and "-" in head[0]:
                path = head[5].strip() if len(head) > 5 else ""
                kind = "heap" if path == "[heap]" else "anon" if not path or path.startswith("[") else \
                    "chdb" if "_chdb" in path else "files"
            elif head and head[0] == "Rss:":
                out[kind] += int(head[1]) * 1024
    return out


def glibc_arenas() -> dict[str, int]:
    """glibc's malloc arenas (``malloc_info``): how many, the bytes the main arena and the
    threads' arenas hold from the system, and how much of that is free inside them; empty
    elsewhere than glibc."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.open_memstream.restype = ctypes.c_void_p
        libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_size_t)]
        libc.malloc_info.argtypes, libc.fclose.argtypes = [ctypes.c_int, ctypes.c_void_p], [ctypes.c_void_p]
    except (OSError, AttributeError):
        return {}
    buf, size = ctypes.c_char_p(), ctypes.c_size_t()
    stream = libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    out = collections.Counter()
    for nr, body in re.findall(r'<heap nr="(\d+)">(.*?)</heap>', buf.value.decode(), re.S):
        part = "main" if nr == "0" else "threads"
        out["arenas"] += 1
        out[part] += int(re.search(r'<system type="current" size="(\d+)"', body)[1])
        out[f"{part} free"] += sum(int(x) for x in re.findall(r'<total type="(?:fast|rest)" count="\d+" size="(\d+)"',
                                                               body))
    return out


def jemalloc(brain) -> dict[str, int]:
    """The embedded chDB's allocator: bytes allocated and resident (``system.jemalloc_stats``);
    empty for a ClickHouse server."""
    if not brain.warehouse.url.startswith("chdb://"):
        return {}
    text = brain.warehouse.query("SELECT stats FROM system.jemalloc_stats")[0][0]
    found = re.search(r"Allocated: (\d+),.*?resident: (\d+)", text)
    return {"allocated": int(found[1]), "resident": int(found[2])} if found else {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=20_000)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--no-trace", action="store_true", help="RSS only (tracemalloc off)")
    ap.add_argument("--depth", type=int, default=1, help="frames kept per allocation; > 1 prints the callers")
    ap.add_argument("--settle", action="store_true",
                    help="then wait for every vector to be neural and in the graph, and split the growth again")
    ap.add_argument("--inline-projection", action="store_true",
                    help="project the views' batches on the appending call, as before round ten (no projector thread)")
    args = ap.parse_args()
    rng = random.Random(args.size)
    events = [event(rng, n) for n in range(args.size)]
    with tempfile.TemporaryDirectory(prefix="hindbrain-memory-") as home, Brain.open(home) as brain:
        brain.runner.background = not args.inline_projection
        brain.perceive(tenant=TENANT, agent="agent-0", text="warm-up")
        brain.recall(tenant=TENANT, agent="agent-0", query="warm-up")
        gc.collect()
        rss0, kinds0, je0, blocks0 = resident_bytes(), rss_by_kind(), jemalloc(brain), sys.getallocatedblocks()
        ar0 = glibc_arenas()
        before = None
        if not args.no_trace:
            tracemalloc.start(args.depth)
            before = tracemalloc.take_snapshot()
        for start in range(0, args.size, BATCH):
            brain.perceive_many(events[start:start + BATCH])
        report(brain, args, "the import", rss0, kinds0, je0, blocks0, before, ar0)
        if args.settle and brain.index.semantic is not None:
            semantic = brain.index.semantic
            t0 = time.perf_counter()
            semantic.wait()
            while semantic.unbuilt():
                time.sleep(0.2)
            print(f"settled {time.perf_counter() - t0:.0f} s later")
            report(brain, args, "settled", rss0, kinds0, je0, blocks0, before, ar0)
            settled = resident_bytes()
            release_free_heap()
            print(f"  a malloc_trim now returns {(settled - resident_bytes()) / args.size:,.0f} B/event "
                  "(free heap the settling left resident)")


def report(brain, args, label: str, rss0: int, kinds0, je0, blocks0, before, ar0) -> None:
    """The growth since the baseline, split by mapping, allocator and (traced) source line."""
    gc.collect()
    n = args.size
    print(f"{n:,} events, {label}: RSS growth {(resident_bytes() - rss0) / n:,.0f} B/event")
    kinds = rss_by_kind()
    grown = ", ".join(f"{k} {(kinds[k] - kinds0[k]) / n:,.0f}" for k in ("heap", "anon", "chdb", "files"))
    print(f"  by mapping: {grown} B/event; pymalloc blocks {(sys.getallocatedblocks() - blocks0) / n:.1f}/event")
    ar = glibc_arenas()
    if ar:
        grown = {k: (ar[k] - ar0[k]) / n for k in ("main", "main free", "threads", "threads free")}
        print(f"  glibc: {ar['arenas']} arenas (was {ar0['arenas']}); main arena {grown['main']:,.0f} (free in it "
              f"{grown['main free']:,.0f}), threads' arenas {grown['threads']:,.0f} "
              f"(free {grown['threads free']:,.0f}) "
              "B/event from the system")
    je = jemalloc(brain)
    if je:
        print(f"  chDB's jemalloc: allocated {(je['allocated'] - je0['allocated']) / n:,.0f}, "
              f"resident {(je['resident'] - je0['resident']) / n:,.0f} B/event")
    if before is not None:
        after = tracemalloc.take_snapshot()
        traced = tracemalloc.get_traced_memory()[0]
        diffs = after.compare_to(before, "lineno" if args.depth == 1 else "traceback")
        total = sum(d.size_diff for d in diffs)
        print(f"  python heap (tracemalloc) {total / n:,.0f} B/event ({traced / 2**20:,.0f} MiB traced)")
        for d in diffs[: args.top]:
            frame = d.traceback[0]
            print(f"    {d.size_diff / n:>8,.0f} B/event  {d.count_diff / n:>6.2f} blocks/event  "
                  f"{Path(frame.filename).name}:{frame.lineno}")
            for caller in list(d.traceback)[1:]:
                print(f"{'':>40}{Path(caller.filename).name}:{caller.lineno}")
    semantic = brain.index.semantic
    if semantic is not None:
        print(f"  vector indexes report {semantic.memory_bytes() / n:,.0f} B/event "
              f"({semantic.pending():,} texts still queued for the neural tier)")

if __name__ == "__main__":
    main()
