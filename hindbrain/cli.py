"""The ``hindbrain`` command line: demo, report, replay, explain, stats, sql, views, hindsight, seed, traits,
approve, worker, learner, serve, mcp, keys.

``--home`` may come before or after the subcommand. A ``--home`` that does not exist is an error
(a mistyped path must not silently become an empty brain), unless ``--create`` is given or the
command makes a brain by nature (``CREATING``). On a home that ``hindbrain serve`` serves
(``hindbrain.served``), ``sql``, ``explain`` and ``views`` go to the server over HTTP with the key
in ``HINDBRAIN_API_KEY`` (an analyst or admin key); without one, and for the other commands, one
line says which process serves it and what to use instead."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

# Commands that make the brain's folder when it is missing: a demo fills a new brain, serve,
# worker and learner start one, keys are made before the first serve, replay --into builds one,
# seed fills a new brain with curated units.
CREATING = frozenset({"demo", "serve", "worker", "embedder", "learner", "keys", "replay", "mcp", "seed"})


class CliError(Exception):
    """A one-line refusal: printed as ``hindbrain <command>: <message>``, exit 2."""


def _home(args) -> Path:
    home = Path(getattr(args, "home", None) or os.environ.get("HINDBRAIN_HOME") or ".hindbrain")
    if not home.exists() and args.command not in CREATING and not getattr(args, "create", False):
        raise CliError(f"no brain at {home} (--home or $HINDBRAIN_HOME); give --create to make a new one there")
    return home


def _served(args, home: Path):
    """A ``hindbrain.Client`` on the server serving ``home`` (with $HINDBRAIN_API_KEY), None when no
    process serves it; ``CliError`` saying what to use when one does and this command cannot reach it."""
    from hindbrain.served import server_of

    server = server_of(home)
    if server is None:
        return None
    key = os.environ.get("HINDBRAIN_API_KEY")
    if args.command in ("sql", "explain", "views") and key:
        from hindbrain import Client

        return Client(server.url, key)
    how = (f"HINDBRAIN_API_KEY=<analyst key> hindbrain {args.command} ..."
           if args.command in ("sql", "explain", "views")
           else "stop it, or use the HTTP API (hindbrain.Client; /metrics for counts)")
    raise CliError(f"{home} is served by process {server.pid} at {server.url}; {how}")


def _on_home(args, method: str, *call_args, **call_kwargs):
    """``method`` of the brain at ``--home``: over HTTP when a server serves it (``_served``), else
    embedded. ``Client`` and ``Brain`` take the same arguments for it."""
    from hindbrain import Brain

    home = _home(args)
    client = _served(args, home)
    if client is not None:
        with client:
            return getattr(client, method)(*call_args, **call_kwargs)
    with Brain.open(home) as brain:
        return getattr(brain, method)(*call_args, **call_kwargs)


def _json(value) -> str:
    def fallback(o):
        return o.hex() if isinstance(o, bytes) else str(o)

    return _printable_json(json.dumps(value, indent=2, ensure_ascii=False, default=fallback), structure=" \n")


def _printable_json(text: str, structure: str = " ") -> str:
    """JSON ``text`` with every character that does not print as itself written as JSON's escape (``\\u202e``):
    ``ensure_ascii=False`` keeps letters readable but leaves a bidi override, a line separator or a C1 control
    (U+009B starts an escape sequence in some terminals) raw inside a string — a stored text then reached the
    reader's terminal as it was (round thirty: ``sql``; round thirty-one: ``explain --json``, ``stats``,
    ``hindsight``). ``structure``: the whitespace of the JSON's own layout, the only raw one left."""
    return "".join(ch if ch.isprintable() or ch in structure else json.dumps(ch)[1:-1] for ch in text)


def cmd_stats(args) -> int:
    from hindbrain import Brain

    home = _home(args)
    _served(args, home)
    with Brain.open(home) as brain:
        print(_json(brain.stats()))
    return 0


def cmd_explain(args) -> int:
    """The timeline of the records behind an id (``hindbrain.audit``); ``--json``: the records themselves."""
    from hindbrain.audit import timeline

    chain = _on_home(args, "explain", args.id, tenant=args.tenant)
    if not chain:
        print(f"nothing in the log concerns {args.id!r}", file=sys.stderr)
        return 1
    if args.json:
        print(_json(chain))  # each position as [topic, partition, offset], as the HTTP answer has it
        return 0
    print(f"{args.id}: {len(chain)} records, oldest first (UTC); --json prints the records themselves")
    print("\n".join(timeline(args.id, chain)))
    return 0


