"""Read-only SQL for one tenant's analysts: the query only sees that tenant's rows.

ClickHouse's own parser checks the query (``EXPLAIN AST``), then it runs with its *current
database* set to the tenant's database, which holds one view per warehouse table
(``SELECT * FROM <warehouse>.<table> FINAL WHERE tenant = '<tenant>'``, same names, same
columns). An unqualified ``FROM fragments`` therefore reads the tenant's fragments; what
could reach past the views is refused before it runs:

* a name qualified by a database (``hindbrain.events``, ``system.tables``, ``IN db.t``);
* a table function (``file()``, ``url()``, ``remote()``, ``merge()`` ...) anywhere;
* functions that read tables by name (``dictGet*``, ``joinGet*``);
* anything that is not a single SELECT (``readonly=1`` refuses writes in any case): a second
  statement after a ``;`` (chDB ran it too, unchecked, on every tenant's rows: found by
  fuzzing), and ``INTO OUTFILE`` (chDB wrote the file, anywhere the server may write).

What is checked is what runs: ClickHouse's own formatter turns the query into one statement
first (``formatQuerySingleLine``, which refuses several), and that text is explained, checked
and run. Pure checks on the AST text; the views are created once per tenant on first use. A
query ClickHouse itself refuses (a syntax error, an unknown column, a missing parameter,
``throwIf``) raises ``ForbiddenQuery`` with ClickHouse's message: it is the caller's query that
is wrong; so is a result holding a value the client cannot represent (a date before the year 1).
A connection failure (``OperationalError``) is not the query's fault and propagates.
"""

from __future__ import annotations

import hashlib
import re

from clickhouse_connect.driver.exceptions import DatabaseError, OperationalError, StreamFailureError

from hindbrain.projections.views import VIEWS

# the warehouse's plain views over its tables (projections/migrations.py), each with a tenant
# column: `feedback` (an item's counters, as the README's first queries use it) and `lineage`
DERIVED = ("feedback", "lineage")

# What the root of a SELECT's AST may hold: the selects (ExpressionList), settings and the output
# format the client adds (Set, Identifier). ``INTO OUTFILE`` shows as its path, a Literal.
_ROOT_PARTS = {"ExpressionList", "Set", "Identifier"}
_TABLE_READERS = re.compile(r"^(dictget|dicthas|dictgethierarchy|dictisin|joinget)", re.IGNORECASE)


class ForbiddenQuery(ValueError):
    """The query may not run here: it reaches beyond the tenant's views, or ClickHouse refused it
    (its message says why)."""


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
        if raw.startswith(" ") and not raw.startswith("  ") and kind not in _ROOT_PARTS:
            raise ForbiddenQuery(f"{line}: a SELECT here returns rows and nothing else (no INTO OUTFILE)")
        if kind == "TableIdentifier" and "." in name:
            raise ForbiddenQuery(f"{name}: name tables without a database; each name is this tenant's view")
        if kind == "Identifier" and "." in name and name.split(".", 1)[0].strip("`").lower() in lowered:
            raise ForbiddenQuery(f"{name}: names qualified by a database are not allowed")
        if kind == "Function" and _TABLE_READERS.match(name):
            raise ForbiddenQuery(f"{name}: reads a table by name")
        if kind == "TableExpression" and n + 1 < len(ast_lines) and ast_lines[n + 1].strip().startswith("Function "):
            func = ast_lines[n + 1].strip().split(" ")[1]
            raise ForbiddenQuery(f"{func}(): table functions are not allowed")


def _string_literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def run(warehouse, tenant: str, sql: str, parameters: dict | None, prepared: set[str]) -> tuple[list, list]:
    """``(column_names, rows)`` of ``sql`` over ``tenant``'s views. ``prepared``: tenants
    whose views exist already (the caller's cache; ``IF NOT EXISTS`` makes a miss harmless)."""
    if tenant not in prepared:
        for statement in view_statements(warehouse.database, tenant):
            warehouse.query(statement)
        prepared.add(tenant)
    try:
        # The query travels as a parameter here: nothing of it runs.
        ((sql,),) = warehouse.query("SELECT formatQuerySingleLine({q:String})", {"q": sql}, readonly=True)
        ast = [row[0] for row in warehouse.query_columns(f"EXPLAIN AST {sql}", parameters, readonly=True)[1]]
        databases = {row[0] for row in warehouse.query_columns("SELECT name FROM system.databases", readonly=True)[1]}
        check_ast(ast, databases)
        try:
            return warehouse.query_columns(sql, parameters, readonly=True, database=tenant_database(tenant))
        except (ValueError, OverflowError) as exc:  # e.g. toDateTime64(-1e13, 6): before the year 1
            raise ForbiddenQuery(f"the result holds a value Python cannot represent: {exc}") from None
    except StreamFailureError as exc:  # the query failed while its rows streamed
        raise ForbiddenQuery(refusal(exc)) from None
    except OperationalError:
        raise
    except DatabaseError as exc:
        raise ForbiddenQuery(refusal(exc)) from None


def refusal(exc: Exception) -> str:
    """ClickHouse's reason for refusing a query, on one line and at most 500 characters."""
    return " ".join(str(exc).split())[:500]
