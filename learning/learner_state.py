"""The learner's state per tenant (``TenantState``), rebuilt by folding the log and pickled in its snapshot
(``learning.runtime``): the bounded maps it keeps (``Recent``, ``FailureLists``) and the slim copy of a failure
event it keeps until its task recovers (``KeptFailure``), with the option key change detection compares."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import MISSING, dataclass, field, fields
from itertools import islice
from operator import attrgetter

from hindbrain.learning import attribution, lifecycle
from hindbrain.learning.lifecycle import Unit
from hindbrain.learning.llm import TRAJECTORY_FIELDS
from hindbrain.recall import _scan

RECENT = 50_000  # tasks, recalls and sessions remembered per tenant (older ones are done with)


class Recent(OrderedDict):
    """A dict that forgets its oldest keys beyond ``RECENT``: a fleet's learner runs for
    months, and a task's trajectory or a recall's domain matters only while it is live."""

    def __setitem__(self, key, value) -> None:
        _ordered_set(self, key, value)  # the base slot directly: ``super()`` cost ~0.2 µs an event (issue 28)
        if len(self) > RECENT:
            self.popitem(last=False)

    def setdefault(self, key, default=None):
        held = self.get(key, _ABSENT)  # one lookup where a hit is the common case
        if held is _ABSENT:  # ``__setitem__``'s body here: its Python frame was ~0.25 µs a new task (issue 28)
            _ordered_set(self, key, default)
            if len(self) > RECENT:
                self.popitem(last=False)
            held = default
        return held


_ABSENT = object()
_ordered_set = OrderedDict.__setitem__


class FailureLists(Recent):
    """A ``Recent`` of lists of ``KeptFailure`` (``TenantState.failures``, ``reports``), pickled as columns: its keys,
    each list's length, and each kept field's values for all its failures in one list. A failure pickled on its
    own (``KeptFailure.__reduce__``: a call and a tuple each) made the kept failures ~2/3 of the learner's
    snapshot at 100k events (72 ms); as columns 31 ms (issue 28, round sixteen). The columns are read in one C walk
    (``_scan.attr_columns``): an ``attrgetter`` pass a field was ~20 ms of a 100k import's ~90 ms snapshot, which
    ``perceive_many`` pays once every ``SNAPSHOT_EVERY`` records (round twenty-two); the same columns, the same
    pickle (tests/learning/test_snapshot_columns.py)."""

    def __reduce__(self):
        lengths, columns = _scan.attr_columns(list(self.values()), _KEPT)
        return _failure_lists_of, (list(self), lengths, columns)


def _failure_lists_of(keys: list, lengths: list[int], columns: list[list]) -> FailureLists:
    """The ``FailureLists`` whose columns ``FailureLists.__reduce__`` gave, in its order."""
    failures, out = map(_kept_failure_of, *columns), FailureLists()
    for key, n in zip(keys, lengths, strict=True):
        _ordered_set(out, key, list(islice(failures, n)))
    return out


@dataclass
class TenantState:
    """What the learner knows of one tenant: its units and lessons, and the bounded recent maps its rules read
    (trajectories, recalls, option reports, the last event per place). Rebuilt by folding the log; pickled by
    class name in the learner's snapshot (``runtime.SNAPSHOT_VERSION`` says when that name changed)."""

    units: dict[str, Unit] = field(default_factory=dict)
    lessons: dict[tuple, str] = field(default_factory=dict)  # (source, condition, action, scope) → unit
    failures: FailureLists = field(default_factory=FailureLists)  # task → its failed steps
    applied: Recent = field(default_factory=Recent)  # task → units it applied
    recall_domain: Recent = field(default_factory=Recent)  # recall id → task domain
    # recall id → the units its injection record put into the agent's context: what an outcome naming it may credit
    injected: Recent = field(default_factory=Recent)
    answered: Recent = field(default_factory=Recent)  # recall id → the outcome that spent it (one credited a recall)
    # recall id → the agent its injection was for (``lifecycle.agent_identity``), when it named one: an outcome naming
    # another agent proves nothing of it (``outcome_verdicts._credit``, round thirty-three)
    recalled_by: Recent = field(default_factory=Recent)
    negatives: dict[str, list[dict]] = field(default_factory=dict)  # topic → negative feedback events
    # (agent, session or task, kind, speaker, stored item) → the last event there, as columns (``_hygiene``)
    last_event: _scan.LastEvents = field(default_factory=lambda: _scan.LastEvents(RECENT))
    tried: Recent = field(default_factory=Recent)  # task → [(the action's words, it failed)], in order
    goals: Recent = field(default_factory=Recent)  # task → what its recall said it set out to do
    recovered: Recent = field(default_factory=Recent)  # task → the unit its recovery taught (or absorbed into)
    contradicted: Recent = field(default_factory=Recent)  # task → the units its recovery contradicted already
    successes: Recent = field(default_factory=Recent)  # (system, option's words, scope) → success events, oldest first
    failed: Recent = field(default_factory=Recent)  # the same key → its failure events, oldest first
    scopes: Recent = field(default_factory=Recent)  # unit → the scope its proposal named: where it holds
    # the recent event ids: a repeated one is the same event (``_repeated``)
    perceived: _scan.RecentIds = field(default_factory=lambda: _scan.RecentIds(RECENT))
    reports: FailureLists = field(default_factory=FailureLists)  # (system, scope) → its recent failure events, any task
    routine: Recent = field(default_factory=Recent)  # option key → {agent: its last success}, until a failure
    routines: Recent = field(default_factory=Recent)  # option key → the routine unit it taught
    # While restoring: a proposal's unit id → (the map above that names what it taught, its key), until the
    # gate's decision on it is folded (it comes later in the log). See ``_restore_taught``.
    teaching: Recent = field(default_factory=Recent)
    # The live units that succeeded at least once, in ``units``' order (``_set_unit``): the only ones change
    # detection contradicts, read on every success; a scan of ``units`` there grew with the tenant's units
    # (one success cost ~O(units): 100 → 300 µs an event over 40k events of bench/learning.py's world, issue 28).
    proven: dict[str, None] = field(default_factory=dict)
    # A unit decision counts once, at its first place on the log (``Learner._again``): the ids folded, and the
    # ones it appended and has not read back yet (its own, read back once, are no repeat). ``unread`` is what is
    # in flight between its appends and its reads, not what it learnt: left out of a comparison of two learners.
    folded: set[str] = field(default_factory=set)
    unread: set[str] = field(default_factory=set, compare=False)

    def __setstate__(self, state: dict) -> None:
        """A snapshot pickled before a field existed (round twenty-five's ``injected``, ``answered``) still
        loads, the field empty: a recall from before it is then unknown, its outcome evidence only."""
        for f in fields(TenantState):
            if f.name not in state:
                state[f.name] = f.default_factory() if f.default_factory is not MISSING else f.default
        self.__dict__.update(state)

    def proven_units(self) -> list[Unit]:
        """The live units with a success, in ``units``' order."""
        return [self.units[fid] for fid in self.proven]

    def set_unit(self, unit: Unit) -> None:
        """``units[unit.fragment_id] = unit``, ``proven`` kept as ``units`` would filter it."""
        fid = unit.fragment_id
        self.units[fid] = unit
        if unit.status in lifecycle.LIVE and unit.successes:
            if fid not in self.proven:  # rebuilt in order: a unit turns proven rarely (a unit's first success)
                self.proven = {f: None for f, u in self.units.items() if u.status in lifecycle.LIVE and u.successes}
        elif fid in self.proven:
            del self.proven[fid]


