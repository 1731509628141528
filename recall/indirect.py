"""Questions whose words do not say what answers them (design.md §issue-30, round two, third pass).

Most questions name what they ask about, and the evidence repeats those words: "What did Leila
see in Lisbon?" meets "Leila: the tiles in Lisbon were …". Two forms do not:

* **inference** — "Would Priya enjoy a spa weekend?", "Why might Yuki turn down a late
  dinner?", "适合领养一只小猫吗？": the evidence *implies* the answer ("I'm putting every spare
  penny aside …") and shares no word with the question; turns that do share its words (an
  advert for spa weekends) are about something else;
* **a described person** — "the person who photographed Tom's wedding", "whoever painted the
  flat", "帮嘉诚带孩子的那个人": the question describes someone by an act instead of naming
  them, and the evidence names them ("Kofi took all the pictures when you got married").

For these the lexical channel finds the question's words and little else, so the fusion lowers
its weight and lets meaning lead (``recall.engine``). ``indirect`` is a pure function of the
question text: it reads the form (a modal of supposition, a relative clause on a person), not
the topic, so it holds for questions about anything.
"""

from __future__ import annotations

import re

# Supposition: a modal or an appraisal asked about someone ("would she enjoy", "is X likely to",
# "a good fit for", "X's kind of thing"); "would you like" / "could you" ask the assistant for
# something and are not inference.
_INFERENCE_EN = re.compile(
    r"\b(?:would|might|could|should)\b(?!\s+(?:you|u|i|we)\b)|\bwhy\b[^?]{0,40}\bso\b|"
    r"\b(?:likely|unlikely|probably|kind of thing|"
    r"cup of tea|good (?:fit|idea|choice|outing|gift|present|match)|suit(?:s|ed)? (?:him|her|them)|"
    r"enjoy|appeal to|be into|interested in|prefer|recommend|worth it|"
    r"(?:type|sort|kind) of (?:person|guy|woman|man))\b",
    re.IGNORECASE)
# A person described by a relative clause: "the (person|friend|...) who/that", "whoever", or a reduced
# one: "the person responsible for the cake", "the friend in charge of the music".
_REDUCED_EN = r"responsible\s+for|in\s+charge\s+of"
_DESCRIBED_EN = re.compile(
    r"\bwhoever\b|\b(?:the|a|that)\s+(?:\w+\s+)?(?:person|people|friend|one|guy|man|woman|someone|somebody|"
    r"colleague|coworker|co-worker|neighbou?r|relative|cousin|housemate|flatmate|roommate|classmate|"
    rf"teammate|partner|spouse|boss|acquaintance|individual|kid|girl|boy|lady)\s+(?:who|that|whom|{_REDUCED_EN})\b",
    re.IGNORECASE)
# 会喜欢 / 会不会 / 适合 / 可能 / 多半 / 愿不愿意 / 值得 / 合…胃口 / 起得来吗: supposition or appraisal; "会…吗" asks
# whether someone would. Not 大概 / 估计 alone: "大概什么时候" is "roughly when", a fact.
_INFERENCE_ZH = re.compile(r"会不会|多半|[得不][来了]吗|什么礼物|挑什么.{0,4}好|为什么(?:这么|那么|总是|老是)|"
                           r"会喜欢|会想|会愿意|愿不愿意|想不想|爱不爱|要不要|能不能|适合|合适|可能|应该会|值得|推荐|是否|"
                           r"吃得消|受得了|怎么样|"
                           r"合.{0,4}胃口|讨喜|喜不喜欢|会[^，。？?]{1,12}吗|为什么会|怎么会")
# "…的那个人" / "…的人的" / "…的朋友": a person named by what they did (a verb phrase before 的).
# "…的那位" / "…的那名" alone ("韩蕾外游期间打理绿植的那位从事什么职业？"): the measure word is for a
# person, so no noun need follow it.
# "…那人" / "…那位" / "…那个人" straight after the deed, no 的 between ("修好了漏雨的屋顶那人的上司", "把小猫从树上
# 救下来那位的兄弟姐妹"): the demonstrative alone closes the description (round thirty-three). After a clause's end
# ("谁修好了屋顶？那人之后去了哪里？") it points back to a person the question already asked about, and is not read.
_BARE_ZH = "(?:那个人|那人|那位|那名)"
_BARE_PERSON_ZH = rf"(?<=[\u4e00-\u9fff])(?<!的){_BARE_ZH}"
_DESCRIBED_ZH = re.compile(r"(?:的(?:那个|那位|那名)?(?:人|朋友|同事|邻居|亲戚|室友|家伙)|" + _BARE_PERSON_ZH + ")"
                           r"(?:的|[^\w]|$|是|会|现在|后来|最近|开始|在|做|去|搬|学|养|玩|喜欢)|的(?:那位|那名)")


