"""The tenant SQL sandbox (design.md §issue-27, point 1): an allow-list, two parsers, an engine wall, limits.

One brain holds two tenants: ``acme`` (the attacker, an analyst of its own rows) and ``globex``,
whose message carries a secret. Every attack is sent as ``Brain.sql(query, tenant="acme")``
(the HTTP route calls the same ``tenant_sql``) and must be refused with ``InvalidInput`` on
``query``; no answer and no error message may carry the secret, a line of ``/etc/passwd`` or the
brain's folder. Every function ClickHouse lists (``system.functions``, read on the brain's own,
unrestricted session) is either refused by name or on the allow-list and harmless when tried
with a file path, the log's path and a setting's name.
"""

from __future__ import annotations

import re
import threading
import time

import pytest

from hindbrain import Brain
from hindbrain.schemas.api import InvalidInput
from hindbrain.service.sql_functions import allowed_function
from hindbrain.service.tenant_sql import tenant_database, view_statements, views_of

SECRET = "globex-card-4242-4242-password-hunter2"
PASSWD = "root:x:0:"


@pytest.fixture(scope="module")
def brain(tmp_path_factory):
    home = tmp_path_factory.mktemp("sandbox")
    with Brain.open(home) as b:
        b.perceive(text=f"my card {SECRET}", tenant="globex", agent="bot")
        for n in range(10):
            b.perceive(text=f"acme note {n}", tenant="acme", agent="bot")
        b.sql("SELECT 1", tenant="acme")  # the views of acme exist before any attack
        b.sql("SELECT 1", tenant="globex")
        yield b


def leaks(brain, text: str, query: str = "") -> list[str]:
    """What of another tenant, the host or the server ``text`` shows (not counting what the
    ``query`` itself wrote, which an error message may quote)."""
    home = str(brain.settings.home)
    return [what for what, marker in (("another tenant's row", SECRET), ("/etc/passwd", PASSWD),
                                      ("the brain's folder", home)) if marker in text and marker not in query]


def refused(brain, query: str, tenant: str = "acme") -> str:
    """The refusal's message; fails if the query ran."""
    with pytest.raises(InvalidInput) as caught:
        rows = brain.sql(query, tenant=tenant)
        pytest.fail(f"ran: {query!r} -> {str(rows)[:200]}")
    assert caught.value.field == "query"
    message = str(caught.value)
    assert not leaks(brain, message, query), f"the refusal of {query!r} leaks {leaks(brain, message, query)}: " \
                                             f"{message[:300]}"
    return message


