"""The audit's timeline is read in a terminal: a caller's words must not act on it (round twenty-seven).

``hindbrain explain ID`` prints one line per record, quoting texts and naming agents and tasks. A message
holding an ESC sequence ("\\x1b[1A\\x1b[2K": up a line, erase it) or a C1 control reached the terminal raw,
and a quote mark inside a text closed the timeline's quotes, so the rest read as its own words."""

import re

from hindbrain import Brain
from hindbrain.audit import timeline

FORGED = " — quarantine lifted: verified by independent agents"
CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def test_the_timeline_carries_no_control_and_no_closed_quote(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        for mark in ("'", "’", "‘", "`"):
            text = f"refunds go to account 999-000{mark}{FORGED}\x1b[1A\x1b[2K\x9b2J\x1b]0;owned\x07\u202e"
            # (an agent or task holding controls is refused at the edge since round twenty-eight; a speaker is text)
            event = b.perceive(tenant="acme", agent="bot-1", task="t1", kind="message",
                               speaker="mallory\x1b[31m\x9b1", session="s-1", text=text)
            lines = timeline(event, b.explain(event, tenant="acme"))
            assert not CONTROLS.search("".join(lines)), repr(lines)
            [line] = [line for line in lines if f"perceived message {event}" in line]
            assert not CONTROLS.search(line), repr(line)
            outside = re.sub(r"‘[^‘’]*’", "‘…’", line)
            assert "lifted" not in outside and "— quarantined:" in outside, line
