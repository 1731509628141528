"""A LangGraph agent whose long-term memory is a brain (``hindbrain.integrations.langgraph``).

Each turn runs a small ``StateGraph``: ``remember`` stores a preference the user states (a put:
a new version of the key ``language``; the old one stays in the log), ``recall`` searches the
store before the step (a hindbrain recall, with its explanation), ``answer`` is the step (a
deterministic stand-in for the model: the LLM call is the only part left out), and ``report``
tells hindbrain how it went, crediting the memories the answer applied. bob asks for French,
then changes his mind; alice never said anything, and bob's memory is personal to him.

    pip install 'hindbrain[langgraph]'
    python examples/langgraph_agent.py [BRAIN_DIR]
"""

from __future__ import annotations

import re
import sys
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from hindbrain import Brain
from hindbrain.integrations.langgraph import HindbrainStore

TENANT, AGENT = "acme", "support-bot"
GREETING = {"English": "Our desk is open 9:00-17:00.", "French": "Notre guichet est ouvert de 9h à 17h.",
            "German": "Unser Schalter ist von 9 bis 17 Uhr geöffnet."}
WISHES = {"bob": ["French", "French", "English", "English"], "alice": ["English"]}  # what each turn wants
TURNS = [("bob", "From now on, please answer me in French."), ("bob", "When is your desk open?"),
         ("alice", "When is your desk open?"), ("bob", "Actually, answer me in English from now on."),
         ("bob", "When is your desk open?")]
_STATED = re.compile(r"answer me in (\w+)", re.IGNORECASE)


class Turn(TypedDict, total=False):
    user: str
    request: str
    wanted: str  # the language the user wants this turn (the world, not known to the agent)
    memories: list[dict]  # what the search brought back: key, text, memory id, score, gate decision
    recall_id: str
    answer: str
    applied: list[str]
    success: bool


def namespace(user: str) -> tuple[str, str, str]:
    return (TENANT, AGENT, user)


def remember(state: Turn, runtime: Runtime) -> dict:
    """A stated preference becomes the live version of the user's ``language`` item."""
    stated = _STATED.search(state["request"])
    if stated:
        runtime.store.put(namespace(state["user"]), "language",
                          {"text": f"{state['user']} wants answers in {stated.group(1).capitalize()}"})
    return {}


def recall(state: Turn, runtime: Runtime) -> dict:
    """Before the step: what the store holds about how to answer this user."""
    found = runtime.store.search(namespace(state["user"]), query=f"how {state['user']} wants answers: "
                                                                 f"{state['request']}", limit=3)
    memories = [{"key": i.key, "text": i.value.get("text", ""), "memory_id": i.memory_id, "score": i.score,
                 "gate": i.why.get("gate", {})} for i in found]
    return {"memories": memories, "recall_id": found.recall_id}


def answer(state: Turn) -> dict:
    """The model's stand-in: answer in the language a recalled memory names, else English."""
    for memory in state["memories"]:
        language = next((name for name in GREETING if name in memory["text"]), None)
        if language:
            return {"answer": GREETING[language], "applied": [memory["memory_id"]]}
    return {"answer": GREETING["English"], "applied": []}


def report(state: Turn, runtime: Runtime) -> dict:
    """After the step: was it in the language the user wanted? Credit what the answer applied."""
    success = state["answer"] == GREETING[state["wanted"]]
    runtime.store.outcome(namespace(state["user"]), success=success, applied=state["applied"],
                          recall_id=state["recall_id"], steps=1)
    return {"success": success}


def build(store: HindbrainStore):
    graph = StateGraph(Turn)
    for node in (remember, recall, answer, report):
        graph.add_node(node.__name__, node)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", "answer")
    graph.add_edge("answer", "report")
    graph.add_edge("report", END)
    return graph.compile(store=store)


def run(brain: Brain) -> list[Turn]:
    """Every turn through the graph; prints what was recalled, the answer and the outcome."""
    agent, turns, wishes = build(HindbrainStore(brain)), [], {u: iter(w) for u, w in WISHES.items()}
    for user, request in TURNS:
        turn = agent.invoke({"user": user, "request": request, "wanted": next(wishes[user])})
        recalled = "; ".join(f"{m['key']}={m['text']!r} (score {m['score']:.2f})" for m in turn["memories"])
        print(f"{user}: {request}\n  recalled: {recalled or 'nothing'}  [{turn['recall_id']}]\n"
              f"  answer: {turn['answer']}  -> {'success' if turn['success'] else 'failure'}")
        turns.append(turn)
    return turns


if __name__ == "__main__":
    home = sys.argv[1] if len(sys.argv) > 1 else ".hindbrain-langgraph-example"
    with Brain.open(home) as brain:
        turns = run(brain)
        versions = brain.sql("SELECT count() AS n FROM events WHERE scope['store_key'] = 'language' "
                             "AND scope['user'] = 'bob'", tenant=TENANT)[0]["n"]
        credited = brain.sql("SELECT sum(applied) AS applied, sum(success) AS success FROM feedback", tenant=TENANT)[0]
    print(f"{sum(t['success'] for t in turns)} of {len(turns)} turns succeeded; bob's language item has "
          f"{versions} versions in the log (one live); memories applied {credited['applied']}×, "
          f"{credited['success']}× with success")