def attacks(home, log, victim: str = "globex") -> list[str]:
    """SQL that reaches for host files, settings or ``victim``'s rows (bench/sql_isolation.py sends
    them over HTTP): ``home`` is the brain's folder, ``log`` its log file."""
    globex = tenant_database(victim)
    return [
        # host files, the scalar file() included, and the server's settings and identity
        "SELECT getServerSetting('path')", "SELECT getSetting('max_execution_time')",
        f"SELECT file('{log}')", f"SELECT extractAll(file('{log}-wal'), '.+')", "SELECT file('/etc/passwd')",
        "SELECT `file`('/etc/passwd')", "SELECT FILE('/etc/passwd')", "SELECT fіle('/etc/passwd')",  # Cyrillic і
        "WITH '/etc/passwd' AS p SELECT file(p)", "SELECT length(file('/proc/self/environ'))",
        f"SELECT * FROM file('{home}/keys.sqlite', 'RawBLOB')", "SELECT * FROM file('/etc/passwd', 'LineAsString')",
        "SELECT currentDatabase()", "SELECT hostName()", "SELECT version()", "SELECT uptime()", "SELECT tcpPort()",
        "SELECT currentUser()", "SELECT getMacro('x')", "SELECT serverTimezone()", "SELECT chdb()",
        "SELECT filesystemAvailable()", "SELECT aiGenerate('hello')", "SELECT sleep(3)",
        # table functions: the network, other databases, executables, the client's input
        "SELECT * FROM url('http://127.0.0.1:1/x', 'CSV', 'a String')", "SELECT * FROM s3('http://127.0.0.1:1/b/k')",
        "SELECT * FROM remote('127.0.0.1', hindbrain.events)", "SELECT * FROM cluster('default', hindbrain.events)",
        "SELECT * FROM merge('hindbrain', '^events$')", f"SELECT * FROM merge('{globex}', '.*')",
        "SELECT * FROM view(SELECT * FROM hindbrain.events)", "SELECT * FROM input('x String')",
        "SELECT * FROM format(CSV, 'a\n1')", "SELECT * FROM executable('id', 'TSV', 'x String')",
        "SELECT * FROM numbers(10)", "SELECT * FROM generateRandom('a String')",
        "SELECT * FROM mysql('127.0.0.1:1', 'd', 't', 'u', 'p')", "SELECT * FROM loop(events)",
        # another tenant's rows: qualified names, every spelling, and by name from functions
        "SELECT * FROM hindbrain.events", "SELECT * FROM `hindbrain`.`events`", 'SELECT * FROM "hindbrain".events',
        "SELECT * FROM hindbrain . events", "SELECT * FROM hindbrain/**/.events", f"SELECT * FROM `{globex}`.events",
        f"SELECT * FROM {globex}.events", f"SELECT * FROM {globex}", "SELECT * FROM system.one",
        "SELECT * FROM INFORMATION_SCHEMA.TABLES", "SELECT * FROM system.processes",
        "SELECT text FROM events WHERE event_id IN hindbrain.events",
        "SELECT text FROM events WHERE event_id IN (SELECT event_id FROM hindbrain.events)",
        "SELECT * FROM events e JOIN hindbrain.events h ON e.event_id = h.event_id",
        "SELECT * FROM (SELECT * FROM hindbrain.events) AS events",
        "WITH events AS (SELECT * FROM hindbrain.events) SELECT * FROM events",
        "SELECT dictGet('d', 'a', toUInt64(1))", "SELECT joinGet('hindbrain.events', 'text', 'x')",
        "SELECT hasColumnInTable('hindbrain', 'events', 'text')", "SELECT x FROM events GLOBAL IN (1)",
        "SELECT 1 WHERE 1 GLOBAL IN (SELECT 1)",
        # settings, writes, statements that are not SELECT, output elsewhere, two statements
        "SELECT 1 SETTINGS max_execution_time = 0", "SELECT * FROM (SELECT 1 SETTINGS readonly = 0)",
        "SELECT count() FROM events SETTINGS max_threads = 64, os_thread_priority = 0", "SET readonly = 0",
        "SYSTEM FLUSH LOGS", "SYSTEM SHUTDOWN", "ATTACH TABLE x FROM '/etc' (a String) ENGINE = Log",
        "SELECT 1 INTO OUTFILE '/tmp/hindbrain-sandbox-outfile'", "SELECT 1 FORMAT JSON",
        "SELECT 1; SELECT * FROM hindbrain.events", "SELECT 1;SELECT 2", "INSERT INTO events (text) VALUES ('x')",
        "CREATE TABLE t (a String) ENGINE = Memory", "DROP TABLE events", "ALTER TABLE events DELETE WHERE 1",
        "KILL QUERY WHERE 1", "SHOW TABLES", "SHOW DATABASES", "DESCRIBE hindbrain.events", "EXPLAIN SELECT 1",
        "USE hindbrain", "OPTIMIZE TABLE events", "SELECT * FROM events -- \n; SELECT * FROM hindbrain.events",
    ]


def test_every_attack_is_refused_and_nothing_leaks(brain):
    for query in attacks(brain.settings.home, brain.settings.log_path()):
        refused(brain, query)


def test_identifier_parameters_are_refused(brain):
    """``{t:Identifier}`` is substituted by ClickHouse after both parsers looked: a name never checked."""
    for query in ("SELECT * FROM {t:Identifier}", "SELECT text FROM events WHERE event_id IN {t:Identifier}",
                  "SELECT {t:Identifier} FROM events", "SELECT text FROM events e JOIN {t:Identifier} h ON 1"):
        with pytest.raises(InvalidInput, match="Identifier"):
            brain.sql(query, {"t": "hindbrain.events"}, tenant="acme")