def option_key(event: dict) -> tuple[str, frozenset[str], frozenset, frozenset[str]] | None:
    """What an event did, as change detection compares it: (its system, its action's words, its
    scope, its identity's words). The scope is part of "where": what fails in prod may still work
    in test (an environment's rule), so a failure in one scope outdates nothing of another. The
    identity is part of the choice: "submit change" failing as the normal account says nothing of
    "submit change" as the admin account, so a success as one never outdates a failure as the other.
    A kept failure's is computed once (``KeptFailure.option``)."""
    if event.__class__ is KeptFailure:
        return event.option()
    words = attribution.words(event.get("action") or "")
    if not event.get("system") or not words:
        return None
    scope = event.get("scope")
    # most events name no scope: a new empty frozenset without the generator's frame (~0.4 µs, issue 28)
    scope = frozenset((k, str(v)) for k, v in scope.items() if isinstance(v, str | int | float)) if scope else \
        frozenset()
    return event["system"], words, scope, attribution.words(event.get("identity") or "")


# What a kept failure (``TenantState.failures``, ``reports``) is read for: ``extract.recovery``, ``option_key`` and
# ``_outdate`` (system, action, identity, actual, expected, text, scope, entities, its id) and the LLM
# extractor's trajectory (``llm.TRAJECTORY_FIELDS``, its id).
_FAILURE_FIELDS = tuple(dict.fromkeys((*TRAJECTORY_FIELDS, "entities")))


_EMPTY = ("", {}, [])  # the validated record's defaults: ``{}`` and ``[]`` held 120 bytes a kept failure


