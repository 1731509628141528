"""The third fleet world (design.md §issue-29 point 6), written blind: from the public SDK and a brief only,
without reading the product's recall or learning code, so it cannot have been bent to suit them.

    python -m hindbrain.sim.third --seeds 1,2,3 [--rounds 40]

Six agents of one tenant work N rounds on systems whose hidden rules decide which option
(identity, action variant or parameter) succeeds; two of the six are Chinese. From half time,
four look-alike systems appear (two of them Chinese): a new name, the hidden rule family of a
seen system. At 60 % of
the run one system's working option changes. One system's rule holds only in its environment
(what works in prod fails in test). One agent also answers two users who want opposite styles;
one of them changes her mind once.

The agents read a pack as an LLM would: only ``pack.render()``'s text. A line that recommends
one of the system's options for a matching condition is followed, an option named as failing is
avoided, otherwise the agent explores (random among untried options). They ``perceive`` what
they see, ``recall`` before each decision with a natural query and report ``outcome(recall_id,
applied=[what they followed], success)``. They never call ``learn``.

Arms on the same schedule and seeds: no memory, naive RAG (every observation's text, BM25 top 5,
injected verbatim) and hindbrain; an oracle arm (renders the true rules) checks the world itself.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

AGENTS = tuple(f"agent-{i}" for i in range(1, 7))
TENANT = "fleet3"
ENVS = ("prod", "test")
ENV_WORDS = {"prod": ("prod", "production", "生产"), "test": ("test", "testing", "staging", "测试")}
MAX_ATTEMPTS = 2        # a task is failed (escalated to a human) after two wrong options
CHANGE_AT = 0.6         # fraction of the run after which the changing system's answer moves
PREFERENCE_CHANGE_AT = 0.45


# ---------------------------------------------------------------- the world

@dataclass(frozen=True)
class System:
    """One app or tool. ``working`` is the option that succeeds; ``working_test`` overrides it in
    test (an environment-specific rule); ``changes_to`` replaces it from the change round on."""
    name: str
    zh: bool
    family: str
    field: str                       # the perceived field the option is: "identity" or "action"
    goal: str
    expected: str
    options: tuple[str, ...]
    working: str
    failures: tuple[str, ...]        # what the user sees when a wrong option is used, one per option
    working_test: str | None = None
    changes_to: str | None = None
    lookalike_of: str | None = None

    def works(self, option: str, env: str, changed: bool) -> bool:
        return option == self.answer(env, changed)

    def answer(self, env: str, changed: bool) -> str:
        if changed and self.changes_to:
            return self.changes_to
        if env == "test" and self.working_test:
            return self.working_test
        return self.working

    def failure(self, option: str) -> str:
        return self.failures[self.options.index(option) % len(self.failures)]


def _systems() -> tuple[System, ...]:
    payroll = dict(family="finance-identity", field="identity", goal="run the monthly pay run",
                   expected="pay run submitted", options=("personal account", "finance-admin account", "service token"),
                   working="finance-admin account", failures=("403 permission denied", "", "token scope rejected"))
    reimburse = dict(family="审批身份", field="identity", goal="提交报销单", expected="提交成功",
                     options=("普通员工账号", "部门经理账号", "财务审批账号"), working="财务审批账号",
                     failures=("提示权限不足", "提示需要财务审批", ""))
    stock = dict(family="导入方式", field="action", goal="更新库存数量", expected="库存已更新",
                 options=("批量导入", "逐条录入", "接口同步"), working="接口同步",
                 failures=("导入失败：格式错误", "录入超时", ""))
    index = dict(family="page-size", field="action", goal="rebuild the search index", expected="index rebuilt",
                 options=("page size 20", "page size 500", "page size 10000"), working="page size 500",
                 failures=("job too slow, killed after 1 h", "", "out of memory"))
    return (
        System(name="Payroll", zh=False, **payroll),
        System(name="报销系统", zh=True, **reimburse),
        System(name="库存系统", zh=True, **stock),
        System(name="Search Index", zh=False, **index),
        System(name="Deploy", zh=False, family="rollout", field="action", goal="ship the release",
               expected="release live", options=("blue-green rollout", "direct push", "canary release"),
               working="blue-green rollout", working_test="direct push",
               failures=("no standby slot", "refused: prod needs zero downtime", "canary metrics missing")),
        System(name="Mailer", zh=False, family="mail-transport", field="action", goal="send the customer newsletter",
               expected="newsletter sent", options=("smtp relay", "api gateway", "batch queue"),
               working="smtp relay", changes_to="api gateway",
               failures=("connection refused by relay", "401 from gateway", "queue stalled")),
        # look-alikes: a seen system's rule family under a new name, from half time
        System(name="Invoice Hub", zh=False, lookalike_of="Payroll",
               **{**payroll, "goal": "approve the supplier invoices", "expected": "invoices approved"}),
        System(name="差旅系统", zh=True, lookalike_of="报销系统", **{**reimburse, "goal": "提交差旅申请"}),
        System(name="仓储系统", zh=True, lookalike_of="库存系统", **{**stock, "goal": "同步仓库库位"}),
        System(name="Log Indexer", zh=False, lookalike_of="Search Index",
               **{**index, "goal": "reindex last week's logs", "expected": "logs reindexed"}),
    )


@dataclass(frozen=True)
class User:
    name: str
    length: str             # short | detailed
    language: str           # en | zh
    states: str             # how they say it the first time
    complains: str          # what they say after an answer in the wrong style
    changed_length: str | None = None
    changes: str = ""


USERS = (
    User("Lin", "short", "zh", "以后请用中文回复我，简短一点就好。", "太长了，而且请用中文，简短一点。"),
    User("Oliver", "detailed", "en", "Please give me detailed answers with the full reasoning, in English.",
         "That was too thin - I want the detailed version with the reasoning.", changed_length="short",
         changes="From now on keep your answers short, just the gist - I no longer have time for long ones."),
)
QUESTIONS = ("why did the nightly export fail", "what changed in the release", "how do I rotate my key",
             "when is the next maintenance window", "what does the new quota mean for my team",
             "can you summarise yesterday's incident")


@dataclass(frozen=True)
class Task:
    round: int
    agent: str
    system: str | None       # None: an answer to a user
    env: str = "prod"
    user: str = ""
    question: str = ""

    @property
    def id(self) -> str:
        return f"r{self.round}-{self.agent}-{'sys' if self.system else 'ans'}"


@dataclass(frozen=True)
class World:
    seed: int
    rounds: int
    systems: tuple[System, ...]
    tasks: tuple[Task, ...]

    @property
    def change_round(self) -> int:
        return math.ceil(self.rounds * CHANGE_AT)

    @property
    def preference_round(self) -> int:
        return math.ceil(self.rounds * PREFERENCE_CHANGE_AT)

    def system(self, name: str) -> System:
        return next(s for s in self.systems if s.name == name)

    def user(self, name: str) -> User:
        return next(u for u in USERS if u.name == name)

    def wants(self, user: str, round_: int) -> tuple[str, str]:
        """(length, language) the user wants in this round."""
        u = self.user(user)
        length = u.changed_length if u.changed_length and round_ >= self.preference_round else u.length
        return length, u.language


def third_world(seed: int = 1, rounds: int = 40) -> World:
    """The schedule: each round every agent gets one system task (look-alikes join the pool from
    half time) and agent-1 also answers one of its two users. Deterministic in ``seed``."""
    rng = random.Random(seed)
    systems = _systems()
    tasks = []
    for r in range(rounds):
        pool = [s.name for s in systems if not s.lookalike_of or r >= rounds // 2]
        for agent in AGENTS:
            tasks.append(Task(r, agent, rng.choice(pool), rng.choice(ENVS)))
        user = rng.choice(USERS).name
        if r < 2 or r == math.ceil(rounds * PREFERENCE_CHANGE_AT):   # both users speak first; the changer, on cue
            user = USERS[r % 2].name if r < 2 else next(u.name for u in USERS if u.changes)
        tasks.append(Task(r, AGENTS[0], None, user=user, question=rng.choice(QUESTIONS)))
    return World(seed, rounds, systems, tuple(tasks))


# ---------------------------------------------------------------- reading a pack like an LLM

# "not: X", "instead of X", "不要用X": every option named in the span after the marker is to be avoided
NOT_SPAN = re.compile(r"(\bnot\b|\bnever\b|\bdon'?t\b|\bavoid\b|\binstead of\b|\brather than\b|"
                      r"不要用?|别用|而不是|避免)[:：]?([^)\]）|→;；。,，]*)", re.I)
FAILED = re.compile(r"(\bfail\w*|\bdenied\b|\berror\b|\brejected\b|\brefused\b|\bkilled\b|\bout of memory\b|"
                    r"\bstalled\b|\bmissing\b|\b40[13]\b|\b(did|does)( not|n'?t) work|失败|报错|不足|拒绝|超时|错误|"
                    r"需要财务审批)", re.I)
WORKED = re.compile(r"(\bworked\b|\bworks\b|\bsucceed\w*|\bsuccess\w*|\bswitch(ed)? to\b|\buse\b|\bdo\b|\btry\b|"
                    r"成功|改用|使用|应该用|请用)", re.I)
CLAUSE = re.compile(r"[,;.。，；:：!?\n→|()\[\]（）—/]|\bbecause\b|\bbut\b|\bthen\b|\bwhen\b|因为|但是|但")
CHANGE_MARKERS = re.compile(r"(from now on|no longer|instead|now prefer|changed|以后|改为|现在)", re.I)
SHORT = re.compile(r"(\bshort\b|\bbrief\w*|\bconcise\b|\bgist\b|简短|简洁|短一点)", re.I)
DETAILED = re.compile(r"(\bdetailed\b|\bin detail\b|\bthorough\b|\bfull reasoning\b|\bin depth\b|详细)", re.I)
ZH = re.compile(r"(\bchinese\b|中文|汉语)", re.I)
EN = re.compile(r"(\benglish\b|英文|英语)", re.I)


@dataclass(frozen=True)
class Reading:
    """What an agent took from a pack for one decision."""
    choice: str | None           # the option a line recommends (None: explore)
    avoid: frozenset[str]
    followed: tuple[int, ...]    # indices of the pack's lines the decision rests on


def _mentions(text: str, phrase: str) -> list[int]:
    """Where ``phrase`` occurs as whole words (Chinese has no spaces: a plain substring there)."""
    edge = ("", "") if not phrase.isascii() else (r"(?<![\w])", r"(?![\w])")
    return [m.start() for m in re.finditer(edge[0] + re.escape(phrase) + edge[1], text, re.I)]


def _env_of(line: str) -> set[str]:
    return {env for env, words in ENV_WORDS.items() if any(_mentions(line, w) for w in words)}


def polarity(line: str, at: int) -> int:
    """+1 if the mention of an option at ``at`` recommends it, -1 if it names it as failing or to be
    avoided, 0 if the line does not say. Read by clause first, then by the whole line."""
    if any(m.start(2) <= at < m.end(2) for m in NOT_SPAN.finditer(line)):
        return -1
    starts = [0] + [m.end() for m in CLAUSE.finditer(line) if m.end() <= at]
    end_m = CLAUSE.search(line, at)
    clause = line[starts[-1]:end_m.start() if end_m else len(line)]
    if FAILED.search(clause):
        return -1
    if WORKED.search(clause):
        return 1
    worked, failed = bool(WORKED.search(line)), bool(FAILED.search(line))
    return 1 if worked and not failed else -1 if failed and not worked else 0


def read_for_system(lines: list[str], system: System, env: str, known: list[str]) -> Reading:
    """The agent's reading of a pack for one decision on ``system`` in ``env``, top down as the pack
    is ranked (best first). A line recommending one of the system's options is followed unless a
    line ranked above it (or itself) names that option as failing here. Lines about this system in
    this environment (or naming none) come first, then this system in the other environment, then
    other systems (an analogy, for a system never seen). An option a line of this environment names
    as failing is avoided when exploring."""
    others = [n for n in known if n != system.name]
    recommended: list[tuple[int, int, str]] = []          # (tier, line, option)
    failing_from: dict[str, int] = {}                     # option -> the first line naming it failing here
    for i, line in enumerate(lines):
        envs = _env_of(line)
        same_env = not envs or env in envs
        foreign = not _mentions(line, system.name) and any(_mentions(line, o) for o in others)
        for option in system.options:
            for at in _mentions(line, option):
                p = polarity(line, at)
                if p < 0 and same_env:
                    failing_from.setdefault(option, i)
                elif p > 0:
                    recommended.append(((0 if same_env else 1) + (2 if foreign else 0), i, option))
    avoid = frozenset(failing_from)
    for _, i, option in sorted(recommended):
        if failing_from.get(option, len(lines)) > i:
            warned = {j for j in failing_from.values() if j <= i}
            return Reading(option, avoid, tuple(sorted({i, *warned})))
    return Reading(None, avoid, tuple(sorted(set(failing_from.values()))))


def read_for_user(lines: list[str], user: str, users: list[str]) -> tuple[str | None, str | None, tuple[int, ...]]:
    """(length, language, lines followed) for answering ``user``: only lines naming that user count
    (a line naming only another user is someone else's wish); a line saying the wish changed
    ("from now on", "以后") wins over one that does not; else the pack's order."""
    mine = [i for i, line in enumerate(lines) if _mentions(line, user)]
    mine = [i for i in mine if not any(_mentions(lines[i], o) for o in users if o != user)] or mine
    mine.sort(key=lambda i: (not CHANGE_MARKERS.search(lines[i]), i))
    length = language = None
    followed = []
    for i in mine:
        line = lines[i]
        if length is None and (SHORT.search(line) or DETAILED.search(line)):
            length = "short" if SHORT.search(line) else "detailed"
            followed.append(i)
        if language is None and (ZH.search(line) or EN.search(line)):
            language = "zh" if ZH.search(line) else "en"
            followed.append(i)
    return length, language, tuple(sorted(set(followed)))


# ---------------------------------------------------------------- arms

WORD = re.compile(r"[A-Za-z0-9_]+|[\u4e00-\u9fff]|[^\sA-Za-z0-9_\u4e00-\u9fff]")


def count_tokens(text: str) -> int:
    """Tokens injected, counted the same for every arm: a word, a CJK character or a punctuation mark is one."""
    return len(WORD.findall(text))


@dataclass
class Pack:
    recall_id: str
    text: str
    ids: list[str]           # per line of ``text``: the id of the item it came from


class NoMemory:
    name = "no memory"

    def perceive(self, **event) -> None:
        pass

    def recall(self, **ask) -> Pack:
        return Pack("", "", [])

    def outcome(self, recall_id: str, task: str, applied: list[str], success: bool) -> None:
        pass

    def end_round(self) -> None:
        pass


class NaiveRag(NoMemory):
    """Stores every observation's text; injects the top ``k`` by BM25 over word and CJK-character
    tokens, verbatim, one per line. No gate, no feedback."""
    name = "naive RAG"

    def __init__(self, k: int = 5) -> None:
        self.k = k
        self.docs: list[list[str]] = []
        self.texts: list[str] = []
        self.df: Counter[str] = Counter()

    def perceive(self, **event) -> None:
        text = " ".join(str(event[f]) for f in ("speaker", "text") if event.get(f))
        terms = _terms(text)
        self.docs.append(terms)
        self.texts.append(text.replace("\n", " "))
        self.df.update(set(terms))

    def recall(self, **ask) -> Pack:
        q = _terms(" ".join(str(v) for v in (ask.get("query"), *(ask.get("situation") or {}).values()) if v))
        scores = bm25(q, self.docs, self.df)
        top = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: -scores[i])[: self.k]
        return Pack(f"rag-{len(self.texts)}", "\n".join(self.texts[i] for i in top), [f"doc-{i}" for i in top])