def test_parameters_bind_as_values_never_as_text(brain):
    """A parameter the query does not name as ``{name:Type}`` was bound by the client's ``%`` formatting:
    its value became SQL that sqlglot never read (round twenty-seven). Now refused, naming the parameter."""
    smuggled = ", count() AS n FROM events UNION ALL SELECT '', 2, "  # ran as SQL: two more columns
    for query, parameters in (("SELECT '%(x)s' AS a", {"x": smuggled}), ("SELECT 1 AS `%(x)s`", {"x": "b"}),
                              ("SELECT {p:String} AS a", {"p": "ok", "unused": 1}),
                              ("SELECT 1 AS a", {"$x$": b"x"})):  # the client's raw splice
        with pytest.raises(InvalidInput) as caught:
            rows = brain.sql(query, parameters, tenant="acme")
            pytest.fail(f"ran: {query!r} {parameters!r} -> {rows}")
        assert caught.value.field == "parameters" and repr(next(reversed(parameters))) in str(caught.value)
    hostile = "'; SELECT text FROM hindbrain.events --"
    assert brain.sql("SELECT { p : String } AS a", {"p": hostile}, tenant="acme") == [{"a": hostile}]


def test_aggregates_named_by_a_string_meet_the_allow_list(brain):
    """``arrayReduce``, ``initializeAggregation`` and a type ``AggregateFunction(name, …)`` build an aggregate by
    a name the function check never saw: the refused ``stochasticLinearRegression`` ran that way (round
    twenty-seven), as would any aggregate a future engine adds. Now the name is read, and must be a literal."""
    refused_name = "stochasticLinearRegression"
    state = f"AggregateFunction({refused_name}, Float64, Float64)"
    for query in (f"SELECT arrayReduce('{refused_name}', [1.0], [2.0])",
                  f"SELECT arrayReduceInRanges('{refused_name}', [(1, 1)], [1.0], [2.0])",
                  f"SELECT initializeAggregation('{refused_name}State', 1.0, 1.0)",
                  f"SELECT finalizeAggregation(defaultValueOfTypeName('{state}'))",
                  f"SELECT finalizeAggregation(CAST(unhex('00') AS AggregateFunction(1, `{refused_name}`, Float64)))",
                  f"SELECT finalizeAggregation(defaultValueOfTypeName('Tuple(a SimpleAggregateFunction({refused_name}, "
                  "Float64))').1)", f"SELECT {{x:{state}}}"):
        assert refused_name in refused(brain, query)
    for query in ("SELECT arrayReduce(concat('stochasticLinear', 'Regression'), [1.0], [2.0])",
                  f"SELECT finalizeAggregation(defaultValueOfTypeName(concat('{state[:30]}', '{state[30:]}')))",
                  f"WITH '{refused_name}' AS a SELECT arrayReduce(a, [1.0], [2.0])"):
        assert "must be a string literal" in refused(brain, query)
    rows = brain.sql("SELECT arrayReduce('sum', [1, 2]) AS s, arrayReduce('quantiles(0.5)', [1.0]) AS q, "
                     "finalizeAggregation(initializeAggregation('sumState', toUInt64(3))) AS i, "
                     "toTypeName(defaultValueOfTypeName('AggregateFunction(sum, UInt8)')) AS t, "
                     "CAST('5' AS UInt8) AS c", tenant="acme")
    assert rows == [{"s": 3, "q": [1.0], "i": 3, "t": "AggregateFunction(sum, UInt8)", "c": 5}]


def test_the_tenant_sees_its_own_rows_in_every_view_and_no_one_elses(brain):
    for view in views_of():
        rows = brain.sql(f"SELECT DISTINCT tenant FROM {view}", tenant="acme")
        assert {r["tenant"] for r in rows} <= {"acme"}, view
    assert brain.sql("SELECT count() AS n FROM events", tenant="acme") == [{"n": 10}]
    texts = brain.sql("SELECT groupArray(text) AS t FROM events", tenant="acme")
    assert not leaks(brain, str(texts))


