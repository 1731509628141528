"""Read-only SQL for one tenant's analysts: a sandbox, by allow-list, with two walls.

The query runs with its *current database* set to the tenant's database, which holds one view
per warehouse table (``SELECT * FROM <warehouse>.<table> FINAL WHERE tenant = '<tenant>'``, same
names, same columns). An unqualified ``FROM fragments`` therefore reads the tenant's fragments.

**First wall, two parsers.** ClickHouse's own formatter turns the query into one statement
(``formatQuerySingleLine``, which refuses several); that text is what is checked and what runs.
sqlglot (its ``clickhouse`` dialect, a maintained parser of its own) must read it as a single
SELECT (CTEs, subqueries, UNION, JOINs) with no ``SETTINGS``, ``FORMAT`` or ``INTO``, every table
one of the tenant's views or a CTE, named without a database, and no table function. Then
ClickHouse's ``EXPLAIN AST`` of the same text is checked again: the names of every function it
will call must be on the allow-list (``hindbrain.service.sql_functions``: file, network, server
settings, dictionaries, system tables are not), no ``SETTINGS`` anywhere, no name qualified by a
database. Two parsers, so a construct one of them misreads still meets the other; the function
names are ClickHouse's own, so what is allowed is what runs. A function's pattern (``match``,
``extract``, ``LIKE``, ``multiMatchAny`` ...) must be a literal whose automaton is small enough that one
long row cannot outlast the limits, which are checked only between blocks (``sql_patterns``).

**Second wall, the engine.** The query runs on a session of its own, ``readonly=1`` (no write,
no setting can change) with limits on every query (``projections.warehouse.TENANT_LIMITS``:
time, memory, rows read, result rows and bytes, one thread at the lowest CPU priority). chDB
does not confine ``file()`` to ``user_files_path`` (clickhouse-local reads any path), so that
wall is the allow-list alone: ``tests/security/test_sql_sandbox.py`` tries every function the
engine lists.

**Off the brain's thread.** ``run`` touches only the tenant session (its own lock) and, on a
tenant's first query, creates its views on the writer's session; the HTTP route calls it from
a pool of its own, so a heavy query delays no other tenant's recall or perceive. Each query
carries a random marker; ``Warehouse.cancel(marker)`` kills it (the route does when the client
goes away). The two Python checks (sqlglot's parse, ``check_syntax``; the ``EXPLAIN AST`` lines',
``check_ast``) run in the tenant worker's process (``Warehouse.tenant_apply``), in the same order:
in the brain's they held its interpreter lock, a 100 kB query's parse for seconds, while every
other tenant's recall waited for it (docs/security.md, round thirty-two).

A query refused here, or one ClickHouse itself refuses (a syntax error, an unknown column,
``throwIf``), raises ``ForbiddenQuery`` with the reason; ``QueryLimit`` (a ``ForbiddenQuery``)
when a limit stopped it, naming the limit. A connection failure (``OperationalError``) is not the
query's fault and propagates.
"""

from __future__ import annotations

import hashlib
import logging
import re

import sqlglot
from clickhouse_connect.driver.exceptions import DatabaseError, OperationalError, StreamFailureError
from sqlglot import exp
from sqlglot.errors import SqlglotError

from hindbrain.projections.tenant_worker import TenantQueryFailed, TenantQueryKilled
from hindbrain.projections.views import VIEWS
from hindbrain.service.sql_functions import (
    allowed_function,
    named_argument_refusal,
    quadratic_alternative,
    state_type_refusal,
)
from hindbrain.service.sql_patterns import pattern_refusal

# sqlglot warns when it reads a statement it does not know (``SHOW TABLES``) as a bare Command;
# the sandbox refuses those anyway, and a tenant's refused query is not the server log's business.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

# the warehouse's plain views over its tables (projections/migrations.py), each with a tenant
# column: `feedback` (an item's counters, as the README's first queries use it) and `lineage`
DERIVED = ("feedback", "lineage")