def _terms(text: str) -> list[str]:
    return [t.lower() for t in WORD.findall(text) if t.isalnum()]


def bm25(query: list[str], docs: list[list[str]], df: Counter, k1: float = 1.2, b: float = 0.75) -> list[float]:
    """Okapi BM25 of each document for the query."""
    if not docs:
        return []
    avg = sum(map(len, docs)) / len(docs)
    n = len(docs)
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in set(query)}
    out = []
    for d in docs:
        tf = Counter(d)
        out.append(sum(idf[t] * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * len(d) / avg)) for t in idf if tf[t]))
    return out


class Hindbrain(NoMemory):
    """The public SDK with default arguments: perceive, recall, outcome; hindsight at the end of a
    round (the nightly batch)."""
    name = "hindbrain"

    def __init__(self, brain, tenant: str = TENANT) -> None:
        self.brain, self.tenant = brain, tenant

    def perceive(self, **event) -> None:
        self.brain.perceive(tenant=self.tenant, **event)

    def recall(self, **ask) -> Pack:
        pack = self.brain.recall(tenant=self.tenant, **ask)
        text = pack.render()
        return Pack(pack.recall_id, text, _line_ids(text, [(i.id, i.text) for i in pack.items]))

    def outcome(self, recall_id: str, task: str, applied: list[str], success: bool) -> None:
        self.brain.outcome(tenant=self.tenant, recall_id=recall_id, task=task, applied=applied, success=success)

    def end_round(self) -> None:
        self.brain.hindsight()