def cmd_sql(args) -> int:
    """Read-only SQL over the views (``Brain.sql``): one JSON object per row, or ``--table``."""
    from hindbrain.schemas.api import InvalidInput
    from hindbrain.served import BrainServed

    try:
        rows = _on_home(args, "sql", args.query, tenant=args.tenant)
    except InvalidInput as exc:
        raise CliError(str(exc)) from None
    except (BrainServed, CliError):
        raise
    except Exception as exc:  # noqa: BLE001 - the engine's refusal of the query (readonly, syntax): its first line
        raise CliError(str(exc).strip().splitlines()[0][:500]) from None
    print(_table(rows) if args.table else "\n".join(map(_json_line, rows)))
    return 0


def _json_line(row: dict) -> str:
    """A row as one line of JSON, every character that does not print as itself escaped: ``ensure_ascii=False``
    keeps letters readable but left a bidi override (U+202E) or a line separator raw (round thirty)."""
    return _printable_json(json.dumps(row, ensure_ascii=False, default=str))


def _table(rows: list[dict]) -> str:
    """Rows as aligned text columns (``hindbrain sql --table``). A cell is a stored text, any agent's words: its
    characters that do not print are escaped (``tenant_sql.shown``), so an escape sequence in an event is not run
    by the reader's terminal (it cleared the screen or drew a fake prompt; round thirty)."""
    from hindbrain.service.tenant_sql import shown

    if not rows:
        return "(no rows)"
    names = [shown(n) for n in rows[0]]
    cells = [[shown(str(v)) for v in r.values()] for r in rows]
    widths = [max(len(n), *(len(c[i]) for c in cells)) for i, n in enumerate(names)]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip()
                     for line in [names, ["-" * w for w in widths], *cells])


def cmd_views(args) -> int:
    """The views ``hindbrain sql`` reads and their columns (``Brain.views``); with ``--tenant``, the
    views of that tenant's SQL. A served home is asked over HTTP (its key's tenant)."""
    from hindbrain import Brain

    home = _home(args)
    client = _served(args, home)
    if client is not None:
        with client:
            views = client.views()
    else:
        with Brain.open(home) as brain:
            views = brain.views(args.tenant)
    for name, columns in views.items():
        print(f"{name}: " + ", ".join(f"{c['name']} {c['type']}" for c in columns))
    return 0


def cmd_hindsight(args) -> int:
    from hindbrain import Brain
    from hindbrain.progress import stage

    with Brain.open(_home(args)) as brain, stage("hindsight", unit="phases") as progress:
        report = brain.hindsight(when_due=args.when_due,
                                 on_phase=lambda name, seconds: progress.step(f"{name} {seconds:.2f} s"))
        progress.summary = f"decisions: {len(report.decisions)}" if report.ran else "not due"
    print(_json({"ran": report.ran, "skipped": report.skipped, "why": report.why, "phases_s": report.phases_s,
                 "decisions": [{"kind": d["kind"], "reason": d["reason"], "subject_ids": d["subject_ids"]}
                               for d in report.decisions]}))
    return 0


def cmd_seed(args) -> int:
    from hindbrain import Brain
    from hindbrain.learning.seeds import SeedFileError
    from hindbrain.progress import stage
    from hindbrain.schemas.api import InvalidInput

    with Brain.open(_home(args)) as brain:
        try:
            with stage(f"seed {args.file}") as progress:
                report = brain.seed(args.file, tenant=args.tenant)
                progress.summary = f"{len(report.imported)} imported, {len(report.refused)} refused"
        except (SeedFileError, InvalidInput, OSError) as exc:
            print(f"hindbrain seed: {exc}", file=sys.stderr)
            return 2
    for message in report.refused:
        print(message, file=sys.stderr)
    print(f"imported {len(report.imported)} cognitions, refused {len(report.refused)}")
    return 1 if report.refused else 0


def cmd_traits(args) -> int:
    """The proposed traits, one line each. A trait's text is an agent's rule and its domains the scenes of its
    tasks: their characters that do not print are escaped (``tenant_sql.shown``), so the operator who approves one
    reads what is stored — an escape sequence erased or recoloured a line, a bidi override reordered it (round
    thirty-one)."""
    from hindbrain import Brain
    from hindbrain.service.tenant_sql import shown

    with Brain.open(_home(args)) as brain:
        pending = brain.pending_traits(args.tenant)
    for trait in pending:
        print(shown(f"{trait['fragment_id']}  {trait['successes']} successes in {', '.join(trait['domains'])}: "
                    f"{trait['text']}"))
    if not pending:
        print(f"no trait waits for approval in tenant {args.tenant!r}")
    return 0