# What the root of a SELECT's AST may hold: the selects (ExpressionList) and the output format the
# client adds (``Identifier Native``; a FORMAT of the tenant's own is refused by sqlglot, and two
# are a syntax error). ``SETTINGS`` shows as Set, ``INTO OUTFILE`` as its path, a Literal.
_ROOT_PARTS = {"ExpressionList", "Identifier Native"}
# ClickHouse error codes of the limits (``TENANT_LIMITS``), and the limit each one means
_LIMIT_CODES = {
    "TIMEOUT_EXCEEDED": "max_execution_time", "MEMORY_LIMIT_EXCEEDED": "max_memory_usage",
    "TOO_MANY_ROWS": "max_rows_to_read", "TOO_MANY_ROWS_OR_BYTES": "max_result_rows or max_result_bytes",
    "QUERY_WAS_CANCELLED": "its lifetime (cancelled: the client went away)",
}
_CODE = re.compile(r"\(([A-Z_]+)\)")
# ClickHouse's name for a query parameter (``{name:Type}``)
_PARAMETER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLACEHOLDER = re.compile(r"\{\s*\w+\s*:([^}]+)\}")  # a query parameter's declared type
# The engine's virtual columns that name the server's side of a view: ``_database`` answered the tenant's view
# database (``tenant_<digest>``), what ``currentDatabase`` is refused for (round thirty-one). The others
# (``_part``, ``_shard_num`` ...) are unknown on a view.
_SERVER_COLUMNS = frozenset({"_database", "_table"})
# What an engine error names of the server: a tenant's view database, a table's UUID (``Storage View (table
# tenant_….events (86e7b88d-…))``); ``internal_names_hidden`` takes them out of what a tenant is shown.
_VIEW_DATABASE = re.compile(r"`?tenant_[0-9a-f]{24}`?\.")
_UUID_TEXT = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_UUID = re.compile(rf" \({_UUID_TEXT}\)", re.IGNORECASE)  # as the engine writes it after a table's name


# Why a query nested deeper than sqlglot's parser can descend is refused (``check_syntax``).
NESTED_TOO_DEEP = ("nested too deeply for this sandbox to read (calls, brackets or parentheses inside one "
                   "another); write it with fewer levels, e.g. through a WITH clause")


class ForbiddenQuery(ValueError):
    """The query may not run here: it reaches beyond the tenant's views, or ClickHouse refused it
    (its message says why). ``field`` names the input at fault: ``query`` or ``parameters``."""

    field = "query"


def shown(message: str) -> str:
    """``message`` with every character that does not print as itself escaped (``\\x1b``, ``\\u202e``). A refusal
    quotes the tenant's query, and the engine's error quotes it too: an escape sequence in it (a cleared screen,
    a coloured fake prompt) or a bidi override reached the terminal of whoever read the error (round thirty)."""
    return "".join(ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode() for ch in message)


class ForbiddenParameters(ForbiddenQuery):
    """The query's parameters could change its text after the checks (``parameter_refusal``)."""

    field = "parameters"


class QueryLimit(ForbiddenQuery):
    """A limit on tenant queries stopped this one; ``limit`` names it (``max_execution_time`` ...)."""

    def __init__(self, limit: str, message: str):
        self.limit = limit
        super().__init__(f"the query exceeded {limit}: {message}")


def tenant_database(tenant: str) -> str:
    """The database holding ``tenant``'s views: a digest, so any tenant name is safe in SQL."""
    return "tenant_" + hashlib.sha256(tenant.encode()).hexdigest()[:24]


def view_statements(warehouse_db: str, tenant: str) -> list[str]:
    """The DDL that (re)creates the tenant's database of views."""
    db, literal = tenant_database(tenant), _string_literal(tenant)
    tables = [v.table for v in VIEWS if "tenant" in dict(v.table.columns)]
    return [f"CREATE DATABASE IF NOT EXISTS `{db}`"] + [
        f"CREATE VIEW IF NOT EXISTS `{db}`.`{t.name}` AS SELECT * FROM `{warehouse_db}`.`{t.name}` FINAL "
        f"WHERE tenant = {literal}" for t in tables] + [
        f"CREATE VIEW IF NOT EXISTS `{db}`.`{name}` AS SELECT * FROM `{warehouse_db}`.`{name}` "
        f"WHERE tenant = {literal}" for name in DERIVED]  # FINAL is inside them already


def views_of() -> tuple[str, ...]:
    """The names of a tenant's views (``view_statements``)."""
    return tuple(v.table.name for v in VIEWS if "tenant" in dict(v.table.columns)) + DERIVED