def test_ordinary_analyst_queries_run(brain):
    """What an analyst writes: CTEs, joins of its views, UNION ALL, windows, lambdas, combinators,
    maps, parameters, CASE, casts, JSON extraction."""
    rows = brain.sql(
        "WITH notes AS (SELECT event_id, text, ts FROM events WHERE text LIKE {p:String}) "
        "SELECT n.text, row_number() OVER (ORDER BY n.ts) AS r, countIf(f.applied > 0) AS used, "
        "arrayMap(x -> x * 2, [1, 2]) AS doubled, CASE WHEN r > 1 THEN 'later' ELSE 'first' END AS which, "
        "toDate(n.ts) AS day, CAST(r AS String) AS rs, JSONExtractString('{\"a\": \"b\"}', 'a') AS js "
        "FROM notes n LEFT JOIN feedback f ON f.item_id = n.event_id GROUP BY n.text, n.ts ORDER BY r",
        {"p": "acme note%"}, tenant="acme")
    assert len(rows) == 10 and rows[0]["doubled"] == [2, 4] and rows[0]["which"] == "first" and rows[0]["js"] == "b"
    union = brain.sql("SELECT 1 AS n UNION ALL SELECT count() FROM events WHERE has({ids:Array(String)}, event_id)",
                      {"ids": ["none"]}, tenant="acme")
    assert sorted(r["n"] for r in union) == [0, 1]


# One call per function whose cost is the product of its arguments' lengths (sql_functions.ROW_QUADRATIC),
# with small arguments: each ran on the engine before round twenty-four, and at full size one call
# outlasted every limit (countSubstringsCaseInsensitive: 146 s against max_execution_time = 10).
QUADRATIC_CALLS = [
    "SELECT editDistance(text, 'acme') FROM events", "SELECT levenshteinDistanceUTF8('ab', 'ba')",
    "SELECT damerauLevenshteinDistance('ab', 'ba')", "SELECT arrayLevenshteinDistance([1, 2], [2, 1])",
    "SELECT arraySimilarity([1], [2], [1.0], [1.0])", "SELECT hasAll([1, 2], [2])",
    "SELECT count() FROM events WHERE hasAny(entities, ['x'])", "SELECT position(text, 'note') FROM events",
    "SELECT locate('note', 'a note')", "SELECT INSTR('a note', 'note')", "SELECT POSITION('note' IN 'a note')",
    "SELECT count() FROM events WHERE text ILIKE '%NOTE%'", "SELECT count() FROM events WHERE text NOT ILIKE 'x'",
    "SELECT countSubstringsCaseInsensitive(text, 'NOTE') FROM events", "SELECT hasTokenCaseInsensitive('a b', 'B')",
    "SELECT countMatchesCaseInsensitive('ab', 'B')", "SELECT multiSearchAnyCaseInsensitiveUTF8('ab', ['B'])",
    "SELECT positionCaseInsensitive('ab', 'B')", "WITH 'ab' AS h SELECT `position`(h, 'b')",
    "SELECT highlight(text, ['note']) FROM events", "SELECT normalizeUTF8NFC(text) FROM events",  # round 25
    "SELECT removeDiacriticsUTF8('é')", "SELECT `normalizeUTF8NFKCCasefold`(text) FROM events",
]


def test_functions_one_call_of_which_outlasts_the_limits_are_refused_with_what_to_write(brain):
    """The limits are checked between blocks, never inside a function: a quadratic function on one row
    cannot be stopped (nor cancelled), so it may not run; the refusal says what to write instead, and
    that alternative runs."""
    for query in QUADRATIC_CALLS:
        assert "write " in refused(brain, query), query
    linear = brain.sql("SELECT countIf(lower(text) LIKE '%note%') AS n, "
                       "max(multiSearchFirstPosition(text, ['note'])) AS p, "
                       "length(arrayIntersect([1, 2], [2])) AS common FROM events", tenant="acme")
    assert linear == [{"n": 10, "p": 6, "common": 1}]


