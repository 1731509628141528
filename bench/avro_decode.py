"""Decode µs a record, the C reader against fastavro, in one process (issue 28; docs/speed.md, "The Kafka
learner, round thirteen").

    .venv/bin/python bench/avro_decode.py [--size 20000] [--rounds 5] [--worlds api.py,learning.py]

Encodes each world's records (bench/learner_cpu.py's worlds, the records the fleet's learner reads) with the
codec, then per round, alternating the arms' order, decodes them all through ``registry.decode`` (the C reader
of schemas/_avro.c for a body of the current schema) and through the codec's fastavro path (the decode as it was
before the C reader: ``fastavro.schemaless_reader`` over the body, the same checks). Prints per world each arm's
median thread-CPU µs a record and the ratio, and checks the two arms read equal records.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from pathlib import Path

import fastavro

from hindbrain.schemas.codec import HEADER_LEN, CodecError, registry

sys.path.insert(0, str(Path(__file__).resolve().parent))

from learner_cpu import worlds  # noqa: E402

_BY_FP = {v.fingerprint: v for t in registry.record_types for v in registry.versions(t)}


def fastavro_decode(value: bytes) -> tuple[str, dict]:
    """``Registry.decode`` as it was before the C reader (its fastavro path)."""
    writer = _BY_FP[value[2:HEADER_LEN]]
    reader = registry.current(writer.record_type)
    body = io.BytesIO(value[HEADER_LEN:])
    record = fastavro.schemaless_reader(body, writer.parsed, None if reader is writer else reader.parsed)
    if body.tell() != len(value) - HEADER_LEN:
        raise CodecError("trailing bytes")
    return writer.record_type, record


def timed(decode, messages: list[bytes]) -> float:
    """Thread CPU µs a record."""
    t = time.thread_time()
    for m in messages:
        decode(m)
    return 1e6 * (time.thread_time() - t) / len(messages)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--worlds", default="api.py,learning.py")
    args = ap.parse_args()
    built = worlds(args.size)
    arms = {"fastavro": fastavro_decode, "c": registry.decode}
    for name in args.worlds.split(","):
        messages = [registry.encode(t, r) for t, r in built[name]]
        assert [registry.decode(m) for m in messages] == [fastavro_decode(m) for m in messages]
        runs: dict[str, list[float]] = {arm: [] for arm in arms}
        for n in range(args.rounds):
            order = list(arms) if n % 2 == 0 else list(reversed(arms))
            for arm in order:
                runs[arm].append(timed(arms[arm], messages))
        med = {arm: statistics.median(v) for arm, v in runs.items()}
        mean_bytes = sum(map(len, messages)) / len(messages)
        print(f"{name}: {len(messages)} records, {mean_bytes:.0f} B a message; thread CPU µs a record, median of "
              f"{args.rounds}: fastavro {med['fastavro']:.2f} ({', '.join(f'{x:.2f}' for x in runs['fastavro'])}), "
              f"C {med['c']:.2f} ({', '.join(f'{x:.2f}' for x in runs['c'])}), x{med['c'] / med['fastavro']:.2f}")


if __name__ == "__main__":
    main()