def indirect(question: str) -> bool:
    """Whether ``question`` asks for an inference or about a person it only describes (see the
    module docstring). A dialogue is never passed here: its form is associative already."""
    if not question:
        return False
    return bool(_INFERENCE_EN.search(question) or _INFERENCE_ZH.search(question)) or describes_someone(question)


def describes_someone(question: str) -> bool:
    """Whether ``question`` asks about a person it only describes by what they did ("the friend
    who fixed Mei's bike", "whoever painted the flat", "给志强理发的那个人"): its answer lies in
    two turns, one saying who did it and one saying the thing asked about them, joined by the
    person's name (``recall.expand.best_pair``)."""
    return bool(question) and bool(_DESCRIBED_EN.search(question) or _DESCRIBED_ZH.search(question))


# Kinship and social roles: "the <role> of <a described person>" asks about a third person, whom
# a turn names as the described one's relative ("Kofi told me his flatmate, Callum, …").
_KIN_EN = (r"sibling|brother|sister|spouse|husband|wife|partner|boyfriend|girlfriend|fianc[eé]e?|housemate|"
           r"flatmate|roommate|boss|manager|colleague|co-?worker|friend|neighbou?r|cousin|mother|father|mum|"
           r"mom|dad|parent|son|daughter|child|kid|uncle|aunt|niece|nephew|grand(?:mother|father|ma|pa)")
# The roles of a person's teaching, lodging and work (round thirty-three): "the mentor of the one who baked …",
# "the landlord of whoever found …" ask through a relation as "the flatmate of …" does; before, such a question was
# read as about the described person alone, and its answer's third turn never sought.
_GUIDES_EN = (r"mentor|mentee|apprentice|teacher|tutor|coach|student|pupil|landlord|landlady|tenant|lodger|"
              r"employer|employee|supervisor|classmate|teammate|bandmate")
_ROLES_EN = f"{_KIN_EN}|{_GUIDES_EN}"
_RELATIVE_OF_EN = re.compile(rf"\b(?:{_ROLES_EN})s?\s+of\s+(?:{_DESCRIBED_EN.pattern})", re.IGNORECASE)
_KIN_ZH = ("配偶|妻子|丈夫|老公|老婆|爱人|兄弟姐妹|兄弟|姐妹|哥哥|姐姐|弟弟|妹妹|室友|合租伙伴|上司|老板|经理|同事|"
           "父亲|母亲|爸爸|妈妈|儿子|女儿|孩子|男朋友|女朋友|未婚夫|未婚妻|邻居|表哥|表姐|表弟|表妹|堂哥|堂姐|叔叔|阿姨|舅舅|"
           "另一半|伴侣|对象")
# as ``_GUIDES_EN``: teachers and pupils, landlords and lodgers, childhood and close friends, kin in general
_GUIDES_ZH = ("师父|师傅|导师|老师|徒弟|学徒|教练|房东|房客|租客|发小|闺蜜|好友|好朋友|死党|表亲|堂亲|同学|队友|领导|"
              "合伙人")
_ROLES_ZH = f"{_KIN_ZH}|{_GUIDES_ZH}"
# a turn that names someone's relation to another ("Joaquin's husband Soren", "国栋说他的老婆桂兰")
_ROLE = re.compile(rf"\b(?:{_ROLES_EN})s?\b|{_ROLES_ZH}", re.IGNORECASE)


def names_a_role(text: str) -> bool:
    """Whether ``text`` holds a word for a person's relation to another (a spouse, a flatmate, a
    colleague: the roles a question can ask through)."""
    return bool(_ROLE.search(text))