def cmd_approve(args) -> int:
    from hindbrain import Brain
    from hindbrain.schemas.api import InvalidInput

    with Brain.open(_home(args)) as brain:
        try:
            decision_id = brain.approve(tenant=args.tenant, fragment_id=args.id, approver=args.by,
                                        accept=not args.decline, reason=args.reason)
        except InvalidInput as exc:
            print(f"hindbrain approve: {exc}", file=sys.stderr)
            return 2
    print(f"{'declined' if args.decline else 'approved'} {args.id}: decision {decision_id}")
    return 0


def cmd_report(args) -> int:
    from hindbrain import Brain
    from hindbrain.sim.report import rounds, unit_metrics, write_html

    home = _home(args)
    with Brain.open(home) as brain:
        rows, learning = rounds(brain), unit_metrics(brain)
    if not rows:
        print(f"no simulated fleet ran in {home}: run `hindbrain demo` (or hindbrain.sim.compare) first",
              file=sys.stderr)
        return 1
    out = write_html(Path(args.out) if args.out else home / "report.html", rows, learning)
    print(f"wrote {out}")
    return 0


def cmd_replay(args) -> int:
    from hindbrain.cli_replay import run_replay

    return run_replay(_home(args), args.into, args.check, args.workers)


def cmd_demo(args) -> int:
    from hindbrain.demo import run_demo

    return run_demo(_home(args) if args.home else None, rounds=args.rounds, seed=args.seed)


def cmd_worker(args) -> int:
    from hindbrain.settings import Settings
    from hindbrain.streams.worker import run_worker

    overrides = {k: v for k, v in {"home": args.home, "kafka": args.kafka, "clickhouse": args.clickhouse}.items() if v}
    run_worker(Settings(**overrides), loglevel=args.loglevel, engine=args.engine)
    return 0


def cmd_embedder(args) -> int:
    from hindbrain.settings import Settings
    from hindbrain.streams.embedders import run_embedder

    overrides = {k: v for k, v in {"home": args.home, "kafka": args.kafka}.items() if v}
    run_embedder(Settings(**overrides), loglevel=args.loglevel)
    return 0


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def cmd_learner(args) -> int:
    """Run the fleet's one learner over Kafka until interrupted."""
    import time

    from hindbrain.brain import extractor_of
    from hindbrain.distributed import learner_group
    from hindbrain.learning.kafka_learner import KafkaLearner
    from hindbrain.settings import Settings
    from hindbrain.streams.kafka_log import KafkaLog

    cfg = Settings(**{k: v for k, v in {"home": args.home, "kafka": args.kafka}.items() if v})
    if not cfg.kafka:
        print("hindbrain learner: give --kafka or HINDBRAIN_KAFKA (the embedded brain learns by itself)",
              file=sys.stderr)
        return 2
    # SIGTERM (a process manager's stop, Kubernetes' above all) stops it as cleanly as Ctrl-C;
    # a background job started by a shell may not even receive SIGINT (it inherits it ignored).
    signal.signal(signal.SIGTERM, _raise_interrupt)
    with KafkaLog.of(cfg) as log:
        learner = KafkaLearner(log, learner_group(cfg), extractor_of(cfg), cfg.batch_size)
        try:  # a stop may land as soon as the thread runs, even before the banner: stop cleanly then too
            learner.start()
            print(f"hindbrain learner: group {learner_group(cfg)!r} on {cfg.kafka}; Ctrl-C or SIGTERM stops it",
                  file=sys.stderr)
            while learner.alive:
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            learner.stop()
    return 0