def _line_ids(text: str, items: list[tuple[str, str]]) -> list[str]:
    """Which item each rendered line came from, as an LLM citing what it followed would say: the id
    the line shows, else the item whose text shares most words with the line."""
    out = []
    for line in text.split("\n"):
        shown = [item_id for item_id, _ in items if item_id and item_id in line]
        if shown:
            out.append(shown[0])
            continue
        words = set(_terms(line))
        best = max(items, key=lambda it: len(words & set(_terms(it[1]))), default=("", ""))
        out.append(best[0] if words & set(_terms(best[1])) else "")
    return out


class Oracle(NoMemory):
    """Knows the hidden rules and renders them as "when C, do A" lines: a check of the world and of
    the agents' reading, not a competitor."""
    name = "oracle"

    def __init__(self, world: World) -> None:
        self.world = world
        self.round = 0

    def recall(self, **ask) -> Pack:
        w = self.world
        if not ask.get("situation"):
            user = ask["query"].split(" asks:")[0]
            length, language = w.wants(user, self.round)
            lang = "Chinese" if language == "zh" else "English"
            return Pack("oracle", f"when answering {user}, do use {length} replies in {lang}", ["rule"])
        system = w.system(ask["situation"]["system"])
        env = ask["scope"]["env"]
        answer = system.answer(env, self.round >= w.change_round)
        return Pack("oracle", f"when {system.name} in {env}, do use {answer}", ["rule"])

    def end_round(self) -> None:
        self.round += 1