def parameter_refusal(sql: str, parameters: dict) -> str | None:
    """Why ``parameters`` may not go with ``sql`` (the formatted text), or None: each must be named in it
    as ``{name:Type}``, so the engine binds its value as a typed value. The client (clickhouse-connect)
    binds a query naming no ``{name:Type}`` by Python's ``%`` formatting instead: ``SELECT '%(x)s'``
    with ``x`` = ``, name FROM … --`` ran with the value as SQL, checked by ClickHouse's parser but
    never by sqlglot, so the text checked was not the text run (docs/security.md, round twenty-seven).
    A name of the client's own binary form (``$x$``, spliced raw into the text) is no parameter name."""
    for name in parameters:
        if not isinstance(name, str) or not _PARAMETER_NAME.fullmatch(name):
            return f"{name!r}: a parameter's name is letters, digits and '_', not starting with a digit"
        if not re.search(r"\{" + name + r":[^}]+\}", sql):
            return f"{name!r}: not named in the query; write it where its value goes as {{{name}:Type}}"
    return None


def placeholder_refusal(sql: str) -> str | None:
    """Why a ``{name:Type}`` of ``sql`` may not be bound, or None: its type holds the state of an aggregate tenant
    SQL may not use. The engine builds a parameter's type, and reads its value into it, when it explains the
    query: before ``check_ast`` could refuse the type's name (``state_type_refusal``)."""
    for declared in _PLACEHOLDER.findall(sql):
        if reason := state_type_refusal(declared):
            return reason
    return None


def check_syntax(sql: str, views: set[str], databases: set[str]) -> None:
    """Raise ``ForbiddenQuery`` unless sqlglot reads ``sql`` as one SELECT over ``views`` (and its
    own CTEs) calling allowed functions only."""
    try:
        statements = [s for s in sqlglot.parse(sql, read="clickhouse") if s is not None]
    except SqlglotError as exc:
        plain = str(exc).replace("\033[4m", "").replace("\033[0m", "")  # sqlglot underlines the spot in ANSI
        raise ForbiddenQuery(f"not a query this sandbox can read: {' '.join(plain.split())[:300]}") from None
    except RecursionError:
        # sqlglot descends ~10 Python frames per nested call or bracket: ``abs(abs(…))`` 100 deep, which the
        # engine's own depth limit (1,000) lets through, ended the request with a 500 (round thirty-two)
        raise ForbiddenQuery(NESTED_TOO_DEEP) from None
    if len(statements) != 1:
        raise ForbiddenQuery(f"one statement only, not {len(statements)}")
    root = statements[0]
    if not isinstance(root, exp.Query):
        raise ForbiddenQuery(f"only a SELECT may run here, not {root.key.upper()}")
    ctes = {cte.alias for cte in root.find_all(exp.CTE)}
    lowered = {d.lower() for d in databases}
    for node in root.walk():
        refusal_of_node(node, views | ctes, lowered)


def refusal_of(check, *arguments) -> str | None:
    """Why ``check(*arguments)`` refuses (``check_syntax``, ``check_ast``), or None: what the tenant worker runs,
    out of the brain's process (``Warehouse.tenant_apply``), so a refusal crosses as text."""
    try:
        check(*arguments)
    except ForbiddenQuery as exc:
        return str(exc)
    return None


def refusal_of_node(node: exp.Expression, tables: set[str], databases: set[str]) -> None:
    """Raise ``ForbiddenQuery`` if one node of sqlglot's tree reaches past the sandbox."""
    for clause in ("settings", "format"):
        if node.args.get(clause):
            raise ForbiddenQuery(f"{clause.upper()}: not allowed in tenant SQL (the limits are fixed)")
    if isinstance(node, exp.Into):
        raise ForbiddenQuery("INTO: a SELECT here returns rows and nothing else")
    if isinstance(node, exp.Table):
        if not isinstance(node.this, exp.Identifier):
            raise ForbiddenQuery(f"{node.this.sql('clickhouse')[:80]}: table functions are not allowed")
        if node.db or node.catalog:
            raise ForbiddenQuery(f"{node.sql('clickhouse')}: name tables without a database; each name is this "
                                 "tenant's view")
        if node.name not in tables:
            raise ForbiddenQuery(f"{node.name}: not one of this tenant's views ({', '.join(sorted(tables))})")
    if isinstance(node, exp.Column) and (node.catalog or node.db or node.table.lower() in databases):
        raise ForbiddenQuery(f"{node.sql('clickhouse')}: names qualified by a database are not allowed")
    if isinstance(node, exp.Column) and node.name in _SERVER_COLUMNS:
        raise ForbiddenQuery(server_column_refusal(node.name))
    if isinstance(node, exp.Placeholder) and str(node.args.get("kind")).lower() == "identifier":
        # ClickHouse substitutes it after every check here: a table or column name the checks never saw
        raise ForbiddenQuery(f"{{{node.name}:Identifier}}: identifier parameters are not allowed; write the name")
    if isinstance(node, exp.Anonymous) and not allowed_function(node.name):
        raise ForbiddenQuery(function_refusal(node.name))