class KeptFailure:
    """What the learner keeps of a failure event until its task recovers: the fields its rules and the
    extractor read, and of the envelope only the id, read as the record was (``.get``, ``[...]``,
    ``["envelope"]["record_id"]``). Absent and empty fields are None: each reader asks ``.get`` and takes
    an empty value as none (``or``, ``.get("scope", {})``, the extractor's steps). The whole perception
    record (its envelope, session, speaker, metadata ...) held ~180 bytes an event more at 100k events
    (design.md §issue-28), a dict of the fields still ~100: slots take a third of that. The decisions are
    the same (tests/learning/test_kept_failures.py)."""

    __slots__ = (*_FAILURE_FIELDS, "record_id", "_option")

    def __init__(self, record: dict):
        self._option = None  # not yet computed (``option``)
        # Each of ``_FAILURE_FIELDS`` stored by name, None when absent or empty: a value that is not falsy is none
        # of ``_EMPTY``, only those are compared. A loop of ``setattr`` over the names (or a call a value) was
        # ~2 µs a failure, a quarter of a fleet's events (issue 28, round eighteen); the names are checked
        # against the fields in tests/learning/test_failure_rules.py.
        get, empty = record.get, _EMPTY
        self.kind = v if (v := get("kind")) or v is not None and v not in empty else None
        self.text = v if (v := get("text")) or v is not None and v not in empty else None
        self.system = v if (v := get("system")) or v is not None and v not in empty else None
        self.identity = v if (v := get("identity")) or v is not None and v not in empty else None
        self.action = v if (v := get("action")) or v is not None and v not in empty else None
        self.expected = v if (v := get("expected")) or v is not None and v not in empty else None
        self.actual = v if (v := get("actual")) or v is not None and v not in empty else None
        self.success = v if (v := get("success")) or v is not None and v not in empty else None
        self.scope = v if (v := get("scope")) or v is not None and v not in empty else None
        self.entities = v if (v := get("entities")) or v is not None and v not in empty else None
        self.record_id = record["envelope"]["record_id"]

    def option(self) -> tuple | None:
        """``option_key`` of the failure, computed on the first call: every success in its system and scope
        asks it of the last ``TRAJECTORY`` failure reports there (``_doubt_replaced``), ~60 % of the learner's
        time in bench/learning.py's world (issue 28). ``()``: computed, none."""
        if self._option is None:
            self._option = option_key(self.as_record()) or ()
        return self._option or None

    def get(self, name: str, default=None):
        value = getattr(self, name) if name in _FAILURE_FIELDS else None
        return default if value is None else value

    def __getitem__(self, name: str):
        if name == "envelope":
            return {"record_id": self.record_id}
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def as_record(self) -> dict:
        """The kept fields as a record (what the extractor's protocol takes: dicts)."""
        return {"envelope": {"record_id": self.record_id},
                **{name: value for name in _FAILURE_FIELDS if (value := getattr(self, name)) is not None}}

    def __reduce__(self):
        """Pickled as its kept values in ``_KEPT`` order (the learner's snapshot holds ~25k of them at 100k
        events): the default for a slotted object made a dict of its slots, names included, an object (the
        kept failures were ~40 % of the snapshot's ~0.25 s of the caller's CPU; as values x0.66, issue 28
        round fifteen). The option is a cache, computed again on first use. A snapshot in the default form
        still loads (its slots are set as before)."""
        return _kept_failure_of, _kept_values(self)

    def __eq__(self, other) -> bool:  # a replayed learner holds the same failures
        return isinstance(other, KeptFailure) and self.as_record() == other.as_record()

    __hash__ = None  # compared by value

    def __repr__(self) -> str:
        return f"KeptFailure({self.as_record()!r})"


_KEPT = (*_FAILURE_FIELDS, "record_id")  # what a pickled KeptFailure holds, in order
_kept_values = attrgetter(*_KEPT)


def _kept_failure_of(*values) -> KeptFailure:
    """The ``KeptFailure`` whose ``_KEPT`` values ``__reduce__`` gave (its option not computed yet)."""
    failure = KeptFailure.__new__(KeptFailure)
    for name, value in zip(_KEPT, values, strict=True):
        setattr(failure, name, value)
    failure._option = None
    return failure


def keep_failure(record: dict) -> KeptFailure:
    """What the learner keeps of the failure event ``record`` (``KeptFailure``). A function the learner calls by
    name: tests/learning/test_kept_failures.py swaps it for keeping the whole record and compares the decisions."""
    return KeptFailure(record)


def failure_record(failure: KeptFailure | dict) -> dict:
    """A kept failure as the extractor takes it (a snapshot of older code may hold whole records)."""
    return failure.as_record() if isinstance(failure, KeptFailure) else failure


def report_key(option: tuple) -> tuple:
    """(system, scope) of an option key (``option_key``): where its failure reports are kept."""
    return option[:1] + option[2:3]
