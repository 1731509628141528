"""Prometheus text exposition for ``hindbrain serve``, without a client library: counters,
two latency histograms (every request by route; recall alone) and gauges read per scrape."""

from __future__ import annotations

import threading
from bisect import bisect_left

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class Histogram:
    def __init__(self):
        self.counts = [0] * (len(BUCKETS) + 1)  # the last is +Inf
        self.total, self.n = 0.0, 0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(BUCKETS, seconds)] += 1
        self.total += seconds
        self.n += 1

    def lines(self, name: str, labels: str = "") -> list[str]:
        sep = "," if labels else ""
        out, running = [], 0
        for bound, count in zip((*BUCKETS, "+Inf"), self.counts, strict=True):
            running += count
            out.append(f'{name}_bucket{{{labels}{sep}le="{bound}"}} {running}')
        out += [f"{name}_sum{{{labels}}} {self.total:.6f}", f"{name}_count{{{labels}}} {self.n}"]
        return out


class Metrics:
    def __init__(self):
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, int], int] = {}
        self.latency: dict[str, Histogram] = {}
        self.recall = Histogram()
        self.events = 0

    def observe(self, route: str, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[(route, status)] = self.requests.get((route, status), 0) + 1
            self.latency.setdefault(route, Histogram()).observe(seconds)

    def recalled(self, seconds: float) -> None:
        with self._lock:
            self.recall.observe(seconds)

    def ingested(self, n: int) -> None:
        with self._lock:
            self.events += n

    def render(self, gauges: dict[str, float]) -> str:
        with self._lock:
            lines = ["# TYPE hindbrain_http_requests_total counter"]
            lines += [f'hindbrain_http_requests_total{{route="{r}",status="{s}"}} {n}'
                      for (r, s), n in sorted(self.requests.items())]
            lines.append("# TYPE hindbrain_http_request_seconds histogram")
            for route, hist in sorted(self.latency.items()):
                lines += hist.lines("hindbrain_http_request_seconds", f'route="{route}"')
            lines += ["# TYPE hindbrain_recall_seconds histogram", *self.recall.lines("hindbrain_recall_seconds"),
                      "# TYPE hindbrain_ingested_events_total counter",
                      f"hindbrain_ingested_events_total {self.events}"]
        for name, value in gauges.items():
            lines += [f"# TYPE {name} gauge", f"{name} {value}"]
        return "\n".join(lines) + "\n"