def check_ast(ast_lines: list[str], databases: set[str]) -> None:
    """Raise ``ForbiddenQuery`` unless the ``EXPLAIN AST`` output stays within unqualified
    tables and harmless functions. ``databases`` are the names a qualifier could use."""
    lowered = {d.lower() for d in databases}
    for n, raw in enumerate(ast_lines):
        line = raw.strip()
        kind, _, rest = line.partition(" ")
        name = rest.split(" (", 1)[0].strip()
        if n == 0 and kind != "SelectWithUnionQuery":
            raise ForbiddenQuery(f"only a SELECT may run here, not {kind}")
        if raw.startswith(" ") and not raw.startswith("  ") and kind not in _ROOT_PARTS and line not in _ROOT_PARTS:
            raise ForbiddenQuery(f"{line}: a SELECT here returns rows and nothing else (no INTO OUTFILE)")
        if kind == "TableIdentifier" and "." in name:
            raise ForbiddenQuery(f"{name}: name tables without a database; each name is this tenant's view")
        if kind == "Identifier" and "." in name and name.split(".", 1)[0].strip("`").lower() in lowered:
            raise ForbiddenQuery(f"{name}: names qualified by a database are not allowed")
        if kind == "Identifier" and (column := name.rsplit(".", 1)[-1].strip("`")) in _SERVER_COLUMNS:
            raise ForbiddenQuery(server_column_refusal(column))
        if kind == "Set":
            raise ForbiddenQuery("SETTINGS: not allowed in tenant SQL (the limits are fixed)")
        if kind == "TableExpression" and n + 1 < len(ast_lines) and ast_lines[n + 1].strip().startswith("Function "):
            func = ast_lines[n + 1].strip().split(" ")[1]
            raise ForbiddenQuery(f"{func}(): table functions are not allowed")
        if kind == "Function" and not allowed_function(name):
            raise ForbiddenQuery(function_refusal(name))
        if kind == "Function" and (reason := argument_refusal(name, function_arguments(ast_lines, n))):
            raise ForbiddenQuery(reason)
        if kind == "Literal" and "ggregate" in rest.lower() and (reason := state_type_refusal(rest)):
            raise ForbiddenQuery(reason)


def argument_refusal(name: str, arguments: list[str]) -> str | None:
    """Why the function ``name`` may not run with these ``arguments`` (``EXPLAIN AST`` lines): a pattern that
    one row can make outlast the limits (``sql_patterns``), or an aggregate or a type it names that the
    allow-list refuses (``sql_functions.named_argument_refusal``); None if neither."""
    return pattern_refusal(name, arguments) or named_argument_refusal(name, arguments)


def function_arguments(ast_lines: list[str], n: int) -> list[str]:
    """The lines (stripped) of the arguments of the ``Function`` on line ``n`` of an ``EXPLAIN AST``:
    the children of its first ``ExpressionList`` (a parametric aggregate's parameters come second)."""
    depth = _depth(ast_lines[n])
    if n + 1 >= len(ast_lines) or _depth(ast_lines[n + 1]) != depth + 1:
        return []  # no arguments
    arguments = []
    for line in ast_lines[n + 2:]:
        if _depth(line) <= depth + 1:
            break
        if _depth(line) == depth + 2:
            arguments.append(line.strip())
    return arguments


