"""The learning report: per arm and round, from SQL over the views (every arm recorded
each task's final outcome, with its notes, under its own tenant), drawn as static SVG
learning curves in one HTML file — no server, no plotting dependency.
``hindbrain report`` regenerates it from any brain the simulator ran in."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from hindbrain.sim.run import Counts, format_metric

ROUNDS_SQL = """
SELECT tenant, JSONExtractString(notes, 'world') AS world, JSONExtractString(notes, 'arm') AS arm,
       JSONExtractInt(notes, 'round') AS round,
       count() AS tasks, countIf(success) AS successes,
       countIf(JSONExtractBool(notes, 'known')) AS known_tasks, countIf(JSONExtractBool(notes, 'repeated')) AS repeated,
       countIf(JSONExtractBool(notes, 'fleet_known')) AS fleet_known,
       countIf(JSONExtractBool(notes, 'fleet_repeated')) AS fleet_repeated,
       countIf(JSONExtractString(notes, 'kind') = 'preference' AND NOT JSONExtractBool(notes, 'stated')) AS pref_tasks,
       countIf(JSONExtractBool(notes, 'obeyed')) AS pref_obeyed,
       sum(JSONExtractInt(notes, 'tokens')) AS injected_tokens,
       sum(ifNull(steps, 0)) AS steps, countIf(JSONExtractBool(notes, 'first_contact')) AS first_contacts,
       countIf(JSONExtractBool(notes, 'first_contact') AND success) AS first_contact_successes,
       countIf(JSONExtractString(notes, 'env') != '') AS scoped_tasks,
       countIf(JSONExtractBool(notes, 'wrong_scope')) AS wrong_scope,
       countIf(JSONExtractBool(notes, 'upset')) AS upset_tickets,
       countIf(JSONExtractBool(notes, 'upset') AND success) AS upset_solved,
       countIf(JSONExtractBool(notes, 'rule_first')) AS rule_first
FROM outcomes FINAL
WHERE tenant LIKE 'sim-%' AND JSONExtractBool(ifNull(notes, '{}'), 'final')
GROUP BY tenant, world, arm, round
ORDER BY world, tenant, arm, round
"""
UNITS_SQL = """
SELECT tenant, countIf(status IN ('verified', 'stable')) AS verified, countIf(status = 'invalid') AS invalidated,
       count() AS units
FROM unit_states FINAL WHERE tenant LIKE 'sim-hindbrain-%' GROUP BY tenant ORDER BY tenant
"""
APPLIED_SQL = """
SELECT i.tenant AS tenant, count() AS injected, countIf(has(o.applied, i.item)) AS applied,
       uniqExactIf(i.item, has(o.applied, i.item)) AS reused_units
FROM (SELECT tenant, recall_id, item FROM injections FINAL ARRAY JOIN item_ids AS item
      WHERE tenant LIKE 'sim-hindbrain-%' AND startsWith(item, 'fr_')) AS i
LEFT JOIN (SELECT recall_id, groupArrayArray(applied) AS applied FROM outcomes FINAL
           WHERE recall_id IS NOT NULL GROUP BY recall_id) AS o ON o.recall_id = i.recall_id