# A pattern whose cost one row chooses (sql_patterns, docs/security.md round twenty-five): each below ran on
# the engine before; at full size (ten 10⁶-character rows) `a[ab]{20}c` took 1.8 s a row, `(?i)` and 1,200
# letters 17.8 s, against a time limit checked only between blocks. Each refusal names the function and
# says what to write.
PATTERN_ATTACKS = [
    ("match", "SELECT match(text, 'a[ab]{20}c') FROM events"),
    ("match", "SELECT count() FROM events WHERE text REGEXP 'a[ab]{20}c'"),
    ("match", "SELECT match(text, '(?i)" + "A" * 900 + "b') FROM events"),
    ("match", "SELECT match(text, '(?i)' || repeat('A', 5000) || 'b') FROM events"),  # round 24's 88 s
    ("match", "SELECT match(text, text) FROM events"),
    ("extract", "SELECT extract(text, '[ab]{20}a[ab]*') FROM events"),
    ("replaceRegexpAll", "WITH 'a+' AS p SELECT replaceRegexpAll(text, p, 'x') FROM events"),
    ("splitByRegexp", "SELECT splitByRegexp(text, 'acme note') FROM events"),
    ("like", "SELECT count() FROM events WHERE text LIKE '%a___________________c%'"),
    ("like", "SELECT count() FROM events WHERE 'acme note 1' LIKE text"),
    ("countMatches", "SELECT countMatches(text, 'a(a|b){1001}') FROM events"),
    ("multiMatchAny", "SELECT multiMatchAny(text, [text]) FROM events"),
    ("multiFuzzyMatchAny", "SELECT multiFuzzyMatchAny(text, 3, ['acme note']) FROM events"),
]


def test_patterns_whose_cost_a_row_chooses_are_refused_and_analysts_patterns_run(brain):
    for name, query in PATTERN_ATTACKS:
        message = refused(brain, query)
        assert f"{name}()" in message and ("write" in message.lower()), (query[:80], message[:300])
    rows = brain.sql(
        "SELECT countIf(match(text, 'note \\\\d$')) AS m, max(extract(text, 'note (\\\\d)')) AS e, "
        "min(replaceRegexpAll(text, '(\\\\w+) (\\\\w+)', '\\\\2 \\\\1')) AS r, countIf(text LIKE 'acme%') AS l, "
        "countIf(multiMatchAny(text, ['n.te'])) AS mm, countIf(multiFuzzyMatchAny(text, 1, ['acme nate'])) AS fz, "
        "sum(countMatches(text, '(?i)NOTE')) AS c, countIf(match(text, {p:String})) AS pm FROM events",
        {"p": "[0-4]$"}, tenant="acme")
    assert rows == [{"m": 10, "e": "9", "r": "note acme 0", "l": 10, "mm": 10, "fz": 10, "c": 10, "pm": 5}]


def test_vectorscan_patterns_are_bounded_in_length(brain):
    """multiMatch* compile every pattern inside one call (1,000 patterns took 7 s): their lengths are
    limits of the tenant session (``TENANT_LIMITS``), and the engine's refusal says which."""
    eleven = ", ".join(f"'acme note {n}{'.?' * 90}'" for n in range(11))  # 11 of ~191 characters
    assert "Total regexp lengths too large" in refused(brain, f"SELECT multiMatchAny(text, [{eleven}]) FROM events")
    assert "too large" in refused(brain, f"SELECT multiMatchAny(text, ['{'a?' * 101}']) FROM events")


@pytest.fixture
def prompt_wall(brain):
    """The tenant session at normal CPU priority for one test, every other limit kept: this test
    checks what ~4,400 calls may read, not their share of the CPU, and at the lowest priority the
    walk waited behind every other test process (7 s alone, 47 s in a quiet `make test`, 108 s
    beside one busy process)."""
    brain.warehouse.limit_tenants(os_thread_priority=0)
    yield brain
    brain.warehouse.limit_tenants()  # back to TENANT_LIMITS