# ---------------------------------------------------------------- the run

@dataclass
class Score:
    """One arm's counts over one run."""
    tasks: int = 0
    successes: int = 0
    first_try: int = 0
    attempts_known_bad: int = 0          # decisions where a still-failing option had been seen failing
    repeats: int = 0                     # ... and the agent chose one of them anyway
    tokens: int = 0
    changed_tasks: list[str] = field(default_factory=list)   # per task on the changed system after the change
    answers: int = 0
    obeyed: int = 0
    after_change: int = 0
    after_change_obeyed: int = 0
    leaked: int = 0
    lookalike_first: int = 0
    lookalike_right: int = 0
    env_chances: int = 0
    env_respected: int = 0

    def metrics(self) -> dict[str, float | None]:
        def pct(a, b):
            return a / b if b else None
        first_new = next((i for i, c in enumerate(self.changed_tasks) if c == "new"), None)
        return {
            "success rate": pct(self.successes, self.tasks),
            "first try right": pct(self.first_try, self.tasks),
            "fleet repeats a solved mistake": pct(self.repeats, self.attempts_known_bad),
            "tasks until new answer first": (first_new if first_new is not None else
                                             (len(self.changed_tasks) if self.changed_tasks else None)),
            "old answer first after change": self.changed_tasks.count("old"),
            "tokens per success": pct(self.tokens, self.successes + self.obeyed),
            "preference obeyed": pct(self.obeyed, self.answers),
            "pref. obeyed after change": pct(self.after_change_obeyed, self.after_change),
            "transfer first try": pct(self.lookalike_right, self.lookalike_first),
            "env rule respected": pct(self.env_respected, self.env_chances),
            "cross-user leakage": pct(self.leaked, self.answers),
        }


