"""The optional LLM extractor, over real HTTP against a local server that replays a
recorded chat-completions answer (``recorded/``): the only mock is the LLM itself."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from hindbrain import Brain
from hindbrain.learning.llm import ExtractorError, OpenAICompatibleExtractor

RECORDED = json.loads((Path(__file__).parent / "recorded" / "chat_completion_units.json").read_text())


@pytest.fixture
def llm():
    """A chat-completions endpoint: answers with ``server.answer`` (status, body), keeps requests."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            server.requests.append((self.path, dict(self.headers), json.loads(body)))
            status, answer = server.answer
            payload = json.dumps(answer).encode() if not isinstance(answer, bytes) else answer
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.requests, server.answer = [], (200, RECORDED)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def extractor(llm):
    return OpenAICompatibleExtractor(f"http://127.0.0.1:{llm.server_port}/v1", "gpt-4o-mini", api_key="sk-test")


def garbled_export(b):
    """A trajectory the rules cannot compress: no system, identity or action fields."""
    b.perceive(tenant="acme", task="t1", kind="anomaly", text="the PDF export shows boxes instead of Chinese text")
    b.perceive(tenant="acme", task="t1", kind="outcome", success=True,
               text="set the font to Noto Sans CJK and exported again: the Chinese text renders")


def test_the_extractor_proposes_units_that_pass_the_same_gate(tmp_path, llm):
    with Brain.open(tmp_path, embedder="none", extractor=extractor(llm)) as b:
        garbled_export(b)
        decisions = b.sql("SELECT kind, job, subject_ids, reason FROM decisions FINAL "
                          "WHERE kind IN ('unit_accepted', 'unit_rejected') ORDER BY _offset")
        units = b.sql("SELECT fragment_id, condition, event_ids, confidence FROM fragments FINAL ORDER BY _offset")
        pack = b.recall(tenant="acme", query="PDF export garbled Chinese characters")
    [(path, headers, body)] = llm.requests
    assert path == "/v1/chat/completions" and headers["Authorization"] == "Bearer sk-test"
    assert body["model"] == "gpt-4o-mini" and body["response_format"] == {"type": "json_object"}
    trajectory = json.loads(body["messages"][1]["content"])["trajectory"]
    assert [step["kind"] for step in trajectory] == ["anomaly", "outcome"]
    assert [(d["kind"], d["job"]) for d in decisions] == [("unit_accepted", "learner.extract"),
                                                          ("unit_rejected", "learner.extract")]
    assert "has_conditions" in decisions[1]["reason"]  # the model's "always: be careful" does not get in
    good = units[0]
    assert "garbled Chinese" in good["condition"] and len(good["event_ids"]) == 2
    assert good["confidence"] == 0.4  # a model's summary starts at the self-evaluation confidence
    assert pack.items[0].id == good["fragment_id"]


def test_rules_come_first_the_extractor_is_not_asked_when_a_rule_applies(tmp_path, llm):
    with Brain.open(tmp_path, embedder="none", extractor=extractor(llm)) as b:
        b.perceive(tenant="acme", task="t1", kind="anomaly", system="IAM", identity="normal account",
                   action="submit change", actual="no response")
        b.perceive(tenant="acme", task="t1", kind="outcome", system="IAM", identity="admin account",
                   action="submit change", success=True)
        assert len(b.sql("SELECT * FROM fragments FINAL")) == 1
    assert llm.requests == []


def test_an_extractor_failure_is_a_dead_letter_and_the_stream_goes_on(tmp_path, llm):
    llm.answer = (500, {"error": {"message": "overloaded"}})
    with Brain.open(tmp_path, embedder="none", extractor=extractor(llm)) as b:
        garbled_export(b)
        b.perceive(tenant="acme", kind="message", text="next event after the failure")
        [dead] = b.sql("SELECT stage, reason FROM dead_letters")
        assert dead["stage"] == "learn" and "HTTP 500" in dead["reason"]
        assert b.sql("SELECT count() AS n FROM events")[0]["n"] == 3  # nothing lost


def test_an_answer_that_is_not_the_schema_names_the_problem(llm):
    llm.answer = (200, {"choices": [{"message": {"content": "Sure! Here are some rules: ..."}}]})
    with pytest.raises(ExtractorError, match="not {'units'"):
        extractor(llm).extract([{"envelope": {"record_id": "ev_1"}, "kind": "anomaly", "text": "x"}])
