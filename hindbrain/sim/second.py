"""A second, independent fleet world, written from the public SDK only (no product internals).

Six agents meet seven systems (four English, three Chinese) whose working option is hidden:
the naive first guess fails with a system-specific symptom. One system's working option
changes at 60 % of the run; two look-alike systems appear late (transfer). Users state answer
preferences, one changes hers. A ticket desk of plain-text tickets, some angry, is judged by a
hidden rule the agents never see: angry customers are satisfied far more often when the reply
first empathizes. Three arms run the same schedule with the same agent policy.

    python -m hindbrain.sim.second --seeds 1,2,3,4,5
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
from dataclasses import dataclass, replace

AGENTS = ("ada", "bo", "chen", "dara", "li-wei", "mo")
APOLOGIZE_BY_HABIT = ("chen", "mo")  # these two open every ticket reply with an apology, in every arm


@dataclass(frozen=True)
class System:
    name: str
    task: str
    options: tuple[str, ...]  # options[0] is the naive first guess; the tuple is the fixed fallback order
    works: int
    symptoms: tuple[str | None, ...]  # per option; None for the working one
    works_after: int | None = None  # the environment changed: this option works from then on
    old_symptom: str = ""  # what the old working option answers after the change
    like: str | None = None  # the earlier system this look-alike copies

    def working(self, version: int) -> str:
        return self.options[self.works_after if version == 2 else self.works]

    def symptom(self, option: str, version: int) -> str:
        i = self.options.index(option)
        return self.old_symptom if version == 2 and i == self.works else self.symptoms[i]


BASE = (
    System("Billing portal", "issue a refund",
           ("retry the refund", "split the refund", "use the finance role", "clear the browser cache"), 2,
           ("Refund rejected: error R-17, amount above your approval limit",
            "Refund rejected: error R-22, partial refunds are disabled for this order", None,
            "Refund rejected again after reload: error R-17")),
    System("VPN gateway", "connect to the staging network",
           ("restart the client", "use the TCP profile", "renew the certificate", "switch to the backup endpoint"), 2,
           ("Connection failed: TLS handshake timed out", "Connection failed on port 443: TLS handshake timed out",
            None, "Connection refused: the backup endpoint carries no staging traffic"),
           works_after=3, old_symptom="Certificate renewed, but the tunnel was refused: gateway eu-1 is retired"),
    System("Data warehouse", "export the quarterly report",
           ("run the export again", "request a larger quota", "use the read replica", "export month by month"), 3,
           ("Export failed: query exceeded the 30 minute limit", "Quota raised, export failed: still over 30 minutes",
            "Export rejected: replica totals are 3 days stale", None)),
    System("CRM sync", "sync customer contacts",
           ("retry the sync", "reduce the batch size", "reauthorize the connector"), 2,
           ("Sync failed: 401 token expired", "Sync failed at batch 1 of 40: 401 token expired", None)),
    System("工单系统", "关闭工单", ("刷新页面", "清除浏览器缓存", "切换到二线主管账号", "先填写解决方案"), 2,
           ("关闭失败：您无权关闭该工单（错误码 403）", "关闭失败：仍提示无权操作（错误码 403）", None,
            "解决方案已保存，但关闭失败：权限不足")),
    System("报销系统", "提交报销单", ("重新提交", "上传发票原件照片", "拆分发票", "改选费用类别"), 1,
           ("提交失败：发票校验未通过", None, "提交失败：拆分后的发票仍未通过校验", "提交失败：费用类别与发票不符")),
    System("权限平台", "开通数据库权限", ("重新申请", "选择只读角色", "填写项目编号"), 2,
           ("申请被拒绝：审批流无法路由（错误 E-12）", "申请被拒绝：只读角色同样无法路由（错误 E-12）", None)),
)
LOOKALIKES = (replace(BASE[0], name="Invoicing portal", like="Billing portal"),
              replace(BASE[4], name="售后工单系统", like="工单系统"))
SYSTEMS = {s.name: s for s in (*BASE, *LOOKALIKES)}

# answer styles a user can ask for, and the words that name them (latin words on word boundaries)
STYLES = {"bullet points": r"\bbullet[- ]?points?\b|要点列表", "plain paragraphs": r"\bparagraphs?\b|段落",
          "table": r"\btables?\b|表格", "numbered steps": r"\bnumbered steps?\b|编号步骤"}
USERS = {  # user: (round of the first statement as a share of the run, statement, question)
    "Priya": (0.0, "Please always answer me in bullet points.", "How do I rotate my API key?"),
    "张伟": (0.0, "以后请都用表格回答我，谢谢。", "怎么导出上个月的账单？"),
    "Lena": (0.1, "From now on, give me numbered steps please, they are easier to follow.",
             "How can I add a teammate to our workspace?"),
}
PREFERENCE_CHANGE = ("Priya", "Actually, no more bullet points for me: write short plain paragraphs from now on.",
                     "plain paragraphs")
FIRST_STYLE = {"Priya": "bullet points", "张伟": "table", "Lena": "numbered steps"}

ISSUES = (  # (issue phrase, fix) in English and Chinese
    ("the API has been timing out", "the timeouts come from the eu-2 pool; we moved your key to eu-1."),
    ("my invoice shows the wrong amount", "a discount was missed; a corrected invoice is on its way."),
    ("I cannot log in after the password reset", "your old session blocked it; please sign in again now."),
    ("the export file is empty", "the filter excluded every row; the export now runs without it."),
    ("接口超时", "超时来自 eu-2 节点，已把您的密钥迁到 eu-1。"),
    ("发票金额不对", "漏算了折扣，更正后的发票马上发出。"),
    ("重置密码后无法登录", "旧会话挡住了登录，请现在重新登录。"),
)
ANGRY = ("This is unacceptable, {} all day.", "I'm furious: {} AGAIN, third time this week!",
         "用户很生气，{}", "太离谱了！{}，已经第三次了！")
CALM = ("Hi, {} - could you take a look?", "Quick question: {}.", "你好，{}，麻烦看一下。")
EMPATHY = re.compile(r"empathi[sz]e|acknowledge|安抚|先道歉", re.I)
NEGATION = re.compile(r"\b(?:not|don't|do not|never|no more|no longer|instead of|rather than|avoid|stop)\b"
                      r"|不要|别再|而不是|不再", re.I)
FAILURE = re.compile(r"fail|error|denied|rejected|refused|timed out|didn't work|did not work"
                     r"|失败|错误|报错|拒绝|无效", re.I)
CLAUSE = re.compile(r"[,.;!?\n，。；！？]")


def tokens(text: str) -> int:
    """The world's own token count, the same for every arm: a CJK character is one token, a latin word 1.3."""
    return math.ceil(len(re.findall(r"[\u4e00-\u9fff]", text)) + 1.3 * len(re.findall(r"[A-Za-z0-9]+", text)))


