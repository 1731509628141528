"""The learning report: per arm and round, from SQL over the views (every arm recorded
each task's final outcome, with its notes, under its own tenant), in one static HTML file.

Charts are matplotlib figures rendered to SVG and inlined in the page (``hindbrain.sim.charts``):
nothing is fetched to view it. Each learning curve has a point per round, axes with ticks and
units, and over several seeds of a world (tenants ``sim-<arm>-<world>-<seed>``) the median per
round with the band from the lowest to the highest seed. Beside them, recall quality and
latency from the benches next to the peers, read from the numbers ``bench/quality.py --json``
wrote (``recall_bench.json``, with its date and command); the report never runs a bench.
``hindbrain report`` regenerates it from any brain the simulator ran in."""

from __future__ import annotations

import html
import json
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
LEFT JOIN (SELECT tenant, recall_id, groupArrayArray(applied) AS applied FROM outcomes FINAL
           WHERE tenant LIKE 'sim-hindbrain-%' AND recall_id IS NOT NULL GROUP BY tenant, recall_id) AS o
       ON o.tenant = i.tenant AND o.recall_id = i.recall_id
GROUP BY tenant ORDER BY tenant
"""
CURVES = ("success rate", "repeated-mistake rate", "preference consistency", "tokens per success",
          "upset-customer tickets solved")
RECALL_BENCH = Path(__file__).with_name("recall_bench.json")  # written by bench/quality.py --json


@dataclass(frozen=True)
class Round:
    """One arm's round as the views tell it: the same counts (and so the same metrics,
    ``Counts.metrics``) the simulator keeps, rebuilt from the outcome records."""

    tenant: str
    world: str
    arm: str
    round: int
    counts: Counts

    @property
    def seed(self) -> str:
        """The world's seed: the last part of the arm's tenant (``hindbrain.sim.tenant_of``)."""
        return self.tenant.rsplit("-", 1)[-1]


def rounds(brain) -> list[Round]:
    out = []
    for r in brain.sql(ROUNDS_SQL):
        key = {k: r.pop(k) for k in ("tenant", "world", "arm", "round")}
        out.append(Round(**key, counts=Counts(**r)))
    return out


def curves(rows: list[Round]) -> dict[str, dict[str, dict[int, list[float]]]]:
    """metric → arm → round → the metric's value in each seed that has one (a round with
    nothing to measure, e.g. no known task yet, has no value)."""
    out: dict[str, dict[str, dict[int, list[float]]]] = {m: {} for m in CURVES}
    for r in rows:
        metrics = r.counts.metrics()
        for m in CURVES:
            values = out[m].setdefault(r.arm, {}).setdefault(r.round, [])
            if metrics[m] is not None:
                values.append(metrics[m])
    return out


def totals(rows: list[Round]) -> dict[str, dict[str, float | None]]:
    by_arm: dict[str, Counts] = {}
    for r in rows:
        by_arm.setdefault(r.arm, Counts()).add(r.counts)
    return {arm: counts.metrics() for arm, counts in by_arm.items()}


def unit_metrics(brain) -> dict[str, float | None]:
    """hindbrain's own learning, from its views: what became verified or invalid, and what
    of the injected cognitions the agents applied (the context layer of design.md §seed-000)."""
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


def write_html(path: Path, rows: list[Round], learning: dict | None = None,
               recall_bench: Path | None = RECALL_BENCH) -> Path:
    """The report as one self-contained HTML file (inline SVG charts, no script, no link)."""
    from hindbrain.sim import charts

    sections, gain = [], None
    for world in sorted({r.world for r in rows}):
        mine = [r for r in rows if r.world == world]
        seeds = sorted({r.seed for r in mine})
        series = {m: v for m, v in curves(mine).items() if any(xs for rounds in v.values() for xs in rounds.values())}
        t = totals(mine)
        gain = gain if world == "tickets" else quality_per_token(t, mine)
        spread = (f"median of {len(seeds)} seeds ({', '.join(seeds)}) per round; the band spans the lowest to the "
                  "highest seed" if len(seeds) > 1 else
                  f"one seed ({seeds[0]}): no spread to draw; <code>python bench/sim.py --report FILE</code> draws "
                  "the spread over seeds 7–11")
        sections.append(f"<h2>World: {html.escape(world or 'fleet')}</h2>{_table(t)}<p class='note'>{spread}; "
                        f"totals pool every seed.</p><div class='charts'>"
                        + "".join(charts.learning_curve(f"{world}-{m}", m, s) for m, s in series.items()) + "</div>")
    own = "".join(f"<tr><th>{html.escape(k)}</th><td>{_plain(v)}</td></tr>" for k, v in (learning or {}).items())
    own += f"<tr><th>success gain over no memory per 100 injected tokens</th><td>{_plain(gain)}</td></tr>"
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>hindbrain learning report</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:75em}} .charts{{display:flex;flex-wrap:wrap;gap:1em}}
figure{{margin:0}} figcaption,.note{{color:#555;font-size:.9em;max-width:60em}}
table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:.3em .7em;text-align:right}}
pre{{background:#f6f6f6;padding:1em;overflow:auto}}</style></head><body>
<h1>Does it learn?</h1><p>The same simulated fleet — same world, seed and agent policy — with no memory, with naive
RAG (every event stored, top-5 by similarity injected, no gate, no feedback) and with hindbrain. Agents act only on
what was injected. Curves are per round.</p>
{"".join(sections)}
<h2>hindbrain's own learning</h2><table>{own}</table>
{_recall_section(recall_bench)}
<h2>The queries behind every number</h2><pre>{html.escape(ROUNDS_SQL.strip())}</pre>
<pre>{html.escape(UNITS_SQL.strip())}</pre><pre>{html.escape(APPLIED_SQL.strip())}</pre></body></html>"""
    path.write_text(page, encoding="utf-8")
    return path


def _recall_section(source: Path | None) -> str:
    """Recall quality and latency next to the peers, from the benches' measured numbers."""
    from hindbrain.sim import charts

    if source is None or not source.exists():
        return ("<h2>Recall quality and latency</h2><p class='note'>No measured numbers here: "
                "<code>python bench/quality.py --quick --json hindbrain/sim/recall_bench.json</code> writes them.</p>")
    measured = json.loads(source.read_text(encoding="utf-8"))
    where = (f"Measured {html.escape(measured['measured'])} by <code>{html.escape(measured['command'])}</code> "
             f"(commit {html.escape(measured['commit'])}; {html.escape(measured['machine'])}, load average "
             f"{measured.get('load_average_1min_at_end', '?')}); {html.escape(measured['half'])} questions. "
             f"{html.escape(measured['what'])}. The simulator's naive RAG is the fleet's peer above; these sets are "
             "the recall benchmarks of <code>docs/recall-quality.md</code>.")
    return (f"<h2>Recall quality and latency, next to the peers</h2><div class='charts'>"
            f"{charts.recall_quality(measured['sets'])}{charts.recall_latency(measured['sets'])}</div>"
            f"<p class='note'>{where}</p>")


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
