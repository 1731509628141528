"""A third set of hard conversations (hard3), written from a brief alone, without reading the product.

    python bench/hard3conv.py --seed 0      # writes bench/data/hard3-en.json and bench/data/hard3-zh.json

Ten conversations a language (even ones tuning), two speakers each, 8-12 dated sessions of 12-20 turns of
small talk. Into them go "plots": the turns a question needs (evidence), near-miss turns built from the same
templates about another person or another time, and decoys that reuse the question's words without
answering it. Six categories, 14 questions a conversation:

* ``after``     who did X, and where did they go / what did they do later (two sessions, either speaker);
* ``change``    what changed between two sessions (the before turn and the after turn);
* ``described`` a person named only by a paraphrased deed, asked about an attribute told elsewhere;
* ``trait``     an inference from a trait told indirectly (1-2 turns);
* ``chain3``    deed -> relation -> the relative's attribute, three sessions;
* ``single``    a plain one-hop question in other words (the control).

Every evidence turn shares no content unit with its question (``content_units``: English stems without
function words, Chinese characters without function characters). The generator checks it for every question
and draws the plot again (other names, other template) when a draw collides; it raises if it cannot.
Stdlib only; the same seed gives the same files.
"""


import argparse
import json
import random
import re
import runpy
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data"
LANGS = ("en", "zh")
CONVERSATIONS = 10
PER_CONVERSATION = {"after": 3, "change": 2, "described": 2, "trait": 3, "chain3": 2, "single": 2}
DRAWS = 200  # a plot whose draws all collide with their question is a template bug: raise, never drop

# -- content units ---------------------------------------------------------------------------------------------
EN_FUNCTION = frozenset(re.findall(r"\S+", """a an the and or but if then so of to in on at for with from by about
into over after before up down out off as than that this these those there here what which who whom whose where when
why how is are was were be been being am do does did done have has had having i me my mine you your yours he him his
she her hers it its we us our they them their theirs one ones not no yes just too very really still also all any some
would could should will shall can may might must let lets ll re ve now ever"""))
# Grammatical characters only: a shared 的 or 了 is not shared content, a shared 车 or 家 is.
ZH_FUNCTION = frozenset("的了是在我你他她它们这那个有和也都就不吗呢吧啊呀么什怎哪谁一上下到去来说会要能把被对着过还很"
                        "太又再给让跟从为与而但所以如果之其些每几得地呗嘛哦嗯哈儿啦么着没别")