def _mentions(text: str, pattern: str) -> list[tuple[int, bool]]:
    """Where ``pattern`` occurs in ``text`` and whether its clause puts it down: a negation just
    before it, or a failure word after it, in the same clause."""
    out = []
    for m in re.finditer(pattern, text, re.I):
        start = max((c.end() for c in CLAUSE.finditer(text, 0, m.start())), default=0)
        end = next((c.start() for c in CLAUSE.finditer(text, m.end())), len(text))
        before, after = text[max(start, m.start() - 16):m.start()], text[m.end():end]
        out.append((m.start(), bool(NEGATION.search(before) or FAILURE.search(after))))
    return out


def _last_good(text: str, patterns: dict[str, str]) -> str | None:
    """What an item recommends, read as a careful person would: the last thing it names that
    no negation or failure report in its clause puts down; None if it names none."""
    good = [(pos, name) for name, pat in patterns.items() for pos, neg in _mentions(text, pat) if not neg]
    return max(good)[1] if good else None


def recommended(text: str, options) -> str | None:
    return _last_good(text, {o: re.escape(o) for o in options})


def asked_style(text: str) -> str | None:
    return _last_good(text, STYLES)


@dataclass
class Step:
    kind: str  # say | trap | pref | ticket
    sid: str
    agent: str
    round: int
    system: str = ""
    user: str = ""
    text: str = ""
    angry: bool = False
    u: float = 0.0  # the customer's hidden draw (common to every arm)
    fix: str = ""