PERCENT = {"success rate", "first try right", "fleet repeats a solved mistake", "preference obeyed",
           "pref. obeyed after change", "transfer first try", "env rule respected", "cross-user leakage"}


def fmt(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0%}" if metric in PERCENT else f"{value:.1f}" if metric == "tokens per success" else f"{value:g}"


def query_for(system: System, env: str) -> str:
    """What an agent would type before acting."""
    if system.zh:
        return f"怎么在{system.name}里{system.goal}？（{'生产' if env == 'prod' else '测试'}环境）"
    return f"How do I {system.goal} in {system.name} on {env}?"


def observation(system: System, env: str, option: str, ok: bool) -> str:
    """What the agent saw, in the system's language."""
    if system.zh:
        where = f"{system.name}（{'生产' if env == 'prod' else '测试'}）"
        if ok:
            return f"{where}：用{option}{system.goal}，成功了。"
        return f"{where}：用{option}{system.goal}失败了，预期{system.expected}，实际{system.failure(option)}。"
    where = f"{system.name} ({env})"
    if ok:
        return f"{where}: {system.goal} using {option} worked."
    return f"{where}: {system.goal} using {option} failed - expected {system.expected}, got {system.failure(option)}."


def run(world: World, arm, progress: Callable[[str], None] | None = None) -> Score:
    """Play the world's schedule through one arm; return what the agents did."""
    score = Score()
    failed_seen: dict[tuple[str, str], set[str]] = defaultdict(set)   # (system, env) -> options seen failing
    solved_seen: dict[tuple[str, str], set[str]] = defaultdict(set)   # (system, env) -> options seen working
    touched: set[str] = set()
    told: set[str] = set()
    for r in range(world.rounds):
        changed = r >= world.change_round
        for task in (t for t in world.tasks if t.round == r):
            if task.system is None:
                _answer(world, arm, task, score, told)
            else:
                _work(world, arm, task, changed, score, failed_seen, solved_seen, touched)
        arm.end_round()
        if progress:
            progress(f"{arm.name}: round {r + 1}/{world.rounds}")
    return score


