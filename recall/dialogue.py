"""A recall query as users send it: a question, or the dialogue so far.

Agents often pass the conversation itself ("<Bart>: "I'm performing a magic trick!"" /
"Assistant: That's fantastic!" / ...) rather than a question. Embedding that whole block
dilutes the memory cue with the assistant's generic encouragement, and the last line alone
loses the topic (measured on MADial-Bench, docs/recall-quality.md). So a dialogue is split
into **views**:

* the user's turns joined — the conversation's topic (the assistant's turns are dropped);
* each of the user's most recent turns on its own — late interaction: a memory may answer
  one turn strongly ("I got full marks in maths" ↔ "the maths competition prize");

and the semantic channel scores a memory by the mean of its cosine to the joined view and its
best cosine to a single turn, the recent ones weighing most (``recall.engine``). The lexical
channel reads the user's turns and the speakers' names (a memory often names the person).

Several untagged lines (the user's turns pasted without names) are views the same way, each
line a turn. A single line is one view: itself.

How *associative* a query is decides how the fusion weighs the channels
(``associative_share``): a tagged dialogue is, and so is any long query (a description, the
turns pasted as text: its words are mostly context, its memory is a feeling or a kind of
event); a short question is not (its few words carry it). Pure functions, no IO.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_TURN_VIEWS = 4  # the user's most recent turns embedded on their own: each one costs an embedding
# Who the assistant is, when a dialogue tags it (the other speakers are the user's side).
ASSISTANT_NAMES = frozenset({
    "assistant", "ai", "bot", "agent", "model", "gpt", "chatgpt", "claude", "助手", "助理", "机器人", "系统",
    "客服", "小助手", "ai助手",
})
# "<Bart>: hi", "Bart: hi", "[Bart] hi", "**Bart**: hi", "User：你好"; a tag is a short name, not a sentence.
_TAGGED = re.compile(r"^\s*(?:<([^<>\n]{1,32})>|\[([^\[\]\n]{1,32})\]|\*\*([^*\n]{1,32})\*\*|"
                     r"([^\s:：<>\[\]\"“”][^:：<>\[\]\n\"“”]{0,31}?))\s*[:：]\s*(.*)$")
# Markup around turns: dialogue delimiters and common HTML (a "<Bart>" tag is a speaker, not markup).
_MARKUP = re.compile(r"<(?:BOD|EOD|BOS|EOS|s|/s)>|</?(?:br|p|div|span|b|i|em|strong|u|code|pre|li|ul|ol|blockquote)"
                     r"(?:\s[^<>]*)?/?>", re.IGNORECASE)
_QUOTES = "\"'“”‘’「」『』"
_RELATIVE_WEIGHT = 0.5  # each older user turn counts half as much as the next one


@dataclass(frozen=True)
class Turn:
    speaker: str | None
    text: str


@dataclass(frozen=True)
class QueryViews:
    form: str  # "dialogue" (tagged turns) | "lines" (several untagged lines) | "text"
    joined: str  # the text to embed as a whole: the user's turns, or the query itself
    turns: tuple[str, ...]  # the user's most recent turns (oldest first), each a view of its own
    lexical: str  # what the lexical channel reads
    speakers: tuple[str, ...]  # the user-side speakers' names, as tagged
    cue: str  # what e5 reads of a dialogue (``recall.e5_dialogue``): ``e5_cue``; a text's last line

    @property
    def texts(self) -> list[str]:
        """Every view to embed: the joined text, then the turns (none for a plain query)."""
        return [self.joined, *self.turns]

    def turn_weights(self) -> list[float]:
        """Weights of ``turns`` (oldest first) for the best-turn score: recent turns weigh most."""
        n = len(self.turns)
        return [_RELATIVE_WEIGHT ** (n - 1 - i) for i in range(n)]


def parse_turns(text: str) -> list[Turn]:
    """The dialogue's turns. A line without a tag continues the previous turn."""
    turns: list[Turn] = []
    for raw in _MARKUP.sub("\n", text).split("\n"):
        line = raw.strip()
        if not line:
            continue
        match = _TAGGED.match(line)
        speaker = next((g for g in match.groups()[:4] if g), None) if match else None
        if speaker is not None and _plausible_name(speaker):
            turns.append(Turn(speaker.strip(), _unquote(match.group(5))))
        elif turns:
            turns[-1] = Turn(turns[-1].speaker, f"{turns[-1].text} {_unquote(line)}".strip())
        else:
            turns.append(Turn(None, _unquote(line)))
    return [t for t in turns if t.text]