class World:
    def __init__(self, seed: int, rounds: int = 10, traps_per_round: int = 24, tickets_per_round: int = 60):
        rng = random.Random(seed)
        self.seed, self.rounds = seed, rounds
        self.change_round = round(0.6 * rounds)
        self.late_round = max(1, round(0.7 * rounds))
        self.pref_change_round = max(1, rounds // 2)
        self.schedule: list[list[Step]] = []
        cycle: list[str] = []
        ids = iter(range(10 ** 9))
        for r in range(rounds):
            def sid(kind, r=r):
                return f"{kind}-{r}-{next(ids)}"
            said = [Step("say", sid("say"), rng.choice(AGENTS), r, user=u, text=t)
                    for u, (at, t, _) in USERS.items() if round(at * rounds) == r]
            if r == self.pref_change_round:
                said.append(Step("say", sid("say"), rng.choice(AGENTS), r, user=PREFERENCE_CHANGE[0],
                                 text=PREFERENCE_CHANGE[1]))
            body = []
            pool = [s.name for s in BASE] + ([s.name for s in LOOKALIKES] if r >= self.late_round else [])
            for _ in range(traps_per_round):
                if not cycle:
                    cycle = rng.sample(AGENTS, len(AGENTS))
                body.append(Step("trap", sid("trap"), cycle.pop(), r, system=rng.choice(pool)))
            for u, (at, _, q) in USERS.items():
                if round(at * rounds) <= r:
                    body += [Step("pref", sid("pref"), rng.choice(AGENTS), r, user=u, text=q) for _ in range(2)]
            for _ in range(tickets_per_round):
                issue, fix = rng.choice(ISSUES)
                chinese = bool(re.search(r"[\u4e00-\u9fff]", issue))
                angry = rng.random() < 0.4
                forms = [f for f in (ANGRY if angry else CALM) if bool(re.search(r"[\u4e00-\u9fff]", f)) == chinese]
                body.append(Step("ticket", sid("ticket"), rng.choice(AGENTS), r, text=rng.choice(forms).format(issue),
                                 angry=angry, u=rng.random(), fix=fix))
            rng.shuffle(body)
            self.schedule.append(said + body)

    def version(self, system: System, r: int) -> int:
        return 2 if system.works_after is not None and r >= self.change_round else 1

    def preference(self, user: str, r: int) -> str:
        if user == PREFERENCE_CHANGE[0] and r >= self.pref_change_round:
            return PREFERENCE_CHANGE[2]
        return FIRST_STYLE[user]


def satisfied(step: Step, empathized: bool) -> bool:
    """The desk's hidden rule."""
    return step.u < ((0.85 if empathized else 0.2) if step.angry else 0.85)


@dataclass(frozen=True)
class Injected:
    id: str
    text: str


class NoMemory:
    name, briefs = "no memory", False

    def recall(self, step: Step, **query) -> tuple[list[Injected], bool]:
        return [], False

    def perceive(self, step: Step, **fields) -> None: ...
    def outcome(self, step: Step, applied: list[str], success: bool, steps: int) -> None: ...
    def end_round(self) -> None: ...
    def close(self) -> None: ...


def _bag(text: str) -> Counter:
    low = text.lower()
    words = re.findall(r"[a-z0-9]+", low)
    for run in re.findall(r"[\u4e00-\u9fff]+", low):
        words += list(run) + [run[i:i + 2] for i in range(len(run) - 1)]
    return Counter(words)


class NaiveRag(NoMemory):
    """Every perceived text is stored (with its system, action and how it went); a recall injects
    the k texts most similar to the query by bag-of-words cosine. No gate, no feedback."""

    name = "naive RAG"

    def __init__(self, k: int = 5):
        self.k, self.texts, self.norms = k, [], []
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)

    def perceive(self, step: Step, **f) -> None:
        text = f.get("text") or ""
        if f.get("speaker"):
            text = f"{f['speaker']}: {text}"
        if f.get("system"):
            text += f" [{f['system']}: {f['action']} {'failed' if f.get('kind') == 'anomaly' else 'worked'}]"
        bag = _bag(text)
        for w, c in bag.items():
            self.postings[w].append((len(self.texts), c))
        self.texts.append(text)
        self.norms.append(math.sqrt(sum(c * c for c in bag.values())) or 1.0)

    def recall(self, step: Step, query: str = "", situation: dict | None = None, **_) -> tuple[list[Injected], bool]:
        bag = _bag(" ".join([query, *(situation or {}).values()]))
        scores: dict[int, float] = defaultdict(float)
        for w, qc in bag.items():
            for doc, c in self.postings.get(w, ()):
                scores[doc] += qc * c
        best = sorted(scores, key=lambda d: (-scores[d] / self.norms[d], d))[: self.k]
        return [Injected(f"doc{d}", self.texts[d]) for d in best], False