def _depth(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def server_column_refusal(column: str) -> str:
    return (f"{column}: a virtual column naming the server's database or table, not allowed in tenant SQL (each "
            "view is named as you name it)")


def internal_names_hidden(message: str) -> str:
    """An engine error as a tenant is shown it: without its view database's name and the view's UUID, which
    say nothing the tenant wrote and name the server's side ("Storage View (table tenant_….events (86e7…))"
    becomes "Storage View (table events)")."""
    return _UUID.sub("", _VIEW_DATABASE.sub("", message))


def function_refusal(name: str) -> str:
    """Why ``name`` may not run here; for a function whose one call can outlast the limits, what to write instead."""
    if alternative := quadratic_alternative(name):
        return (f"{name}(): not allowed in tenant SQL: its cost grows with the product of its arguments' lengths "
                f"and the engine checks the time limit only between rows; write {alternative}")
    return f"{name}(): not an allowed function in tenant SQL"


def _string_literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def run(warehouse, tenant: str, sql: str, parameters: dict | None, prepared: set[str],
        marker: str | None = None) -> tuple[list, list]:
    """``(column_names, rows)`` of ``sql`` over ``tenant``'s views. ``prepared``: tenants
    whose views exist already (the caller's cache; ``IF NOT EXISTS`` makes a miss harmless).
    ``marker``: a random id that ``warehouse.cancel(marker)`` can kill the query by."""
    prepare(warehouse, tenant, prepared)
    try:
        # The query travels as a parameter here: nothing of it runs.
        ((sql,),) = warehouse.tenant_check("SELECT formatQuerySingleLine({q:String})", {"q": sql})
        if reason := parameter_refusal(sql, parameters or {}):
            raise ForbiddenParameters(reason)
        if reason := placeholder_refusal(sql):
            raise ForbiddenQuery(reason)
        databases = {row[0] for row in warehouse.tenant_check("SELECT name FROM system.databases")}
        if reason := warehouse.tenant_apply(refusal_of, check_syntax, sql, set(views_of()), databases,
                                            marker=marker):
            raise ForbiddenQuery(reason)
        ast_lines = [row[0] for row in warehouse.tenant_check(f"EXPLAIN AST {sql}", parameters)]
        if reason := warehouse.tenant_apply(refusal_of, check_ast, ast_lines, databases, marker=marker):
            raise ForbiddenQuery(reason)
        sql = bounded(sql)
        if marker is not None:  # after the checks: a comment of ours, in the text KILL QUERY matches
            sql = f"{sql} /* {marker} */"
        try:
            return warehouse.tenant_query(sql, parameters, tenant_database(tenant),
                                          view_statements(warehouse.database, tenant), marker)
        except (ValueError, OverflowError) as exc:  # e.g. toDateTime64(-1e13, 6): before the year 1
            raise ForbiddenQuery(f"the result holds a value Python cannot represent: {exc}") from None
    except OperationalError:
        raise
    except TenantQueryKilled as exc:  # the watchdog ended its process (projections.tenant_worker)
        raise QueryLimit(exc.limit, internal_names_hidden(str(exc))) from None
    except (StreamFailureError, DatabaseError, TenantQueryFailed) as exc:  # StreamFailure: it failed while streaming
        raise refused(exc) from None


def bounded(sql: str) -> str:
    """The checked query as a subquery of a plain ``SELECT *``, the shape the engine applies the result
    limits to. Run as it is, a query with no FROM of its own (``SELECT arrayJoin(range(300000))``, a
    UNION branch, a ``WITH`` scalar) escaped ``max_result_rows`` and ``max_result_bytes`` on this engine
    (chDB 26.9): 300,000 rows against 100,000, one row of 160 MB against 64 MB, which the client then
    decoded into ~1.2 GB of Python objects (docs/security.md, round twenty-six). ``sql`` is
    ``formatQuerySingleLine``'s one statement, so its parentheses balance: nothing in it closes ours."""
    return f"SELECT * FROM ({sql})"


def prepare(warehouse, tenant: str, prepared: set[str]) -> None:
    """Create ``tenant``'s database of views unless ``prepared`` (the caller's cache) says it exists."""
    if tenant not in prepared:
        for statement in view_statements(warehouse.database, tenant):
            warehouse.query(statement)
        prepared.add(tenant)


def refused(exc: Exception) -> ForbiddenQuery:
    """The ``ForbiddenQuery`` (a ``QueryLimit`` if a limit stopped it) for ClickHouse's refusal."""
    message = refusal(exc)
    code = next((c for c in _CODE.findall(message) if c in _LIMIT_CODES), None)
    return QueryLimit(_LIMIT_CODES[code], message) if code else ForbiddenQuery(message)


def refusal(exc: Exception) -> str:
    """ClickHouse's reason for refusing a query, on one line and at most 500 characters, without the server's
    internal names (``internal_names_hidden``)."""
    return internal_names_hidden(" ".join(str(exc).split()))[:500]