def role_before(text: str, name: str, roles: frozenset[str] | None = None) -> bool:
    """Whether ``text`` names ``name`` right after a role or kin word ("my older sister Lena", "my brother,
    Rohan", "我妹妹子涵"): the turn introducing that person by their relation to the speaker. ``roles``: only
    these role words (lower case, ``asked_roles``; None: any)."""
    if name.isascii():
        match = re.search(rf"\b({_ROLES_EN})s?\s*,?\s+{re.escape(name)}\b", text, re.IGNORECASE)
    else:
        match = re.search(rf"({_ROLES_ZH})[\s，,]*{re.escape(name)}", text)
    return match is not None and (roles is None or match.group(1).lower() in roles)


# a question asking through a relation: "Henry's brother", "her flatmate", "沈念的妹妹" (not "the friend who …",
# which describes someone by a deed)
_ASKS_ROLE = re.compile(rf"(?:'s|\b(?:his|her|their|my|your))\s+(?:\w+\s+)?({_ROLES_EN})s?\b|的({_ROLES_ZH})",
                        re.IGNORECASE)


def asked_roles(question: str) -> frozenset[str]:
    """The role words (lower case) ``question`` asks through: "brother" of "Which city does Henry's brother
    live in?", "妹妹" of "沈念的妹妹住在哪个城市？"; none of "the friend who photographed …", which describes
    someone by a deed."""
    if not question:
        return frozenset()
    return frozenset((m.group(1) or m.group(2)).lower() for m in _ASKS_ROLE.finditer(question))


# "…的那个人", "…的那位", "…那人" (``_BARE_PERSON_ZH``)
_PERSON_ZH = f"(?:的(?:(?:那个|那位|那名)?(?:人|朋友|同事|邻居|亲戚|室友|家伙)|那位|那名)|{_BARE_PERSON_ZH})"
_RELATIVE_OF_ZH = re.compile(rf"{_PERSON_ZH}的(?:{_ROLES_ZH})")


def describes_relative(question: str) -> bool:
    """Whether ``question`` asks about a relative or associate of a person it only describes ("the
    housemate of the person who fixed Mei's bike", "帮美玲修自行车的那个人的室友"): three turns, one
    saying who did the act, one naming that person's relative, one saying the thing asked about
    the relative, chained by two names (``recall.expand.best_chain``)."""
    return bool(question) and bool(_RELATIVE_OF_EN.search(question) or _RELATIVE_OF_ZH.search(question))


CLAUSE_VIEWS = True  # an A/B switch for bench/expand_ab.py
_RELATIVE_EN = re.compile(rf"\b(?:who|whoever|whom|that|{_REDUCED_EN})\b", re.IGNORECASE)
_RELATIVE_ZH = re.compile(_PERSON_ZH)


def described_clauses(question: str) -> tuple[str, ...]:
    """A described-person question cut where its description starts ("Which instrument does the
    person" | "who photographed Tom's wedding play?"; "开车送美玲去机场" | "的那个人开始玩什么运动？"):
    each part is a view of its own for the semantic channel, so the turn that says who did the
    act meets the act without the thing asked about diluting it, and the other way round.
    Empty when the question is not of that form."""
    if not CLAUSE_VIEWS or not describes_someone(question):
        return ()
    match = _RELATIVE_ZH.search(question) or _RELATIVE_EN.search(question)
    if match is None:
        return ()
    head, tail = question[: match.start()].strip(), question[match.start():].strip()
    return tuple(part for part in (head, tail) if part)


def description_part(clauses: tuple[str, ...]) -> int | None:
    """Which of ``described_clauses``' two parts is the description: the second in English ("who
    photographed Tom's wedding play?"), the first in Chinese, where the description comes before
    "的那个人" ("开车送美玲去机场"). None when the question was not cut in two."""
    if len(clauses) != 2:
        return None
    return 0 if _RELATIVE_ZH.match(clauses[1]) or re.match(_BARE_ZH, clauses[1]) else 1


IN_PERSON = True  # an A/B switch for bench/expand_ab.py