class HindbrainArm(NoMemory):
    """hindbrain through its public SDK, one tenant, agents by name, hindsight every night."""

    name, briefs = "hindbrain", True

    def __init__(self, home: str, tenant: str = "second-world"):
        from hindbrain import Brain

        self.brain, self.tenant, self.recall_ids = Brain.open(home, embedder="none"), tenant, {}

    def perceive(self, step: Step, **fields) -> None:
        self.brain.perceive(tenant=self.tenant, agent=step.agent, task=step.sid, **fields)

    def recall(self, step: Step, **query) -> tuple[list[Injected], bool]:
        pack = self.brain.recall(tenant=self.tenant, agent=step.agent, task=step.sid, **query)
        self.recall_ids[step.sid] = pack.recall_id
        return [Injected(i.id, i.text) for i in (*pack.briefing, *pack.items)], bool(pack.briefing)

    def outcome(self, step: Step, applied: list[str], success: bool, steps: int) -> None:
        self.brain.outcome(tenant=self.tenant, agent=step.agent, task=step.sid, recall_id=self.recall_ids.get(step.sid),
                           applied=applied, success=success, steps=steps)

    def end_round(self) -> None:
        self.brain.hindsight()

    def close(self) -> None:
        self.brain.close()


ANSWERS = {"bullet points": "• Open Settings\n• Pick the item\n• Confirm", "table": "| 步骤 | 说明 |\n| 1 | 打开设置 |",
           "numbered steps": "1. Open Settings\n2. Pick the item\n3. Confirm",
           "plain paragraphs": "Open Settings, pick the item and confirm.",
           "free text": "Sure! Open Settings, pick the item, confirm; there is a lot more background I can give."}


def run_arm(world: World, arm) -> dict[str, float | None]:
    c = Counter()
    solved_by: dict[tuple[str, int], set[str]] = defaultdict(set)
    met: set[tuple[str, str]] = set()
    last_third, n_tickets = sum(s.kind == "ticket" for st in world.schedule for s in st) * 2 / 3, 0
    for r, steps in enumerate(world.schedule):
        for st in steps:
            if st.kind == "say":
                arm.perceive(st, kind="message", speaker=st.user, session=st.sid, text=st.text)
            elif st.kind == "trap":
                _trap(world, arm, st, c, solved_by, met)
            elif st.kind == "pref":
                arm.perceive(st, kind="message", speaker=st.user, session=st.sid, text=st.text)
                inj, _ = arm.recall(st, query=f"answer {st.user}'s question", user=st.user, trigger="task_start")
                c["tokens"] += sum(tokens(i.text) for i in inj)
                used = next(((i, s) for i in inj if (s := asked_style(i.text))), (None, "free text"))
                obeyed = used[1] == world.preference(st.user, r)
                arm.perceive(st, kind="message", speaker=st.agent, session=st.sid, text=ANSWERS[used[1]])
                reaction = "Thanks, that is how I like it." if obeyed else "That is not how I asked you to answer."
                arm.perceive(st, kind="feedback", polarity=1.0 if obeyed else -1.0, signal="explicit",
                             speaker=st.user, session=st.sid, text=reaction)
                arm.outcome(st, [used[0].id] if used[0] else [], obeyed, 1)
                c["pref"] += 1
                c["pref ok"] += obeyed
                c["success"] += obeyed
                if st.user == PREFERENCE_CHANGE[0] and r >= world.pref_change_round:
                    c["changed"] += 1
                    c["changed ok"] += obeyed
            else:
                n_tickets += 1
                arm.perceive(st, kind="message", speaker="user", session=st.sid, text=st.text)
                inj, briefed = arm.recall(st, query=st.text, trigger="task_start")
                c["tokens"] += sum(tokens(i.text) for i in inj)
                c["briefed"] += briefed
                told = [i.id for i in inj if EMPATHY.search(i.text)]
                empathize = bool(told) or st.agent in APOLOGIZE_BY_HABIT
                zh = bool(re.search(r"[\u4e00-\u9fff]", st.text))
                sorry = ("非常抱歉给您带来困扰，我理解您的心情。" if zh else
                         "I'm really sorry about this, I understand how frustrating it is. ") if empathize else ""
                arm.perceive(st, kind="message", speaker=st.agent, session=st.sid, text=sorry + st.fix)
                ok = satisfied(st, empathize)
                thanks = ("谢谢，问题解决了。" if ok else "不满意这个答复。") if zh else \
                    ("Thanks, that sorted it." if ok else "Not satisfied with this reply.")
                arm.perceive(st, kind="feedback", polarity=1.0 if ok else -1.0, signal="explicit", speaker="user",
                             session=st.sid, text=thanks)
                arm.outcome(st, told[:1] if told else [], ok, 1)
                c["success"] += ok
                if st.angry and n_tickets > last_third:
                    c["angry"] += 1
                    c["angry ok"] += ok
        arm.end_round()

    def share(a, b):
        return c[a] / c[b] if c[b] else None

    return {"repeated mistakes (per agent)": share("agent rep", "agent known"),
            "repeated mistakes (fleet)": share("fleet rep", "fleet known"),
            "old rule first after change": float(c["old first"]),
            "tokens per success": share("tokens", "success"),
            "preference obeyed": share("pref ok", "pref"),
            "changed preference obeyed next task": share("changed ok", "changed"),
            "transfer": share("transfer ok", "transfer"),
            "angry tickets satisfied": share("angry ok", "angry"),
            "tickets briefed a belief": float(c["briefed"]) if arm.briefs else None}


