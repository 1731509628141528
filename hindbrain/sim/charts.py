"""The learning report's charts: matplotlib figures rendered to SVG, inlined in the HTML.

matplotlib (Agg, no display, no network) draws each chart; the SVG keeps its text as text
(``svg.fonttype = none``: tick labels stay searchable and small) and loses the XML prologue
and the metadata block, so it embeds in the page as an ``<svg>`` element. Every id in a chart
is prefixed with the chart's key, so the page's ids stay unique (matplotlib numbers each
figure's from 1), and each drawn artist's id names what it is (``<key>-points-naive-rag``,
``<key>-band-hindbrain``), so a test can find a chart's parts without reading pixels.
matplotlib is imported on the first chart only.
"""

from __future__ import annotations

import html
import io
import re
import statistics

COLOURS = {"no memory": "#8a8a8a", "naive RAG": "#e07b39", "hindbrain": "#2a6fdb"}
PEER_COLOURS = ("#2a6fdb", "#e07b39", "#6a9f3a")  # hindbrain recall(), plain BM25, the model alone
UNITS = {  # the y axis of each learning curve: what is counted, in what
    "success rate": "% of tasks done by the agent", "repeated-mistake rate": "% of known tasks repeated",
    "preference consistency": "% of answers obeying", "tokens per success": "tokens injected per success",
    "upset-customer tickets solved": "% of upset customers satisfied",
}
SIZE = (4.6, 3.0)  # inches; the page lays the charts out in rows


def learning_curve(key: str, metric: str, by_arm: dict[str, dict[int, list[float]]]) -> str:
    """One metric per round for each arm: a point per round (the median over seeds), the
    line through them, and with several seeds the band from the lowest to the highest seed.
    ``by_arm``: arm → round → the values of the seeds that measured it; ``key`` scopes the ids."""
    from matplotlib.ticker import MaxNLocator, PercentFormatter

    fig, ax = _figure()
    share = metric != "tokens per success"
    for arm, per_round in sorted(by_arm.items(), key=lambda kv: _arm_order(kv[0])):
        rounds = sorted(r for r, values in per_round.items() if values)
        if not rounds:
            continue
        colour = COLOURS.get(arm, "#000000")
        middle = [statistics.median(per_round[r]) for r in rounds]
        if max(len(per_round[r]) for r in rounds) > 1:
            ax.fill_between(rounds, [min(per_round[r]) for r in rounds], [max(per_round[r]) for r in rounds],
                            color=colour, alpha=0.18, linewidth=0, gid=f"band-{_slug(arm)}")
        ax.plot(rounds, middle, color=colour, linewidth=1.6, label=arm, gid=f"line-{_slug(arm)}")
        ax.plot(rounds, middle, linestyle="none", marker="o", markersize=4, color=colour, gid=f"points-{_slug(arm)}")
    ax.set_xlabel("round")
    ax.set_ylabel(UNITS.get(metric, metric))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if share:
        ax.set_ylim(-0.03, 1.03)
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1, decimals=0))
    else:
        ax.set_ylim(bottom=0)
    ax.set_title(metric, fontsize=10)
    ax.legend(fontsize=7, frameon=False, loc="best")
    return _figure_html(fig, key, metric, f"{metric} per round, {UNITS.get(metric, '')}")


def _arm_order(arm: str) -> tuple[int, str]:
    """No memory, naive RAG, hindbrain (the order of the tables), then any other arm."""
    order = list(COLOURS)
    return (order.index(arm) if arm in order else len(order), arm)


def recall_quality(sets: dict[str, dict]) -> str:
    """R@5 (held-out) per data set: hindbrain's recall() next to plain BM25 and the model alone."""
    return _grouped_bars("recall-quality", sets, lambda ranking: ranking["recall_at"]["5"], "R@5 (%)",
                         "recall quality (R@5)",
                         "recall quality: R@5 per benchmark set, each ranking on the same questions", "{:.1f}")