def in_person(text: str, participants) -> tuple[str, ...]:
    """``text`` as the conversation's own participants would say it: each participant it names
    (``participants``: the speakers of the turns at hand) read as "you" and, separately, as "I"
    ("who photographed Tom's wedding" → "who photographed your wedding" / "… my wedding";
    "开车送美玲去机场" → "开车送你去机场" / "开车送我去机场"). A chat's turns speak of their two
    people in the first and second person ("Kofi took all the pictures when you got married"),
    a question about them in the third. Empty when it names none."""
    if not IN_PERSON or not text:
        return ()
    named = [p for p in participants if p and (re.search(rf"\b{re.escape(p)}\b", text) if p.isascii() else p in text)]
    if not named:
        return ()
    out = []
    for whose, who in (("your", "you"), ("my", "me")):
        said = text
        for p in named:
            if p.isascii():
                said = re.sub(rf"\b{re.escape(p)}'s\b", whose, said)
                said = re.sub(rf"\b{re.escape(p)}\b", who, said)
            else:
                said = said.replace(p, "你" if who == "you" else "我")
        out.append(said)
    return tuple(out)


# A state at the time of an event: "Which city was Samuel living in when he went to a lantern festival?",
# "张伟去张家界那会儿住在哪座城市？". The head asks for a state (a home, a job) told in one turn; the clause names
# an event told in another, by the same person. A question that opens with "when" asks for a time, and
# "什么时候" likewise: neither is cut.
STATE_CLAUSES = True  # an A/B switch for bench/expand_ab.py
# "when" opening a question of its own ("Roughly when did …", "Around when was …") asks for a time
_AT_THE_TIME_EN = re.compile(r"^(?P<head>\S+\s.*?)\s+(?P<event>(?:when|while)\b"
                             r"(?!\s+(?:did|do|does|is|are|was|were|will|would|has|have|had|can|could|should)\b).+)$",
                             re.IGNORECASE | re.DOTALL)
_AT_THE_TIME_ZH = re.compile(r"^(?P<event>.+?)(?:的时候|那会儿|那时候)(?P<head>.+)$", re.DOTALL)


def state_clauses(question: str) -> tuple[str, str] | tuple[()]:
    """A question asking for a state at the time of an event cut in two, (head, event): ("Which city
    was Samuel living in", "when he went to a lantern festival?"), ("住在哪座城市？", "张伟去张家界").
    Empty when the question is not of that form (a described person's question is cut by
    ``described_clauses`` instead)."""
    if not STATE_CLAUSES or not question or describes_someone(question):
        return ()
    match = _AT_THE_TIME_EN.match(question.strip())
    if match is None and (match := _AT_THE_TIME_ZH.match(question.strip())) is not None \
            and match.group("event").endswith("什么"):
        match = None
    if match is None:
        return ()
    head, event = match.group("head").strip(" ，,"), match.group("event").strip(" ，,")
    said = re.sub(r"^(?:when|while)\b", "", event, flags=re.IGNORECASE)  # the event itself, not its conjunction
    return (head, event) if min(len(re.sub(r"\W", "", head)), len(re.sub(r"\W", "", said))) >= 2 else ()


# A question asking what became of someone afterwards ("Who organised the street party, and where did that
# person go afterwards?", "谁修好了漏雨的屋顶？那人之后去了哪里？"): the deed is told in one turn, the later move
# in a turn told after it, joined by the doer's name (``expand.later_links``). The words that ask for what came
# after, not a time ("when did …", "什么时候" ask for one, and are not read).
AFTERWARDS = True  # an A/B switch for bench/expand_ab.py (arm ``nolater``)
# "after that" alone, not "after that injury" (a determiner: the event named, no asking of what came after)
_AFTERWARDS_EN = re.compile(r"\b(?:later|afterwards?|after\s+that(?!\s+[^\W\d_])|next|end(?:ed)?\s+up|became\s+of|"
                            r"since\s+then)\b",
                            re.IGNORECASE)
_AFTERWARDS_ZH = re.compile(r"后来|之后|以后|接下来|再往后|如今|最终|落脚")
# "之后" / "以后" straight after a state that befell someone ("叶澜受伤之后在医院陪她的那位…", "生病以后"): the time of
# the state, as "after that injury" is, not an asking of what came after a deed (round thirty-three). Each a state
# of the body or of fortune, nobody's doing; "辞职之后" / "毕业以后" follow deeds and still ask what came after.
_STATE_ZH = re.compile(r"(?:受伤|负伤|生病|得病|病倒|住院|出院|骨折|扭伤|摔伤|烫伤|崴脚|感冒|发烧|中暑|过敏|手术|"
                       r"车祸|出事|怀孕|失眠|失恋|失业|下岗|破产)$")


