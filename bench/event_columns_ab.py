"""A batch's events folded as columns against the per-document fold, in one process (issue 28, round fourteen):
over bench/api.py's events in batches of 5,000, two indexes grown side by side, one by ``event_docs`` then
``TenantIndex.add_many`` (a ``Doc`` an event: the fold before, kept as the oracle), one by ``event_columns`` then
``TenantIndex.add_events``, the arms alternated batch by batch so the machine's drift hits both.

    .venv/bin/python bench/event_columns_ab.py                 # 100k events
    .venv/bin/python bench/event_columns_ab.py --size 20000

Prints each arm's median thread CPU µs an event (the batches' medians) for the documents (4a's last step and
what it calls) and the add (4b), and the ratios; the two indexes' packed rows are asserted equal, document for
document.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from hindbrain.recall import event_documents, tenant_index

sys.path.insert(0, str(Path(__file__).resolve().parent))
from event_docs_ab import fold_side_by_side  # noqa: E402

ARMS = {"docs": (event_documents.event_docs, tenant_index.TenantIndex.add_many),
        "columns": (event_documents.event_columns, tenant_index.TenantIndex.add_events)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=5_000)
    args = ap.parse_args()
    spent = fold_side_by_side(ARMS, args.size, args.batch)
    print(f"{args.size:,} events in batches of {args.batch:,}; load average {os.getloadavg()[0]:.1f}")
    totals = {arm: [d + a for d, a in zip(spent[arm, "docs"], spent[arm, "add"], strict=True)] for arm in ARMS}
    for part, name in (("docs", "documents"), ("add", "add"), (None, "both")):
        series = {arm: spent[arm, part] if part else totals[arm] for arm in ARMS}
        base, new = (statistics.median(series[arm]) for arm in ("docs", "columns"))
        per_batch = statistics.median(x / y for x, y in zip(series["columns"], series["docs"], strict=True))
        print(f"{name:<10} docs {base:6.2f} -> columns {new:6.2f} us/event  x{new / base:.2f} "
              f"(per-batch ratio median x{per_batch:.2f})")


if __name__ == "__main__":
    main()