GROUP BY tenant ORDER BY tenant
"""
COLOURS = {"no memory": "#9e9e9e", "naive RAG": "#e07b39", "hindbrain": "#2a6fdb"}


CURVES = ("success rate", "repeated-mistake rate", "preference consistency", "tokens per success",
          "upset-customer tickets solved")


@dataclass(frozen=True)
class Round:
    """One arm's round as the views tell it: the same counts (and so the same metrics,
    ``Counts.metrics``) the simulator keeps, rebuilt from the outcome records."""

    tenant: str
    world: str
    arm: str
    round: int
    counts: Counts


def rounds(brain) -> list[Round]:
    out = []
    for r in brain.sql(ROUNDS_SQL):
        key = {k: r.pop(k) for k in ("tenant", "world", "arm", "round")}
        out.append(Round(**key, counts=Counts(**r)))
    return out


def curves(rows: list[Round]) -> dict[str, dict[str, list[float | None]]]:
    """metric → arm → one value per round (None where the round has nothing to measure)."""
    out: dict[str, dict[str, list[float | None]]] = {m: {} for m in CURVES}
    for r in rows:
        metrics = r.counts.metrics()
        for m in CURVES:
            out[m].setdefault(r.arm, []).append(metrics[m])
    return out


def totals(rows: list[Round]) -> dict[str, dict[str, float | None]]:
    by_arm: dict[str, Counts] = {}
    for r in rows:
        by_arm.setdefault(r.arm, Counts()).add(r.counts)
    return {arm: counts.metrics() for arm, counts in by_arm.items()}


def unit_metrics(brain) -> dict[str, float | None]:
    """hindbrain's own learning, from its views: what became verified or invalid, and what
    of the injected cognitions the agents applied (the context layer of seed 000)."""
    units = brain.sql(UNITS_SQL)
    applied = brain.sql(APPLIED_SQL)
    verified, invalid, total = (sum(r[k] for r in units) for k in ("verified", "invalidated", "units"))
    injected, used, reused = (sum(r[k] for r in applied) for k in ("injected", "applied", "reused_units"))
    return {"units learned": total, "verified or stable": _ratio(verified, total),
            "invalidated": _ratio(invalid, total), "verified : invalidated": _ratio(verified, invalid),
            "injected cognitions applied": _ratio(used, injected),
            "applications per applied cognition (reuse)": _ratio(used, reused)}


def quality_per_token(t: dict[str, dict[str, float | None]], rows: list[Round]) -> float | None:
    """Decision quality gain per injected token: hindbrain's success rate over no memory's,
    per 100 tokens injected per task."""
    hb, none = t.get("hindbrain"), t.get("no memory")
    tasks = sum(r.counts.tasks for r in rows if r.arm == "hindbrain")
    tokens = sum(r.counts.injected_tokens for r in rows if r.arm == "hindbrain")
    if not hb or not none or not tasks or not tokens or hb["success rate"] is None or none["success rate"] is None:
        return None
    return (hb["success rate"] - none["success rate"]) / (tokens / tasks / 100)


def write_html(path: Path, rows: list[Round], learning: dict | None = None) -> Path:
    sections, gain = [], None
    for world in sorted({r.world for r in rows}):
        mine = [r for r in rows if r.world == world]
        series = {m: v for m, v in curves(mine).items() if any(x is not None for xs in v.values() for x in xs)}
        t = totals(mine)
        gain = gain if world == "tickets" else quality_per_token(t, mine)
        sections.append(f"<h2>World: {html.escape(world or 'fleet')}</h2>{_table(t)}<div class='charts'>"
                        + "".join(_chart(m, s) for m, s in series.items()) + "</div>")
    own = "".join(f"<tr><th>{html.escape(k)}</th><td>{_plain(v)}</td></tr>" for k, v in (learning or {}).items())
    own += f"<tr><th>success gain over no memory per 100 injected tokens</th><td>{_plain(gain)}</td></tr>"
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>hindbrain learning report</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:70em}} .charts{{display:flex;flex-wrap:wrap;gap:1em}}
table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:.3em .7em;text-align:right}}
pre{{background:#f6f6f6;padding:1em;overflow:auto}}</style></head><body>
<h1>Does it learn?</h1><p>The same simulated fleet — same world, seed and agent policy — with no memory, with naive
RAG (every event stored, top-5 by similarity injected, no gate, no feedback) and with hindbrain. Agents act only on
what was injected. Curves are per round.</p>
{"".join(sections)}
<h2>hindbrain's own learning</h2><table>{own}</table>
<h2>The queries behind every number</h2><pre>{html.escape(ROUNDS_SQL.strip())}</pre>
<pre>{html.escape(UNITS_SQL.strip())}</pre><pre>{html.escape(APPLIED_SQL.strip())}</pre></body></html>"""
    path.write_text(page, encoding="utf-8")
    return path


def _chart(metric: str, series: dict[str, list[float | None]], w: int = 320, h: int = 200) -> str:
    values = [v for vs in series.values() for v in vs if v is not None]
    top = max([*values, 1.0]) if metric == "tokens per success" else 1.0
    n = max((len(vs) for vs in series.values()), default=1)
    def x(i):
        return 40 + (w - 60) * (i / max(1, n - 1))
    def y(v):
        return h - 30 - (h - 50) * (v / top)
    lines = []
    for arm, vs in series.items():
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(vs) if v is not None)
        lines.append(f'<polyline fill="none" stroke="{COLOURS.get(arm, "#000")}" stroke-width="2" points="{points}"/>')
    legend = "".join(f'<text x="{40 + 95 * k}" y="14" font-size="11" fill="{COLOURS.get(arm, "#000")}">{arm}</text>'
                     for k, arm in enumerate(series))
    label = "" if metric == "tokens per success" else "%"
    axis = (f'<line x1="40" y1="{h - 30}" x2="{w - 20}" y2="{h - 30}" stroke="#999"/>'
            f'<text x="4" y="{y(top) + 4:.0f}" font-size="10">{top:.0f}{label if top != 1 else ""}</text>'
            f'<text x="4" y="{h - 26}" font-size="10">0</text>'
            f'<text x="{w / 2 - 20:.0f}" y="{h - 8}" font-size="10">round 1 … {n}</text>')
    if label:
        axis = axis.replace(f">{top:.0f}<", ">100%<")
    return (f'<figure><svg width="{w}" height="{h}" role="img" aria-label="{metric}">{legend}{axis}{"".join(lines)}'
            f'</svg><figcaption>{metric}</figcaption></figure>')


def _table(t: dict[str, dict[str, float | None]]) -> str:
    arms = list(t)
    metrics = list(next(iter(t.values()), {}))
    head = "".join(f"<th>{html.escape(a)}</th>" for a in arms)
    body = "".join(f"<tr><th>{m}</th>" + "".join(f"<td>{format_metric(m, t[a][m], '–')}</td>" for a in arms) + "</tr>"
                   for m in metrics)
    return f"<table><tr><th></th>{head}</tr>{body}</table>"


def _plain(v) -> str:
    if v is None:
        return "–"
    return f"{v:.2f}" if isinstance(v, float) else str(v)


def _ratio(part: float, whole: float) -> float | None:
    return part / whole if whole else None