def cmd_serve(args) -> int:
    from hindbrain import Brain
    from hindbrain.served import announced
    from hindbrain.service.http import create_app
    from hindbrain.service.keys import KeyStore
    from hindbrain.service.replica import listen, replica_count, serve_owner

    home = _home(args)
    kafka = args.kafka or os.environ.get("HINDBRAIN_KAFKA")
    try:
        replicas = replica_count(args.replicas, embedded=not kafka)
    except ValueError as exc:
        print(f"hindbrain serve: {exc}", file=sys.stderr)
        return 2
    # uvicorn shuts down gracefully on SIGTERM, then raises the signal again with the handler
    # found before it: with the default one, the process died there and the brain never
    # closed (no learner snapshot, no final projection). Ours turns it into an interrupt that
    # leaves through the ``with`` below.
    try:  # the port first: a busy one fails in one line, before the brain loads or anything is announced
        listener = listen(args.host, args.port)
    except OSError as exc:
        why = os.strerror(exc.errno) if exc.errno else str(exc)  # not the socket module's "(while attempting...)"
        print(f"hindbrain serve: cannot listen on {args.host}:{args.port}: {why}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        with listener, Brain.open(home, kafka=args.kafka, clickhouse=args.clickhouse) as brain:
            app = create_app(brain, KeyStore(home))
            print(f"hindbrain serve: http://{args.host}:{args.port} (OpenAPI at /docs); brain at {home}; "
                  f"{replicas} recall replica(s)", file=sys.stderr)
            with announced(home, f"http://{args.host}:{args.port}"):  # serve.json: who serves this home
                serve_owner(brain, app, args.host, args.port, replicas, args.log_level, listener)
    except KeyboardInterrupt:
        pass
    return 0


def cmd_mcp(args) -> int:
    from hindbrain.service.mcp import run

    return run(args, _home(args))


def cmd_keys(args) -> int:
    from hindbrain.service.keys import KeyStore
    from hindbrain.service.tenant_sql import shown

    keys = KeyStore(_home(args))
    if args.action == "create":
        if not args.tenant:
            print("keys create: --tenant is required", file=sys.stderr)
            return 2
        try:
            print(keys.create(args.tenant, args.label or "", args.role, args.agent))
        except ValueError as exc:  # names the field (a blank --agent, an unknown role)
            print(f"keys create: {exc}", file=sys.stderr)
            return 2
        bound = f", acting as agent {args.agent!r} only" if args.agent else ""
        print(f"{args.role} key of tenant {args.tenant!r}{bound}; store it now: only its hash is kept", file=sys.stderr)
        return 0
    if args.action == "revoke":
        if not args.key_id:
            print("keys revoke: give the key id (or the key)", file=sys.stderr)
            return 2
        if not keys.revoke(args.key_id):
            print(f"no live key {args.key_id!r}", file=sys.stderr)
            return 1
        return 0
    for k in keys.list(args.tenant):  # a label is free text: shown escaped, as every stored text the CLI prints
        print(shown(f"{k.key_id}  {k.tenant}  {k.role}{f' ({k.agent})' if k.agent else ''}  "
                    f"{'revoked' if k.revoked_us else 'live'}  {k.label}"))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hindbrain", description="An event-sourced brain for fleets of AI agents.")
    parser.add_argument("--home", help="the embedded brain's folder (default: $HINDBRAIN_HOME or ./.hindbrain)")
    parser.add_argument("--create", action="store_true", help="make the brain's folder if it does not exist")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="a simulated agent fleet learns; prints metrics per round")
    demo.add_argument("--rounds", type=int, default=6)
    demo.add_argument("--seed", type=int, default=7)
    demo.set_defaults(func=cmd_demo)
    replay = sub.add_parser("replay", help="rebuild every view from the log; print a digest per view")
    replay.add_argument("--into", help="warehouse URL to rebuild into (default: a fresh database beside the live one)")
    replay.add_argument("--check", action="store_true", help="exit 1 unless every replayed digest equals the live one")
    replay.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="processes that decode and project the log (default: one per core; 0: in-process)")
    replay.set_defaults(func=cmd_replay)
    explain = sub.add_parser("explain", help="a timeline of every record and decision behind an id, oldest first")
    explain.add_argument("id")
    explain.add_argument("--json", action="store_true", help="the records themselves (a JSON array), not the timeline")
    explain.add_argument("--tenant", help="only this tenant's records (a served brain: the API key's)")
    explain.set_defaults(func=cmd_explain)
    worker = sub.add_parser("worker", help="distributed: a worker projecting Kafka into the warehouse")
    worker.add_argument("--kafka", help="bootstrap servers (default: $HINDBRAIN_KAFKA)")
    worker.add_argument("--clickhouse", help="warehouse URL (default: $HINDBRAIN_CLICKHOUSE or chdb://<home>/views)")
    worker.add_argument("--loglevel", default="info")
    worker.add_argument("--engine", choices=("aiokafka", "faust"), default="aiokafka",
                        help="aiokafka (default: a consumer taking whole fetches as one batch) or faust (a Faust "
                             "agent running the same pipeline, ~3x slower: see docs/distributed.md)")
    worker.set_defaults(func=cmd_worker)
    embedder = sub.add_parser("embedder", help="distributed: a member of the embedder group (neural vectors to the "
                                               "Kafka vectors topic; start one per core, up to 4 per topic)")
    embedder.add_argument("--kafka", help="bootstrap servers (default: $HINDBRAIN_KAFKA)")
    embedder.add_argument("--loglevel", default="info")
    embedder.set_defaults(func=cmd_embedder)
    seed = sub.add_parser("seed", help="import curated cognitions (YAML/JSON) at the seed's higher confidence")
    seed.add_argument("file")
    seed.add_argument("--tenant", help="the tenant to seed (default: the file's 'tenant:')")
    seed.set_defaults(func=cmd_seed)
    traits = sub.add_parser("traits", help="proposed character traits waiting for approval")
    traits.add_argument("--tenant", required=True)
    traits.set_defaults(func=cmd_traits)
    approve = sub.add_parser("approve", help="approve (or --decline) a proposed trait: it joins the identity layer")
    approve.add_argument("id", help="the fragment id of the proposed trait")
    approve.add_argument("--tenant", required=True)
    approve.add_argument("--by", required=True, help="who approves (recorded in the decision)")
    approve.add_argument("--reason")
    approve.add_argument("--decline", action="store_true", help="keep it a skill instead")
    approve.set_defaults(func=cmd_approve)
    report = sub.add_parser("report", help="the learning report (HTML, static) from the views of a simulated fleet")
    report.add_argument("--out", help="where to write it (default: <home>/report.html)")
    report.set_defaults(func=cmd_report)
    learner = sub.add_parser("learner", help="distributed: the fleet's one learner, over Kafka")
    learner.add_argument("--kafka", help="bootstrap servers (default: $HINDBRAIN_KAFKA)")
    learner.set_defaults(func=cmd_learner)
    sub.add_parser("stats", help="rows per view, log length, dead letters").set_defaults(func=cmd_stats)
    sql = sub.add_parser("sql", help="read-only SQL over the views (see `hindbrain views`): one JSON row per line")
    sql.add_argument("query")
    sql.add_argument("--tenant", help="over this tenant's views only (default: every tenant's)")
    sql.add_argument("--table", action="store_true", help="aligned text columns instead of JSON lines")
    sql.set_defaults(func=cmd_sql)
    views = sub.add_parser("views", help="the SQL views and their columns")
    views.add_argument("--tenant", help="the views of this tenant's SQL (default: the warehouse's own)")
    views.set_defaults(func=cmd_views)
    hindsight = sub.add_parser("hindsight", help="run the learning jobs now (or --when-due, for a scheduler)")
    hindsight.add_argument("--when-due", action="store_true",
                           help="run only if > 500 new events or > 3 days since the last run; else say why")
    hindsight.set_defaults(func=cmd_hindsight)
    serve = sub.add_parser("serve", help="the HTTP API (OpenAPI at /docs); API keys from `hindbrain keys create`")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--kafka", help="distributed: bootstrap servers (default: $HINDBRAIN_KAFKA)")
    serve.add_argument("--clickhouse", help="distributed: the warehouse URL (default: $HINDBRAIN_CLICKHOUSE)")
    serve.add_argument("--log-level", default="warning")
    serve.add_argument("--replicas", default="auto",
                       help="recall replicas beside the owner process (embedded brain): a number, or auto (one per "
                            "core beyond the first, at most 3; 0 over Kafka)")
    serve.set_defaults(func=cmd_serve)
    from hindbrain.service.mcp_cli import add_parser as add_mcp_parser

    add_mcp_parser(sub).set_defaults(func=cmd_mcp)
    from hindbrain.service.roles import DEFAULT_ROLE, ROLES

    keys = sub.add_parser("keys", help="API keys per tenant and role (hashed at rest): create, revoke, list")
    keys.add_argument("action", choices=("create", "revoke", "list"))
    keys.add_argument("key_id", nargs="?", help="revoke: the key id (or the whole key)")
    keys.add_argument("--tenant")
    keys.add_argument("--label", help="create: who or what the key is for")
    keys.add_argument("--agent", help="create: the one agent the key acts as (its requests cannot name another)")
    keys.add_argument("--role", choices=ROLES, default=DEFAULT_ROLE,
                      help="create: agent (default: perceive, learn, recall, outcome), analyst (sql, explain, "
                           "traits) or admin (approve, invalidate, hindsight, keys, and everything else)")
    keys.set_defaults(func=cmd_keys)
    for command in sub.choices.values():  # --home and --create after the subcommand too
        if "--home" not in command._option_string_actions:
            command.add_argument("--home", default=argparse.SUPPRESS, help="as before the subcommand")
        command.add_argument("--create", action="store_true", default=argparse.SUPPRESS,
                             help="make the brain's folder if it does not exist")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from hindbrain.served import BrainServed

    try:
        return args.func(args)
    except (CliError, BrainServed) as exc:
        print(f"hindbrain {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