def test_every_function_the_engine_lists_is_refused_or_allowed_and_harmless(prompt_wall):
    brain = prompt_wall
    names = [row[0] for row in brain.warehouse.query("SELECT name FROM system.functions")]
    assert len(names) > 1000  # the engine's whole list, read on the brain's unrestricted session
    allowed = [n for n in names if allowed_function(n)]
    # ClickHouse matches a case-insensitive name in any case: no refused name may share an allowed one's spelling
    lowered = {n.lower() for n in allowed}
    assert not [n for n in names if n.lower() in lowered and not allowed_function(n)]
    for name in names:
        if name not in allowed:
            message = refused(brain, f"SELECT {name}('/etc/passwd')" if name.isidentifier() else
                              f"SELECT `{name}`('/etc/passwd')")
            assert name in message, f"the refusal of {name} does not name it: {message[:200]}"
    # the allowed ones on the engine wall itself (the limited, read-only session, the tenant's
    # database current), with what would make a reader of files (a path) or of the server's
    # settings ('path' is the brain's folder) show itself
    aggregate = {row[0] for row in brain.warehouse.query("SELECT name FROM system.functions WHERE is_aggregate")}
    ran = set()
    codes = {}  # (name, args) -> the engine's code for a refused call
    for batch in (("", "'/etc/passwd'"), ("'path'",)):
        calls = [(name, args) for name in allowed for args in batch
                 # one string argument is the wrong number of arguments, whichever string it is
                 if not (args == "'path'" and codes.get((name, "'/etc/passwd'")) in ARITY)]
        for call, (rows, code) in tried_on_the_wall(brain, calls, aggregate).items():
            codes[call] = code
            if rows is None:  # wrong arguments for this function: it read nothing
                continue
            ran.add(call[0])
            assert not leaks(brain, str(rows), call[1]), f"{call} leaks {leaks(brain, str(rows), call[1])}"
    # not vacuous: hundreds ran (the rest need other argument types, e.g. numbers or arrays, and
    # cannot take a path or a setting's name at all)
    assert len(ran) > 300, len(ran)


# The engine's codes for a call whose arguments' number or types are wrong: it refuses the call
# while analysing the query, before reading anything. TOO_MANY_ / TOO_FEW_ARGUMENTS_FOR_FUNCTION,
# NUMBER_OF_ARGUMENTS_DOESNT_MATCH; ILLEGAL_TYPE_OF_ARGUMENT.
ARITY = {34, 35, 42}
ARGUMENTS = ARITY | {43}
# Calls over the events in one statement: a round trip with a FROM clause costs ~3 ms of CPU
# (the views expanded, a pipeline built) and each further column ~0.2 ms.
COLUMNS = 64


def engine_code(exc: Exception) -> int | None:
    found = re.search(r"Code: (\d+)", str(exc))
    return int(found.group(1)) if found else None


def tried_on_the_wall(brain, calls: list[tuple[str, str]], aggregate: set[str]) -> dict:
    """``{(name, args): (rows, None) or (None, the engine's error code)}``: ``toString(name(args))``
    over the tenant's events on the tenant session, each call's rows as if it ran alone.

    The call's arguments are constants, so whether the engine accepts their number and types
    does not depend on the FROM clause: the engine's analysis of the call alone (``EXPLAIN PLAN`` on the
    limited session, in this process) answers that first; ~3,200 of ~4,300 calls are refused there,
    with the codes the tenant's worker gives them (the same verdict and code for each of the 4,266
    calls, docs/speed.md round twenty-nine), at ~half the CPU of a round trip to the worker a call.
    Those it accepts run on the wall, the worker, over the events many to a statement (``over_the_events``)."""
    database, views = tenant_database("acme"), view_statements(brain.warehouse.database, "acme")
    outcomes, ran, failed = {}, [], []
    for name, args in calls:
        try:
            brain.warehouse.tenant_check(f"EXPLAIN PLAN SELECT toString({name}({args}))")
        except Exception as exc:  # noqa: BLE001 - the engine's refusal, read by its code
            if engine_code(exc) in ARGUMENTS:
                outcomes[name, args] = None, engine_code(exc)
            else:  # refused for another reason (e.g. a window function without OVER): it may run
                failed.append((name, args))  # over the events, but most fail again, so alone
            continue
        ran.append((name, args))
    # an aggregate makes the statement one aggregation: a scalar call beside it would be read in
    # that context, not over an event's row as alone, so each kind has statements of its own
    for kind in (True, False):
        of_kind = [call for call in ran if (call[0] in aggregate) is kind]
        for start in range(0, len(of_kind), COLUMNS):
            outcomes.update(over_the_events(brain, of_kind[start:start + COLUMNS], database, views))
    for call in failed:
        outcomes.update(over_the_events(brain, [call], database, views))
    return outcomes