def _work(world, arm, task, changed, score, failed_seen, solved_seen, touched) -> None:
    system = world.system(task.system)
    known = [s.name for s in world.systems if s.name in touched]
    situation = {"system": system.name, "action": system.goal, "expected": system.expected}
    tried: list[str] = []
    score.tasks += 1
    key = situation_key(system, task.env)
    for attempt in range(MAX_ATTEMPTS):
        still_bad = {o for o in failed_seen[key] if not system.works(o, task.env, changed)}
        ask = dict(agent=task.agent, task=task.id, query=query_for(system, task.env), situation=situation,
                   trigger="task_start" if attempt == 0 else "anomaly", scope={"env": task.env})
        pack = arm.recall(**ask)
        score.tokens += count_tokens(pack.text)
        lines = pack.text.split("\n") if pack.text else []
        reading = read_for_system(lines, system, task.env, known)
        choice = reading.choice if reading.choice and reading.choice not in tried else None
        if choice is None:
            rng = random.Random(f"{world.seed}:{task.id}:{attempt}")
            fresh = [o for o in system.options if o not in tried]
            choice = rng.choice([o for o in fresh if o not in reading.avoid] or fresh)
        ok = system.works(choice, task.env, changed)
        if still_bad:
            score.attempts_known_bad += 1
            score.repeats += choice in still_bad
        if attempt == 0:
            _first_try(world, system, task, changed, choice, ok, score, solved_seen)
        tried.append(choice)
        arm.perceive(agent=task.agent, task=task.id, session=task.id, kind="action" if ok else "anomaly",
                     text=observation(system, task.env, choice, ok), system=system.name, entities=[system.name],
                     scope={"env": task.env}, success=ok,
                     **{system.field: choice}, **({"action": system.goal} if system.field == "identity" else {}),
                     expected=system.expected, actual=system.expected if ok else system.failure(choice))
        applied = [pack.ids[i] for i in reading.followed if i < len(pack.ids) and pack.ids[i]]
        if pack.recall_id:
            arm.outcome(pack.recall_id, task.id, applied if choice == (reading.choice or choice) else [], ok)
        (solved_seen if ok else failed_seen)[key].add(choice)
        situation = {**situation, system.field: choice, "actual": system.failure(choice)}
        if ok:
            score.successes += 1
            break
    touched.add(system.name)