def recall_latency(sets: dict[str, dict]) -> str:
    """Median latency per query (log scale) per data set, with the p90 as a whisker."""
    return _grouped_bars("recall-latency", sets, lambda ranking: ranking["latency_ms"]["p50"],
                         "ms per query, p50 (log scale)",
                         "latency per query", "latency per query: p50 bars, p90 whiskers", "{:.2g}",
                         whisker=lambda ranking: ranking["latency_ms"]["p90"], log=True)


def _grouped_bars(key: str, sets: dict[str, dict], value, ylabel: str, title: str, caption: str, label: str,
                  whisker=None, log: bool = False) -> str:
    fig, ax = _figure(width=6.2)
    names = list(sets)
    rankings = list(dict.fromkeys(r for s in sets.values() for r in s["rankings"]))
    width = 0.8 / max(1, len(rankings))
    for k, ranking in enumerate(rankings):
        xs = [n + (k - (len(rankings) - 1) / 2) * width for n, name in enumerate(names)
              if ranking in sets[name]["rankings"]]
        got = [sets[name]["rankings"][ranking] for name in names if ranking in sets[name]["rankings"]]
        ys = [value(g) for g in got]
        colour = PEER_COLOURS[k % len(PEER_COLOURS)]
        bars = ax.bar(xs, ys, width=width * 0.92, color=colour, label=ranking)
        for bar, name in zip(bars, [n for n in names if ranking in sets[n]["rankings"]], strict=True):
            bar.set_gid(f"bar-{_slug(ranking)}-{_slug(name)}")  # one id a bar: "bar-plain-bm25-bm25s-conv-en"
        if whisker is not None:
            tops = [whisker(g) for g in got]
            ax.errorbar(xs, ys, yerr=[[0] * len(ys), [t - y for t, y in zip(tops, ys, strict=True)]], fmt="none",
                        ecolor="#333333", elinewidth=0.8, capsize=2)
        # in the bar on a log scale, where the p90 whisker stands above it
        ax.bar_label(bars, labels=[label.format(y) for y in ys], fontsize=6, padding=1,
                     label_type="center" if log else "edge", color="white" if log else "black")
    ax.set_xticks(range(len(names)), [f"{n}\n({sets[n]['questions']} q.)" for n in names], fontsize=8)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
        ax.set_ylim(top=ax.get_ylim()[1] * 8)  # room for the legend above the whiskers
    else:
        ax.set_ylim(0, 100)  # a share of the gold items: the whole scale
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, frameon=False, loc="upper center", ncols=len(rankings))
    return _figure_html(fig, key, title, caption)


def _figure(width: float = SIZE[0]):
    import matplotlib

    matplotlib.use("Agg")  # no display; the report is written, never shown
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, SIZE[1]), layout="constrained")
    ax = fig.add_subplot()
    ax.grid(True, color="#e6e6e6", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.tick_params(labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig, ax


def _figure_html(fig, key: str, label: str, caption: str) -> str:
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "hindbrain"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]  # drop the XML prologue and doctype: inline SVG in HTML needs neither
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = _scoped(svg, _slug(key))
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{html.escape(label)}" ', 1)
    return f"<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>"


def _slug(name: str) -> str:
    """``name`` as an id part: "naive RAG" → "naive-rag" (an HTML id has no spaces)."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _scoped(svg: str, prefix: str) -> str:
    """Every id of ``svg`` and every reference to one (``href="#…"``, ``url(#…)``) prefixed."""
    ids = set(re.findall(r' id="([^"]+)"', svg))
    svg = re.sub(r' id="([^"]+)"', lambda m: f' id="{prefix}-{m.group(1)}"', svg)
    return re.sub(r'(href="#|url\(#)([^")]+)',
                  lambda m: f"{m.group(1)}{prefix}-{m.group(2)}" if m.group(2) in ids else m.group(0), svg)