def over_the_events(brain, calls: list[tuple[str, str]], database: str, views: list[str]) -> dict:
    """The calls as the columns of one ``SELECT … FROM events LIMIT 1``; a refused statement is
    split in halves until the refusing call runs alone, so a refusal is the call's own and each
    code is the one the engine gives that call by itself."""
    columns = ", ".join(f"toString({name}({args}))" for name, args in calls)
    try:
        _, rows = brain.warehouse.tenant_query(f"SELECT {columns} FROM events LIMIT 1", None, database, views)
    except Exception as exc:  # noqa: BLE001 - the engine's refusal, read by its code
        if len(calls) == 1:
            return {calls[0]: (None, engine_code(exc))}
        half = len(calls) // 2
        return (over_the_events(brain, calls[:half], database, views)
                | over_the_events(brain, calls[half:], database, views))
    return {call: ([(row[i],) for row in rows], None) for i, call in enumerate(calls)}


def running(brain, marker: str) -> bool:
    return bool(brain.warehouse.tenant_queries_running(marker))


HEAVY = "SELECT count() FROM events a, events b, events c, (SELECT arrayJoin(range(1000000)) x) d, events e"


def start(brain, marker: str) -> tuple[threading.Thread, dict]:
    """A heavy tenant query on its own thread, returned once the engine runs it."""
    outcome: dict = {}

    def run():
        started = time.perf_counter()
        try:
            outcome["rows"] = brain.tenant_sql(HEAVY, tenant="acme", marker=marker)
        except InvalidInput as exc:
            outcome["error"] = str(exc)
        outcome["seconds"] = time.perf_counter() - started

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 30
    while not running(brain, marker) and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert running(brain, marker), f"the heavy query never ran: {outcome}"
    return thread, outcome


def test_limits_stop_a_query_naming_the_limit(brain):
    try:
        brain.warehouse.limit_tenants(max_execution_time=1)
        assert "max_execution_time" in refused(brain, HEAVY)
        brain.warehouse.limit_tenants(max_result_rows=5)
        assert "max_result_rows" in refused(brain, "SELECT * FROM events")
        brain.warehouse.limit_tenants(max_rows_to_read=3)
        assert "max_rows_to_read" in refused(brain, "SELECT text FROM events")
        brain.warehouse.limit_tenants(max_memory_usage=20 << 20)
        assert "max_memory_usage" in refused(brain, "SELECT groupArray(range(number % 1000)) FROM "
                                                    "(SELECT arrayJoin(range(1000000)) AS number)")
        with pytest.raises(ValueError, match="readonly"):
            brain.warehouse.limit_tenants(readonly=0)
    finally:
        brain.warehouse.limit_tenants()


def test_a_running_query_delays_neither_recall_nor_perceive_and_is_cancelled(brain):
    brain.warehouse.limit_tenants(max_execution_time=60)
    try:
        thread, outcome = start(brain, "hindbrain-sql-test-cancel")
        # the brain's own calls, while the engine runs the tenant's query (arranged, not hoped for)
        brain.perceive(text="globex works on", tenant="globex", agent="bot")
        pack = brain.recall(query="card", tenant="globex", agent="bot")
        assert pack.recall_id and running(brain, "hindbrain-sql-test-cancel"), outcome
        brain.cancel_sql("hindbrain-sql-test-cancel")
        thread.join(timeout=20)
        assert not thread.is_alive() and "cancelled" in outcome.get("error", ""), outcome
    finally:
        brain.warehouse.limit_tenants()


# A query with no FROM of its own reads the engine's one-row table and escaped the result limits (round
# twenty-six): 300,000 rows against a limit of 100,000, one row of 160 MB against 64 MB, which Python then
# decoded into 1.2 GB of objects in the brain's process. Every shape here must be stopped by the limit.
UNBOUNDED_SHAPES = [
    "SELECT arrayJoin(range(100))",
    "SELECT range(100000)",
    "SELECT text FROM events UNION ALL SELECT arrayJoin(range(100))",
    "WITH (SELECT count() FROM events) AS n SELECT range(100000 + n)",
    "SELECT range(100000) FROM events LIMIT 1",
]


def test_the_result_limits_bound_queries_without_a_table_too(brain):
    try:
        brain.warehouse.limit_tenants(max_result_rows=50, max_result_bytes=64 << 10)
        for query in UNBOUNDED_SHAPES:
            message = refused(brain, query)
            assert "max_result_rows or max_result_bytes" in message, (query, message)
        assert brain.sql("SELECT count() AS n FROM events", tenant="acme") == [{"n": 10}]
    finally:
        brain.warehouse.limit_tenants()