def situation_key(system: System, env: str) -> tuple[str, str]:
    """What makes two decisions "the same situation" for the repeat count: the system, and the
    environment only where the rule depends on it."""
    return system.name, env if system.working_test else "*"


def _first_try(world, system, task, changed, choice, ok, score, solved_seen) -> None:
    score.first_try += ok
    if system.changes_to and changed:
        score.changed_tasks.append("new" if choice == system.changes_to else
                                   "old" if choice == system.working else "other")
    if system.lookalike_of and not solved_seen[situation_key(system, task.env)]:
        score.lookalike_first += 1
        score.lookalike_right += ok
    if system.working_test:
        other = "test" if task.env == "prod" else "prod"
        wrong = system.answer(other, changed)
        if wrong in solved_seen[situation_key(system, other)]:
            score.env_chances += 1
            score.env_respected += choice != wrong


def _answer(world, arm, task, score, told: set[str]) -> None:
    user = world.user(task.user)
    users = [u.name for u in USERS]
    if task.user not in told:
        arm.perceive(agent=task.agent, task=task.id, session=task.id, kind="message", speaker=user.name,
                     text=user.states, signal="explicit")
        told.add(task.user)
    if user.changes and task.round == world.preference_round:
        arm.perceive(agent=task.agent, task=task.id, session=task.id, kind="message", speaker=user.name,
                     text=user.changes, signal="explicit")
    arm.perceive(agent=task.agent, task=task.id, session=task.id, kind="message", speaker=user.name,
                 text=task.question + "?")
    query = f"{user.name} asks: {task.question}. How does {user.name} like answers?"
    pack = arm.recall(agent=task.agent, task=task.id, query=query)     # a reply in a conversation: no trigger named
    score.tokens += count_tokens(pack.text)
    lines = pack.text.split("\n") if pack.text else []
    length, language, followed = read_for_user(lines, user.name, users)
    given = (length or "medium", language or "en")
    want = world.wants(user.name, task.round)
    ok = given == want
    score.answers += 1
    score.obeyed += ok
    if user.changes and task.round >= world.preference_round:
        score.after_change += 1
        score.after_change_obeyed += ok
    other = next(u for u in USERS if u.name != user.name)
    theirs = world.wants(other.name, task.round)
    # a default style is no leak: only a style read from the pack can be someone else's
    read = (length, language)
    score.leaked += any(g is not None and g == t and g != w for g, t, w in zip(read, theirs, want, strict=True))
    if pack.recall_id:
        arm.outcome(pack.recall_id, task.id, [pack.ids[i] for i in followed if pack.ids[i]], ok)
    if not ok:
        arm.perceive(agent=task.agent, task=task.id, session=task.id, kind="feedback", speaker=user.name,
                     text=user.complains if task.round < world.preference_round or not user.changes else user.changes,
                     polarity=-1.0, signal="explicit")


