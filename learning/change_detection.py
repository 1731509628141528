"""Change detection: doubt of a rule whose option was replaced or failed where a routine always worked, and the
outdating of success and failure events an option's newer reports contradict (design.md §issue-29)."""

from __future__ import annotations

from hindbrain.learning import attribution, lifecycle
from hindbrain.learning.acceptance import EXTRACT_JOB
from hindbrain.learning.learner_state import TenantState, option_key, report_key
from hindbrain.learning.lifecycle import Unit
from hindbrain.learning.records import decision
from hindbrain.schemas.decision_kinds import DecisionKind

EVENTS_OUTDATED = DecisionKind.EVENTS_OUTDATED  # older successes of an option that now fails (the world changed)
FAILURES_TO_OUTDATE = 2  # failures since its last success that outdate an option's success events


class ChangeDetection:
    """``Learner``'s change-detection decisions; they read its ``counts`` and record through ``_changes``."""

    def _outdate(self, t: TenantState, failures: list[dict], success: dict, taught: str | None,
                 restoring: bool = False) -> list[tuple[str, dict]]:
        """Change detection (design.md §issue-29): an option that failed in this task, after which another
        one worked, stops being an answer wherever it used to be one. Its older success events in
        that system are outdated (an ``events_outdated`` decision: kept in the log, marked in
        ``explain``, no longer injected), and every live unit that recommends it and had
        succeeded before is contradicted (the ``contradiction`` signal; under review at once), so
        neither the rule nor the events that carried the old answer keep suggesting it."""
        env, out = success["envelope"], []
        for failure in failures:
            key = option_key(failure)
            # the same action where it ran (a recovery by identity): the rule it teaches says which identity
            if key is None or key[:3] == (option_key(success) or ())[:3]:
                continue
            old = t.successes.pop(key, [])
            if old and not restoring:
                self.counts[EVENTS_OUTDATED] += 1
                out.append(decision(
                    EVENTS_OUTDATED, env["tenant"], old, [failure["envelope"]["record_id"], env["record_id"]],
                    f"'{failure['action']}' failed in {key[0]} where it used to succeed, and '{success.get('action')}' "
                    "worked instead: its older successes are outdated (kept in the log, no longer injected)",
                    {"system": key[0], "option": failure["action"], "by": taught}, env["ts_us"], EXTRACT_JOB,
                    {"rule": "outdate/1"}, f"{env['record_id']}:{failure['envelope']['record_id']}:outdated"))
            done = t.contradicted.setdefault(env["task"], set())
            for unit in t.proven_units():  # only a live unit that succeeded before is contradicted
                if (unit.fragment_id in done or unit.fragment_id == taught
                        or not _recommends(unit, key, t.scopes.get(unit.fragment_id))):
                    continue
                done.add(unit.fragment_id)
                if restoring:
                    continue  # its contradiction is in the log
                instead = taught or success.get("action")
                against = lifecycle.on_perceived_contradiction(
                    unit, failure["envelope"]["record_id"],
                    f"failed where it used to succeed; {instead} worked instead", _sender(env))
                out += self._changes(env, unit.fragment_id, against, f"{env['record_id']}:{unit.fragment_id}",
                                     contradiction=True)
        return out

    def _routine_broken(self, t: TenantState, failure: dict, key: tuple,
                        restoring: bool = False) -> list[tuple[str, dict]]:
        """A routine's premise is that its option never failed where it holds (its evidence is success reports
        only, no contrast): the first failure there contradicts it (under review), as a newer failure report
        hides an older success one (``recall.gate.newest_reports``). A rule learned from a failure then a
        success is stickier: one failure may be a flake (``_doubt_replaced``)."""
        fid = t.routines.pop(key, None)
        unit = t.units.get(fid or "")
        if restoring or unit is None or unit.status not in lifecycle.LIVE or unit.status == "reviewing":
            return []
        env = failure["envelope"]
        against = lifecycle.on_perceived_contradiction(unit, env["record_id"], "a routine whose option failed where "
                                                                               "it had always worked", _sender(env))
        return self._changes(env, fid, against, f"{env['record_id']}:{fid}", contradiction=True)

    def _doubt_replaced(self, t: TenantState, success: dict, key: tuple,
                        restoring: bool = False) -> list[tuple[str, dict]]:
        """Change detection that does not punish a flake (design.md §issue-29): a rule whose option failed once in
        its scope since it last worked there may have met a transient error, and stays trusted on that alone.
        It is contradicted (under review at once) when the system shows the option was *replaced*: here, in
        the scope of this success, the rule's option failed since it last worked and this other option worked.
        The rule's own scope need not be this one: a change of a system is seen in whichever environment an
        agent meets it first, and each environment's rule failing once there is then no longer a flake."""
        system, env = key[0], success["envelope"]
        # the options that failed here lately (``reports``: this system and scope's last failures, not every key)
        recent = {o for f in t.reports.get(report_key(key), []) if (o := option_key(f))}
        replaced = [k for k in recent if t.failed.get(k) and (k[1], k[3]) != (key[1], key[3])]
        if not replaced:
            return []
        done = t.contradicted.setdefault(env["task"], set()) if env["task"] else set()
        out = []
        proven = t.proven_units()  # only a live unit that succeeded before is doubted
        for old in replaced:
            for unit in proven:
                if unit.fragment_id in done:
                    continue
                # Every word of the failed option (and of who did it) in the rule's action: "page size 500" does not
                # recommend "page size 10000"; and a rule that names what just worked is confirmed, not replaced.
                said = attribution.words(unit.action)
                if system.lower() not in unit.condition.lower() or not old[1] | old[3] <= said \
                        or key[1] | key[3] <= said:
                    continue
                where = frozenset((k, str(v)) for k, v in (t.scopes.get(unit.fragment_id) or {}).items())
                failed_there = t.failed.get((system, old[1], where, old[3]))
                if not failed_there or failed_there[-1] in unit.evidence:
                    continue  # it has not failed where it holds (nothing to doubt yet), or that failure counted
                done.add(unit.fragment_id)
                if restoring:
                    continue  # its contradiction is in the log
                against = lifecycle.on_perceived_contradiction(
                    unit, failed_there[-1], f"failed where it used to succeed; in {system} "
                                            f"'{success.get('identity') or success.get('action')}' replaced it",
                    _sender(env))
                out += self._changes(env, unit.fragment_id, against, f"{env['record_id']}:{unit.fragment_id}",
                                     contradiction=True)
        return out

    def _outdate_successes(self, t: TenantState, failure: dict, key: tuple,
                           restoring: bool = False) -> list[tuple[str, dict]]:
        """Change detection without a recovery: an option that used to work here failed
        ``FAILURES_TO_OUTDATE`` times since its last success (the task may have ended without finding
        what works instead), so its older success events stop suggesting it. One failure is not
        enough: a transient error must not erase what works."""
        since = t.failed.get(key, [])
        if len(since) < FAILURES_TO_OUTDATE or not t.successes.get(key):
            return []
        old = t.successes.pop(key)
        if restoring:
            return []  # its decision is in the log
        env = failure["envelope"]
        self.counts[EVENTS_OUTDATED] += 1
        return [decision(
            EVENTS_OUTDATED, env["tenant"], old, list(since),
            f"'{failure['action']}' failed {len(since)} times in {key[0]} since it last worked: its older successes "
            "are outdated (kept in the log, no longer injected)", {"system": key[0], "option": failure["action"],
                                                                    "by": None},
            env["ts_us"], EXTRACT_JOB, {"rule": "outdate/1", "failures": FAILURES_TO_OUTDATE},
            f"{env['record_id']}:successes:outdated")]

    def _outdate_failures(self, t: TenantState, success: dict, key: tuple,
                          restoring: bool = False) -> list[tuple[str, dict]]:
        """The other half of change detection: an option that works now, where it failed before (in the
        same system and scope), makes its older failure reports outdated. They would name the new
        answer as failing beside the rule that recommends it, and cost tokens in every pack."""
        old = t.failed.pop(key, [])
        if not old or restoring:
            return []
        env = success["envelope"]
        self.counts[EVENTS_OUTDATED] += 1
        return [decision(
            EVENTS_OUTDATED, env["tenant"], old, [env["record_id"]],
            f"'{success['action']}' worked in {key[0]} where it failed before: its older failures are outdated "
            "(kept in the log, no longer injected)", {"system": key[0], "option": success["action"], "by": None},
            env["ts_us"], EXTRACT_JOB, {"rule": "outdate/1"}, f"{env['record_id']}:failures:outdated")]


def _sender(env: dict) -> str | None:
    """Who sent the perceived event that decides a contradiction (``lifecycle.sender_of``): the failure itself, or
    the success that shows the option replaced (the failure it names is kept without its envelope's sender)."""
    return lifecycle.sender_of(env.get("agent"), env.get("producer"))


def _recommends(unit: Unit, option: tuple, scope: dict | None = None) -> bool:
    """Whether ``unit`` (proposed for ``scope``) tells the agent to do ``option`` where the option ran: its
    action performs the option, its condition names the system, and its scope does not name another
    value of a coordinate the option's scope names (a rule of test is not contradicted in prod)."""
    system, words, where, _identity = option  # a rule names what to do; who does it is its action's words
    ran = dict(where)
    if any(k in ran and ran[k] != str(v) for k, v in (scope or {}).items()):
        return False
    return attribution.performs(attribution.words(unit.action), words) and system.lower() in unit.condition.lower()