def test_tenant_queries_read_small_blocks_so_the_limits_are_checked_often(brain):
    """The limits are checked between blocks; a tenant's block is one granule (8,192 rows) of a view at most,
    not the engine's default of 65,409 (round twenty-six: an eighth of the overshoot, at no measured cost)."""
    [(size,)] = brain.warehouse.tenant_check("SELECT value FROM system.settings WHERE name = 'max_block_size'")
    assert int(size) == 8192
    assert brain.sql("SELECT count() AS n FROM events", tenant="acme") == [{"n": 10}]


@pytest.mark.parametrize("query", [
    "SELECT * FROM file('\u202e\x1b]0;x\x07')",  # the sandbox's refusal quotes it
    "SELECT unknown_\u202eevil FROM events",  # the engine's error quotes it
    "EXISTS \x1b]0;pwned\x07 hindbrain.events",  # the parser's error quotes it (underlined in ANSI at the base)
])
def test_a_refusal_quotes_the_query_with_its_controls_escaped(brain, query):
    # round thirty: the refusal reached the reader's terminal with the tenant's escape sequences in it
    message = refused(brain, query)
    assert all(ch.isprintable() or ch == " " for ch in message), ascii(message)
    assert "\\x1b" in message or "\\u202e" in message


@pytest.mark.parametrize("query", [
    "SELECT _database, _table FROM events", "SELECT e.`_database` FROM events AS e",
    "SELECT count() FROM lineage GROUP BY _table", "SELECT text FROM events WHERE _database != ''",
])
def test_virtual_columns_naming_the_server_side_are_refused_by_name(brain, query):
    # round thirty-one: `_database` answered the tenant's view database (tenant_<digest>), `_table` the view
    message = refused(brain, query)
    assert "a virtual column naming the server's database or table" in message
    assert tenant_database("acme") not in message


@pytest.mark.parametrize("query", ["SELECT text FROM events PREWHERE text = 'x'", "SELECT 1 FROM lineage PREWHERE 1"])
def test_an_engine_error_names_the_view_as_the_tenant_wrote_it(brain, query):
    # round thirty-one: "Storage View (table tenant_<digest>.events (<uuid>)) does not support PREWHERE"
    message = refused(brain, query)
    assert "does not support PREWHERE" in message and tenant_database("acme") not in message
    assert not re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", message), message
    assert re.search(r"\(table (events|lineage)\)", message), message


@pytest.mark.parametrize("query", [
    "SELECT " + "abs(" * 100 + "1" + ")" * 100,  # under the engine's depth limit (1,000), past sqlglot's recursion
    "SELECT " + "[" * 300 + "1" + "]" * 300,
    "SELECT " + "if(1, " * 300 + "1" + ", 0)" * 300,
])
def test_a_query_nested_past_the_parser_s_depth_is_refused_naming_the_query(brain, query):
    # round thirty-two: sqlglot's RecursionError left the sandbox raw (a 500 over HTTP), not a refusal
    assert "nested too deeply" in refused(brain, query)
    assert brain.sql("SELECT " + "abs(" * 20 + "-1" + ")" * 20 + " AS n", tenant="acme") == [{"n": 1}]


def test_the_parse_and_check_run_in_the_tenant_worker_not_the_brain_s_process(brain, monkeypatch):
    # round thirty-two: sqlglot read each tenant query in the brain's process, holding its interpreter lock (a 100 kB
    # query ~5 s, every other tenant's recall waiting); here the brain's own sqlglot must never be called
    from hindbrain.service import tenant_sql

    parsed_here = []
    parse = tenant_sql.sqlglot.parse
    monkeypatch.setattr(tenant_sql.sqlglot, "parse", lambda *a, **k: parsed_here.append(a) or parse(*a, **k))
    # refused by sqlglot's check (a table that is none of the tenant's views), the engine's EXPLAIN AST never asked
    assert "field 'query': secrets: not one of this tenant's views" in refused(brain, "SELECT text FROM secrets")
    assert "nested too deeply" in refused(brain, "SELECT " + "abs(" * 100 + "1" + ")" * 100)
    assert brain.sql("SELECT count() AS n FROM events", tenant="acme") == [{"n": 10}]
    assert parsed_here == []