# ---------------------------------------------------------------- the table

ARMS = ("no memory", "naive RAG", "hindbrain")


def compare(world: World, embedder: str | None = None, progress=None) -> dict[str, Score]:
    """The world through the three arms, hindbrain in a fresh embedded brain opened with default
    arguments (``embedder`` only if given)."""
    from hindbrain import Brain

    out = {"no memory": run(world, NoMemory(), progress), "naive RAG": run(world, NaiveRag(), progress)}
    with tempfile.TemporaryDirectory(prefix="hindbrain-third-") as home:
        kwargs = {"embedder": embedder} if embedder else {}
        with Brain.open(home, **kwargs) as brain:
            out["hindbrain"] = run(world, Hindbrain(brain), progress)
    return out


def report(seeds: list[int], rounds: int = 40, embedder: str | None = None, progress=None) -> list[str]:
    """Per metric, each arm's median over the seeds [min-max], as printable lines."""
    per_seed = [compare(third_world(s, rounds), embedder, progress) for s in seeds]
    lines = [f"third world (blind, design.md §issue-29): {len(AGENTS)} agents, {rounds} rounds, seeds "
             f"{', '.join(map(str, seeds))}: median [min-max]",
             f"{'':>32}" + "".join(f"{a:>22}" for a in ARMS)]
    for metric in Score().metrics():
        cells = []
        for arm in ARMS:
            vals = [v for runs in per_seed if (v := runs[arm].metrics()[metric]) is not None]
            cells.append("-" if not vals else fmt(metric, statistics.median(vals)) + (
                f" [{fmt(metric, min(vals))}-{fmt(metric, max(vals))}]" if len(vals) > 1 else ""))
        lines.append(f"{metric:>32}" + "".join(f"{c:>22}" for c in cells))
    sizes = {arm: per_seed[0][arm] for arm in ARMS}
    lines.append("per arm, seed " + str(seeds[0]) + ": " + "; ".join(
        f"{arm}: {sc.tasks} tasks, {sc.attempts_known_bad} decisions with a known mistake, {sc.lookalike_first} "
        f"look-alike first contacts, {sc.env_chances} env chances, {sc.after_change} answers after the change"
        for arm, sc in sizes.items()))
    shares = [runs["hindbrain"].metrics()["tokens per success"] / runs["naive RAG"].metrics()["tokens per success"]
              for runs in per_seed if runs["naive RAG"].metrics()["tokens per success"]
              and runs["hindbrain"].metrics()["tokens per success"] is not None]
    if shares:
        lines.append(f"hindbrain tokens per success / naive RAG's: median {statistics.median(shares):.0%} "
                     f"[{min(shares):.0%}-{max(shares):.0%}]")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--embedder", default=None, help="Brain.open(embedder=...); default: the product's default")
    args = ap.parse_args()
    t0 = time.perf_counter()
    print("\n".join(report([int(s) for s in args.seeds.split(",")], args.rounds, args.embedder)))
    print(f"({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
