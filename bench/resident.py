"""``bench/api.py``'s two resident rows (issue 28, point 3) in minutes, not the neural tier's hour on a busy machine.

    .venv/bin/python bench/resident.py --vectors /tmp/homes/h100k/cache/embeddings.sqlite
    .venv/bin/python bench/resident.py --arms base=/path/python,branch=.venv/bin/python --vectors ...
    .venv/bin/python bench/resident.py --via-workers --vectors ...   # the vectors through the workers' pipes

The same sequence as ``bench/api.py --sizes 100000 --no-http --workers '' --lag-seconds 0`` up to its
``owner resident, settled`` row (its events, the warm-up before the baseline, ``perceive_many`` in batches
of 5,000, the fast tier's checks, 100 recalls of agent-1 during the backlog, then every vector neural and
in the graph), with one difference: the fresh home's embedding cache is a copy of ``--vectors``, a cache
holding the neural vectors of these events (``bench/served.py --size 100000`` builds one), so the neural
tier is made of cache hits rather than the workers' ~200 s of CPU (which a niced worker on a loaded 2-core
machine does not get in an hour). What that leaves out: the workers' batches arriving (their pickled
arrays, ``RecentVectors``), so the settled row here can be a little lower than api.py's; ``--via-workers``
puts them back: the fresh home's cache starts empty and the brain's embedder workers are stand-ins
(``serve_cached``) that answer each batch from ``--vectors`` through the same pipes and protocol (a text not
in it is embedded by the model), so the owner receives, dedups and caches every vector as in api.py, with
the worker's CPU a lookup's. Prints the import
and settled rows (RSS growth per event, anonymous part), ``perceive_many``'s rate and the recall p50 / p99
during the backlog, and after settling, 300 recalls' p50 / p99 as api.py measures them.

``--arms name=python,...`` runs each arm in its own process (that interpreter's ``hindbrain``), one after
the other in the order given, ``--rounds`` times, from the current directory: run it from a directory
outside both checkouts (``python -m``-style path mixing otherwise, docs/speed.md).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import TENANT, event, fast_tier, ms, pct, queries, resident_bytes, rss_split, timed_recalls, warmed_import  # noqa: E402


def per_event(since: tuple[int, dict[str, int]], size: int) -> str:
    total, split = resident_bytes() - since[0], rss_split()
    return f"{total / size:,.0f} B/event (anonymous {(split['anon'] - since[1]['anon']) / size:,.0f})"


def lexical_kept(brain) -> int:
    """Bytes the tenants' lexical indexes keep of common terms' parts (whole, and over recalls' masks): a
    dense row or postings each (``recall.lexical``; an older checkout's rows are ``(row, idf)`` pairs)."""

    def size(part) -> int:
        return part.nbytes if hasattr(part, "nbytes") else part[0].nbytes

    return sum(size(part) for tenant in list(brain.index.tenants.values())
               for kept in (tenant.bm25._rows, tenant.bm25._view_rows) for part in list(kept.values()))


def serve_cached(vectors: Path) -> None:
    """A stand-in embedder worker (``recall.workers.serve``'s protocol: pickled texts in on stdin,
    ``("ok", float32 unit rows)`` out): each text's vector from the cache ``vectors`` (keyed by the
    bench's tenant and the text, as the brain keys it), the model's for a text not there."""
    import pickle
    import sqlite3

    import numpy as np

    from hindbrain.recall.embed import normalize_rows
    from hindbrain.recall.semantic import content_key

    requests, replies = sys.stdin.buffer, os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr
    db = sqlite3.connect(f"file:{vectors}?mode=ro&immutable=1", uri=True)
    names = [name for (name,) in db.execute("SELECT DISTINCT model FROM vectors")]  # the key's first column
    lookup = f"SELECT vec FROM vectors WHERE model IN ({','.join('?' * len(names))}) AND text_hash = ?"
    model = None
    while True:
        try:
            texts = pickle.load(requests)
        except EOFError:
            return
        rows = []
        for text in texts:
            found = db.execute(lookup, (*names, content_key(TENANT, text))).fetchone()
            if found is None:
                if model is None:
                    from hindbrain.recall.embed import default_embedder
                    model = default_embedder()
                rows.append(np.asarray(model.embed_passages([text]), dtype=np.float32)[0])
            else:
                rows.append(normalize_rows(np.frombuffer(found[0], dtype=np.float16)[None])[0])
        pickle.dump(("ok", np.stack(rows).astype(np.float32)), replies, protocol=pickle.HIGHEST_PROTOCOL)
        replies.flush()


def cached_workers(vectors: Path) -> None:
    """The brain's embedder workers started as ``serve_cached`` over ``vectors`` instead of the model."""
    from hindbrain.recall import workers

    send = workers._Worker.send

    def start_cached(worker, texts: list[str]) -> None:
        if worker.proc is None or worker.proc.poll() is not None:
            worker.proc = subprocess.Popen([sys.executable, __file__, "--serve-cached", str(vectors)],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        send(worker, texts)

    workers._Worker.send = start_cached


def measure(size: int, vectors: Path, via_workers: bool = False) -> None:
    from hindbrain import Brain

    rng = random.Random(size)
    events = [event(rng, n) for n in range(size)]
    with tempfile.TemporaryDirectory(prefix="hindbrain-resident-") as home:
        (Path(home) / "cache").mkdir()
        if via_workers:
            cached_workers(vectors)
        else:
            shutil.copyfile(vectors, Path(home) / "cache" / "embeddings.sqlite")
        with Brain.open(home) as brain:
            since, seconds = warmed_import(brain, events)
            print(f"  perceive_many {size / seconds:,.0f} ev/s", flush=True)
            print(f"  owner resident {per_event(since, size)}", flush=True)
            semantic = brain.index.semantic
            fast_tier(brain, events)
            during = timed_recalls(brain, queries(rng, 100))
            print(f"  recall during the backlog p50 {ms(statistics.median(during))} p99 {ms(pct(during, .99))}")
            t = time.perf_counter()
            semantic.wait()
            while semantic.unbuilt():
                time.sleep(0.2)
            neural = semantic.neural_count(TENANT)
            print(f"  settled {time.perf_counter() - t:.0f} s later ({neural:,} of {size:,} neural)")
            row = per_event(since, size)
            print(f"  owner resident, settled {row}; lexical parts kept {lexical_kept(brain) / size:,.0f} B/event, "
                  f"vector indexes {semantic.memory_bytes() / size:,.0f}", flush=True)
            qs = queries(rng, 300)
            timed_recalls(brain, qs[:20])
            spent = timed_recalls(brain, qs)
            print(f"  recall p50 {ms(statistics.median(spent))} p99 {ms(pct(spent, .99))}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--vectors", type=Path, help="an embedding cache holding these events' vectors (required)")
    ap.add_argument("--arms", default="", help="name=python,... : each arm in its own process")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--via-workers", action="store_true",
                    help="the vectors through the brain's embedder workers (stand-ins reading --vectors)")
    ap.add_argument("--serve-cached", type=Path, help=argparse.SUPPRESS)  # a stand-in worker's process
    args = ap.parse_args()
    if args.serve_cached is not None:
        serve_cached(args.serve_cached)
        return
    if args.vectors is None or not args.vectors.is_file():
        raise SystemExit(f"--vectors: no such file {args.vectors}")
    if not args.arms:
        measure(args.size, args.vectors, args.via_workers)
        return
    arms = [part.split("=", 1) for part in args.arms.split(",")]
    for n in range(args.rounds):
        for name, python in arms:
            load = Path("/proc/loadavg").read_text().split()[0]
            print(f"round {n + 1}, {name} ({time.strftime('%H:%M:%S')}, load {load})", flush=True)
            subprocess.run([python, __file__, "--size", str(args.size), "--vectors", str(args.vectors),
                            *(["--via-workers"] if args.via_workers else [])], check=True)


if __name__ == "__main__":
    main()