def stem(word: str) -> str:
    """A crude English stem: enough that "repaired" meets "repair", "bikes" "bike" and "running" "run"."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""), ("ly", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + keep
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]  # running -> runn -> run
    return word[:-1] if len(word) > 3 and word.endswith("e") else word  # bike, bikes -> bik


def content_units(text: str, lang: str) -> set[str]:
    """The units a question and its evidence must not share: stems of English content words, or Chinese
    content characters (and any Latin word inside Chinese text)."""
    words = {w for w in re.findall(r"[a-z0-9]+", text.lower().replace("'s ", " ").replace("’", "'"))
             if len(w) > 1 and w not in EN_FUNCTION}
    units = {stem(w) for w in words}
    if lang == "zh":
        units |= {c for c in text if "\u4e00" <= c <= "\u9fff" and c not in ZH_FUNCTION}
    return units


def shared_units(question: str, evidence: list[str], lang: str) -> set[str]:
    asked = content_units(question, lang)
    return set().union(*(asked & content_units(text, lang) for text in evidence))


# -- plots ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Line:
    """A turn a plot needs: in session ``session`` (an index), said by speaker 0 (A), 1 (B) or either (None)."""
    session: int
    speaker: int | None
    text: str
    evidence: bool = False


@dataclass(frozen=True)
class Plot:
    category: str
    question: str
    lines: tuple[Line, ...]

    def evidence_texts(self) -> list[str]:
        return [line.text for line in self.lines if line.evidence]


@dataclass
class Cast:
    """Who is in one conversation: the two speakers, the people questions are about (``others``, one question
    each) and the people of near misses, decoys and small talk (``extras``, never an answer's person, so a
    near miss never gives a question a second answer)."""
    speakers: tuple[str, str]
    others: list[str]
    extras: list[str]
    places: list[str]

    def people(self, rng: random.Random, n: int) -> list[str]:
        return rng.sample(self.extras, n)

    def leads(self, rng: random.Random, used: dict, n: int) -> list[str]:
        """People no other question of the conversation is about, so each answer names one person."""
        taken = used.setdefault("people", set())
        picks = rng.sample([name for name in self.others if name not in taken], n)
        taken.update(picks)
        return picks


def sessions_apart(rng: random.Random, sessions: int, n: int) -> list[int]:
    """``n`` distinct sessions in increasing order, spread anywhere in the conversation."""
    return sorted(rng.sample(range(sessions), n))


def elsewhere(rng: random.Random, sessions: int, avoid: set[int]) -> int:
    free = [s for s in range(sessions) if s not in avoid]
    return rng.choice(free or list(range(sessions)))


def fill(template: str, **slots: str) -> str:
    return template.format(**slots)


def after_plot(rng, data, cast, sessions, used) -> Plot:
    deed, other_deed = draw(rng, data["deeds"], used, "deeds", 2)
    (p,), (q,) = cast.leads(rng, used, 1), cast.people(rng, 1)
    a = cast.speakers[0]
    place, other_place = rng.sample(cast.places, 2)
    move, other_move = rng.sample(data["moves"], 2)
    s_deed, s_move = sessions_apart(rng, sessions, 2)
    question = fill(rng.choice(data["after_q"]), dq=fill(deed["q"], A=a))
    lines = (Line(s_deed, deed.get("by"), fill(deed["ev"], P=p, A=a), True),
             Line(s_move, None, fill(move, P=p, place=place), True),
             Line(elsewhere(rng, sessions, {s_deed}), other_deed.get("by"), fill(other_deed["ev"], P=q, A=a)),
             Line(elsewhere(rng, sessions, {s_move}), None, fill(other_move, P=q, place=other_place)),
             Line(rng.randrange(sessions), None, fill(rng.choice(data["after_decoys"]), dq=fill(deed["q"], A=a))))
    return Plot("after", question, lines)


def change_plot(rng, data, cast, sessions, used) -> Plot:
    (entry,) = draw(rng, data["changes"], used, "changes", 1)
    who = rng.randrange(2)
    x, (p,) = cast.speakers[who], cast.leads(rng, used, 1)
    s_before, s_after = sessions_apart(rng, sessions, 2)
    lines = (Line(s_before, who, fill(entry["before"], P=p), True),
             Line(s_after, who, fill(entry["after"], P=p), True),
             Line(elsewhere(rng, sessions, {s_before, s_after}), 1 - who, fill(entry["contrast"], P=p)),
             Line(rng.randrange(sessions), 1 - who, fill(entry["decoy"], X=x)))  # the decoy speaks to X
    return Plot("change", fill(rng.choice(entry["q"]), X=x), lines)


def attribute_lines(rng, data, person, rival, sessions, avoid, used):
    """The attribute question frame and two lines: the person's value (evidence) and another person's other
    value from the same template (the near miss)."""
    (attr,) = draw(rng, data["attributes"], used, "attributes", 1)
    value, other = rng.sample(attr["values"], 2)
    s = elsewhere(rng, sessions, avoid)
    return attr, s, (Line(s, None, fill(attr["ev"], P=person, v=value), True),
                     Line(elsewhere(rng, sessions, {s}), None, fill(attr["ev"], P=rival, v=other)))


def described_plot(rng, data, cast, sessions, used) -> Plot:
    desc, other_desc = draw(rng, data["descriptions"], used, "descriptions", 2)
    (p,), (q,) = cast.leads(rng, used, 1), cast.people(rng, 1)
    a = cast.speakers[0]
    s_desc = rng.randrange(sessions)
    attr, _, attr_lines = attribute_lines(rng, data, p, q, sessions, {s_desc}, used)
    who = fill(desc["q"], A=a)
    lines = (Line(s_desc, 0, fill(desc["ev"], P=p), True), *attr_lines,
             Line(elsewhere(rng, sessions, {s_desc}), 0, fill(other_desc["ev"], P=q)))
    return Plot("described", fill(rng.choice(attr["q"]), who=who), lines)


def chain3_plot(rng, data, cast, sessions, used) -> Plot:
    deed, other_deed = draw(rng, data["deeds"], used, "deeds", 2)
    relation, other_relation = draw(rng, data["relations"], used, "relations", 2)
    (p, r), (q, q2) = cast.leads(rng, used, 2), cast.people(rng, 2)
    a = cast.speakers[0]
    s_deed, s_rel, s_attr = rng.sample(range(sessions), 3)  # the three hops in any order of sessions
    attr, _, attr_lines = attribute_lines(rng, data, r, p, sessions, {s_deed, s_rel}, used)
    attr_lines = (Line(s_attr, None, attr_lines[0].text, True), attr_lines[1])
    who = fill(rng.choice(data["chain_who"]), rel=relation["q"], dq=fill(deed["q"], A=a))
    lines = (Line(s_deed, deed.get("by"), fill(deed["ev"], P=p, A=a), True),
             Line(s_rel, None, fill(relation["ev"], P=p, R=r), True), *attr_lines,
             Line(elsewhere(rng, sessions, {s_rel}), None, fill(other_relation["ev"], P=q, R=q2)),
             Line(elsewhere(rng, sessions, {s_deed}), other_deed.get("by"), fill(other_deed["ev"], P=q, A=a)))
    return Plot("chain3", fill(rng.choice(attr["q"]), who=who), lines)


def trait_plot(rng, data, cast, sessions, used) -> Plot:
    (entry,) = draw(rng, data["traits"], used, "traits", 1)
    who = rng.randrange(2)
    x = cast.speakers[who]
    shown = entry["ev"][: rng.choice((1, 2))] if len(entry["ev"]) > 1 else entry["ev"]
    spots = sessions_apart(rng, sessions, len(shown))
    lines = (*(Line(s, who, text, True) for s, text in zip(spots, shown, strict=True)),
             Line(elsewhere(rng, sessions, set(spots)), 1 - who, entry["contrast"]),
             Line(rng.randrange(sessions), None, fill(entry["decoy"], O=cast.people(rng, 1)[0])))
    return Plot("trait", fill(rng.choice(entry["q"]), X=x), lines)


def single_plot(rng, data, cast, sessions, used) -> Plot:
    (entry,) = draw(rng, data["singles"], used, "singles", 1)
    who = rng.randrange(2)
    s = rng.randrange(sessions)
    lines = (Line(s, who, entry["ev"], True),
             Line(elsewhere(rng, sessions, {s}), 1 - who, fill(entry["contrast"], O=cast.people(rng, 1)[0])))
    return Plot("single", fill(rng.choice(entry["q"]), X=cast.speakers[who]), lines)


PLOTS = {"after": after_plot, "change": change_plot, "described": described_plot, "trait": trait_plot,
         "chain3": chain3_plot, "single": single_plot}


def draw(rng: random.Random, pool: list, used: dict, name: str, n: int) -> list:
    """``n`` entries of ``pool`` not yet used in this conversation: one deed, one change, one attribute … a
    conversation, so no question has two right answers."""
    taken = used.setdefault(name, set())
    fresh = [i for i in range(len(pool)) if i not in taken]
    picks = rng.sample(fresh, n)
    taken.update(picks)
    return [pool[i] for i in picks]


def checked_plot(rng, data, cast, sessions, category, used, lang) -> Plot:
    """A plot of ``category`` whose evidence shares no content unit with its question (drawn again if not)."""
    for _ in range(DRAWS):
        trial = {k: set(v) for k, v in used.items()}
        plot = PLOTS[category](rng, data, cast, sessions, trial)
        if not shared_units(plot.question, plot.evidence_texts(), lang):
            used.clear()
            used.update(trial)
            return plot
    raise ValueError(f"{lang} {category}: every draw shares a content unit with its evidence")


# -- conversations --------------------------------------------------------------------------------------------
def session_turns(rng, lines: list[Line], data: dict, cast: Cast, first: int) -> list[tuple]:
    """One session's (speaker, text, plot line or None) turns, speakers alternating from ``first``: a greeting
    opens it and a goodbye closes it, each plot line takes a free slot of its speaker in between, small talk
    fills the rest."""
    need = [sum(1 for ln in lines if ln.speaker == s) for s in (0, 1)]
    length = max(rng.randint(12, 20), 2 * max(need) + 3, len(lines) + 4)
    if length > 20:
        raise ValueError(f"a session needs {length} turns")
    speaker_at = [(first + i) % 2 for i in range(length)]
    free = list(range(1, length - 1))
    rng.shuffle(free)
    placed: dict[int, Line] = {}
    for line in sorted(lines, key=lambda ln: ln.speaker is None):
        slot = next(i for i in free if line.speaker is None or speaker_at[i] == line.speaker)
        free.remove(slot)
        placed[slot] = line
    talk = [rng.choice(data["closers"]), *rng.sample(data["filler"], length - 2 - len(placed)),
            rng.choice(data["openers"])]  # popped from the end: the opener first, the closer last
    return [(speaker_at[i], placed[i].text, placed[i]) if i in placed else
            (speaker_at[i], fill(talk.pop(), O=rng.choice(cast.extras), place=rng.choice(cast.places),
                                 B=cast.speakers[1 - speaker_at[i]]), None) for i in range(length)]


def conversation(rng: random.Random, data: dict, lang: str, n: int) -> dict:
    names = rng.sample(data["names"], 2 + 12 + 10)
    cast = Cast((names[0], names[1]), names[2:14], names[14:], rng.sample(data["places"], 8))
    sessions = rng.randint(8, 12)
    used: dict[str, set] = {}
    plots = []
    for category, count in PER_CONVERSATION.items():
        plots += [checked_plot(rng, data, cast, sessions, category, used, lang) for _ in range(count)]
    conv_id = f"hard3-{lang}-{n:02d}"
    day = datetime(2025, 1, 6, 0, 0) + timedelta(days=rng.randint(0, 120))
    out_sessions, ids = [], {}
    for s in range(sessions):
        day += timedelta(days=rng.randint(3, 21))
        lines = [line for plot in plots for line in plot.lines if line.session == s]
        turns = session_turns(rng, lines, data, cast, rng.randrange(2))
        sid = f"{conv_id}-s{s:02d}"
        out_turns = []
        for t, (speaker, text, line) in enumerate(turns):
            tid = f"{sid}-t{t:02d}"
            out_turns.append({"turn_id": tid, "speaker": cast.speakers[speaker], "text": text})
            if line is not None:
                ids[id(line)] = tid  # by identity: two plots may hold equal lines, each is its own turn
        stamp = day.replace(hour=rng.randint(8, 22), minute=rng.choice((0, 15, 30, 45)))
        out_sessions.append({"session_id": sid, "date": stamp.isoformat(), "turns": out_turns})
    questions = [{"qid": f"{conv_id}-q{k:02d}", "question": plot.question,
                  "evidence": [ids[id(line)] for line in plot.lines if line.evidence], "category": plot.category}
                 for k, plot in enumerate(plots)]
    return {"conv_id": conv_id, "tuning": n % 2 == 0, "sessions": out_sessions, "questions": questions}


def generate(lang: str, seed: int = 0) -> list[dict]:
    """The ten conversations of ``lang``: the same seed, the same conversations."""
    lines = runpy.run_path(str(Path(__file__).with_name("hard3_lines.py")))["LINES"]
    rng = random.Random(f"hard3-{lang}-{seed}")
    return [conversation(rng, lines[lang], lang, n) for n in range(CONVERSATIONS)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for lang in LANGS:
        doc = {"name": f"hard3-{lang}", "seed": args.seed, "conversations": generate(lang, args.seed)}
        path = args.out / f"hard3-{lang}.json"
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", "utf-8")
        print(path, sum(len(c["questions"]) for c in doc["conversations"]), "questions")


if __name__ == "__main__":
    main()