def _plausible_name(tag: str) -> bool:
    """A speaker tag is a name (a few words), not a clause that happens to precede a colon
    ("The reason is: ..." or "error: 403")."""
    words = tag.split()
    return 0 < len(words) <= 3 and not any(ch.isdigit() for ch in tag) and tag.strip().lower() not in _NOT_SPEAKERS


_NOT_SPEAKERS = frozenset({"error", "warning", "note", "reason", "question", "answer", "q", "a", "http", "https",
                           "system", "expected", "actual", "action", "identity", "url", "ps", "todo", "example",
                           "问题", "答案", "原因", "错误", "注意"})


def _unquote(text: str) -> str:
    return text.strip().strip(_QUOTES).strip()


SHORT_QUERY, LONG_QUERY = 16, 40  # word tokens (CJK: bigrams); between them the share rises linearly


def associative_share(form: str, word_tokens: int) -> float:
    """0 for a short question, 1 for a dialogue or a long query (see the module docstring).
    Chosen on the quality harness's tuning halves: questions there have 5-17 tokens (10th-90th
    percentile), MADial's dialogues 36-80 with or without their speaker tags."""
    if form == "dialogue":
        return 1.0
    return min(1.0, max(0.0, (word_tokens - SHORT_QUERY) / (LONG_QUERY - SHORT_QUERY)))


def is_assistant(speaker: str | None) -> bool:
    return speaker is not None and speaker.strip().lower() in ASSISTANT_NAMES


def e5_cue(turns: list[Turn]) -> str:
    """The user's last turn after the assistant's turn it answers, as one text (the user's last turn
    alone when no assistant spoke before it): what e5 reads of a dialogue. The assistant's question
    says what the user's reply is about ("What should you wear?" / "The red one!"); its older turns,
    and the user's, read worse (docs/recall-quality.md, MADial round nineteen: R@5 on the tuning
    halves 69.9 / 75.8 zh / en at e5's weight 3 against the last user turn alone's 68.1 / 71.8; the
    last two user turns, mean or max of their cosines, and the last two turns as two vectors read
    lower; held-out the gain is small, 64.6 / 62.2 against 64.6 / 61.8)."""
    at = max((n for n, t in enumerate(turns) if not is_assistant(t.speaker)), default=len(turns) - 1)
    asked = [t.text for t in turns[:at] if is_assistant(t.speaker)][-1:]
    return " ".join([*asked, turns[at].text])


def views(text: str) -> QueryViews:
    """Split a query into its views (see the module docstring)."""
    turns = parse_turns(text)
    tagged = [t for t in turns if t.speaker is not None]
    if len(tagged) < 2:
        lines = [line.strip() for line in _MARKUP.sub("\n", text).split("\n") if line.strip()]
        if len(lines) < 2:
            return QueryViews("text", text, (), text, (), text)
        # Several untagged lines (the user's turns pasted without names, a log): each line is a view.
        return QueryViews("lines", "\n".join(lines), tuple(lines[-MAX_TURN_VIEWS:]), text, (), lines[-1])
    user = [t for t in turns if not is_assistant(t.speaker)] or turns
    speakers = tuple(dict.fromkeys(t.speaker for t in user if t.speaker))
    user_texts = [t.text for t in user]
    joined = "\n".join(user_texts)
    recent = tuple(user_texts[-MAX_TURN_VIEWS:]) if len(user_texts) > 1 else ()
    lexical = " ".join([*speakers, joined])
    return QueryViews("dialogue", joined, recent, lexical, speakers, e5_cue(turns))