def asks_afterwards(question: str) -> bool:
    """Whether ``question`` asks what someone did or where they went after something it tells of."""
    return AFTERWARDS and _afterwards_word(question) is not None


def _afterwards_word(question: str | None) -> re.Match | None:
    """The first words of ``question`` asking for what came after (``_AFTERWARDS_EN``, ``_AFTERWARDS_ZH``), but a
    Chinese one right after a state (``_STATE_ZH``); None when there are none."""
    if not question:
        return None
    if (match := _AFTERWARDS_EN.search(question)) is not None:
        return match
    return next((m for m in _AFTERWARDS_ZH.finditer(question)
                 if not (m.group(0) in ("之后", "以后") and _STATE_ZH.search(question, 0, m.start()))), None)


def after_clauses(question: str) -> tuple[str, str] | tuple[()]:
    """An afterwards question cut in two, (deed, later), at the last comma or question mark before the
    words asking for what came after: ("Who organised the street party", "and where did that person go
    afterwards?"), ("谁修好了漏雨的屋顶", "那人之后去了哪里？"). Empty when it does not ask that, or has no such
    cut ("What happened later to whoever painted the mural?" describes its person: ``described_clauses``)."""
    if not AFTERWARDS or (match := _afterwards_word(question)) is None:
        return ()
    cut = max(question.rfind(mark, 0, match.start()) for mark in ",，?？;；")
    deed, later = question[:cut].strip(), question[cut + 1:].strip()
    return (deed, later) if cut > 0 and min(len(re.sub(r"\W", "", deed)), len(re.sub(r"\W", "", later))) >= 2 else ()


# A question asking what changed for someone ("How has Priya's coffee habit changed?", "彭薇上班的方式前后有
# 什么变化？"): its answer is two of that person's turns on the subject told in different sessions, the before and
# the after ("Four espressos before lunch, that's me" / "Quit caffeine cold turkey, herbal tea only": no word shared).
CHANGE = True  # an A/B switch for bench/expand_ab.py (arm ``nochange``)
_CHANGE_EN = re.compile(r"\b(?:chang\w*|differ\w*|(?:than|like|as)\s+before|any\s?more|used\s+to|these\s+days)\b",
                        re.IGNORECASE)
_CHANGE_ZH = re.compile(r"变|前后|以前|之前|后来|换")
# "now" alone ("Does Mateo have a pet now?", "韩雪现在睡得怎么样？") asks of a state that may have changed, or of
# one that never did ("Where does Melanie live now?"): a change question only when the person told the subject
# twice, in two sessions (``expand.best_change``'s ``near``).
_NOW_EN = re.compile(r"\b(?:now|nowadays)\b", re.IGNORECASE)
_NOW_ZH = re.compile(r"如今|现在")


def asks_change(question: str) -> bool:
    """Whether ``question`` asks how something of someone's changed (or whether it still holds)."""
    return CHANGE and _says_any(question, _CHANGE_EN, _CHANGE_ZH)


def asks_now(question: str) -> bool:
    """Whether ``question`` asks of someone's state "now" (``_NOW_EN``, ``_NOW_ZH``): maybe a change."""
    return CHANGE and _says_any(question, _NOW_EN, _NOW_ZH)


def _says_any(question: str | None, *patterns: re.Pattern) -> bool:
    """Whether one of ``patterns`` (a language's words for the same ask) is found in ``question``."""
    return bool(question) and any(pattern.search(question) for pattern in patterns)


def without_person(text: str, person: str) -> str:
    """``text`` without ``person``'s name (and its possessive): among that person's own turns the name
    tells none apart, and a short turn embeds mostly as its speaker's name ("Sam: Haha, same here."
    was nearest "Which city was Sam living in")."""
    if not person:
        return text
    text = re.sub(rf"\b{re.escape(person)}(?:'s)?\b", "", text) if person.isascii() else text.replace(person, "")
    return re.sub(r"\s{2,}", " ", text).strip()