def _trap(world: World, arm, st: Step, c: Counter, solved_by, met) -> None:
    system = SYSTEMS[st.system]
    v = world.version(system, st.round)
    good, key = system.working(v), (system.name, v)
    inj, _ = arm.recall(st, situation={"system": system.name, "action": system.task}, trigger="task_start")
    c["tokens"] += sum(tokens(i.text) for i in inj)
    named = [(i, o) for i in inj if (o := recommended(i.text, system.options))]
    first = named[0][1] if named else system.options[0]
    applied = [i.id for i, o in named if o == first]
    tried, success = [], False
    for option in dict.fromkeys([first, *(o for _, o in named), *system.options]):
        if len(tried) == 4:
            break
        tried.append(option)
        if option == good:
            done = f"{option}，{system.task}成功" if re.search(r"[\u4e00-\u9fff]", option) else \
                f"{option} worked on {system.name}: {system.task} done"
            arm.perceive(st, kind="action", system=system.name, action=option, success=True, text=done)
            success = True
            break
        symptom = system.symptom(option, v)
        arm.perceive(st, kind="anomaly", system=system.name, action=option, text=symptom, actual=symptom)
    arm.outcome(st, applied, success, len(tried))
    for who, known in (("fleet", bool(solved_by[key])), ("agent", st.agent in solved_by[key])):
        c[f"{who} known"] += known
        c[f"{who} rep"] += known and first != good
    if success:
        c["success"] += 1
        solved_by[key].add(st.agent)
    if v == 2 and first == system.options[system.works]:
        c["old first"] += 1
    if system.like and (st.agent, system.name) not in met:  # each agent's first contact with a look-alike
        met.add((st.agent, system.name))
        c["transfer"] += 1
        c["transfer ok"] += first == good


def run_second(seed: int = 1, rounds: int = 10, **world_kw) -> dict[str, dict[str, float | None]]:
    world, out = World(seed, rounds, **world_kw), {}
    with tempfile.TemporaryDirectory(prefix="hindbrain-second-") as home:
        for arm in (NoMemory(), NaiveRag(), HindbrainArm(home)):
            try:
                out[arm.name] = run_arm(world, arm)
            finally:
                arm.close()
    hb, naive = out["hindbrain"]["tokens per success"], out["naive RAG"]["tokens per success"]
    out["hindbrain"]["tokens vs naive"] = hb / naive if hb is not None and naive else None
    return out


TARGETS = {"repeated mistakes (fleet)": "≤ 5 %", "old rule first after change": "≤ 2", "tokens vs naive": "≤ 30 %",
           "changed preference obeyed next task": "≥ 95 %", "tickets briefed a belief": "> 0"}
COUNTS = ("old rule first after change", "tickets briefed a belief", "tokens per success")


def _cell(metric: str, values: list) -> str:
    values = [v for v in values if v is not None]
    fmt = "{:.1f}" if metric in COUNTS else "{:.0%}"
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}-{fmt.format(max(values))}]" \
        if values else "-"


def report(seeds: list[int], rounds: int = 10, progress=print) -> list[str]:
    """The second world's table over ``seeds``: per metric and arm the median [min-max], and the target."""
    runs = []
    for seed in seeds:
        t = time.perf_counter()
        runs.append(run_second(seed, rounds))
        progress(f"seed {seed}: {time.perf_counter() - t:.1f} s")
    arms, metrics = list(runs[0]), list(runs[0]["hindbrain"])
    rows = [["metric", *arms, "target"]] + [
        [m, *(_cell(m, [run[a].get(m) for run in runs]) for a in arms), TARGETS.get(m, "")] for m in metrics]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [f"second world, seeds {','.join(map(str, seeds))}, {rounds} rounds: median [min-max]"] + [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args(argv)
    print("\n".join(report([int(s) for s in args.seeds.split(",")], args.rounds, lambda m: print(m, flush=True))))


if __name__ == "__main__":
    main()
