"""The optional LLM ``Extractor`` (design.md §seed-001-2.3): a plug-in for the trajectories the
explainable rules cannot compress. Never required; hindbrain learns without it.

When a task succeeds after failures and no rule (``recovery/1``) yields a unit, the learner
hands the task's trajectory to the extractor. What it proposes goes through the same write
gate as every other proposal, at the *self-evaluation* confidence (0.4): a model's summary
is its own judgement, not evidence, so it starts lowest and must be verified by outcomes.

``OpenAICompatibleExtractor`` speaks the chat-completions protocol (OpenAI, vLLM, Ollama,
LiteLLM ... all serve it): ``POST {base_url}/chat/completions`` with a JSON-only answer
``{"units": [{"condition", "action", "reason", "evidence", "entities"}]}``.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Protocol

from hindbrain.learning.extract import Proposal

TRAJECTORY_FIELDS = ("kind", "text", "system", "identity", "action", "expected", "actual", "success", "scope")
PROMPT = (
    "You compress an AI agent's task trajectory into minimal actionable rules. Each rule says WHEN (a trigger "
    "condition an agent can recognise), DO (an observable action), BECAUSE (why it works) and VERIFIED BY (the event "
    "that showed it). Only rules the trajectory supports; none if it teaches nothing. Answer with JSON only: "
    '{"units": [{"condition": str, "action": str, "reason": str, "evidence": str, "entities": [str]}]}'
)


class ExtractorError(RuntimeError):
    """The extractor could not answer (network, HTTP status, or an answer that is not the schema)."""


class Extractor(Protocol):
    """Turns a trajectory (perception records, oldest first) into proposals."""

    name: str  # recorded as the proposals' rule: "llm/<name>"

    def extract(self, trajectory: list[dict]) -> list[Proposal]: ...


class OpenAICompatibleExtractor:
    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 30.0):
        self.base_url, self.model, self.api_key, self.timeout = base_url.rstrip("/"), model, api_key, timeout
        self.name = model

    def extract(self, trajectory: list[dict]) -> list[Proposal]:
        answer = self._complete(request_body(self.model, trajectory))
        return proposals_from(answer, trajectory, f"llm/{self.name}")

    def _complete(self, body: dict) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(f"{self.base_url}/chat/completions", json.dumps(body).encode(), headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise ExtractorError(f"{self.base_url}: HTTP {exc.code}: {exc.read()[:200]!r}") from None
        except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as exc:
            raise ExtractorError(f"{self.base_url}: {exc}") from None


def request_body(model: str, trajectory: list[dict]) -> dict:
    steps = [{k: event.get(k) for k in TRAJECTORY_FIELDS if event.get(k) not in (None, "", {}, [])}
             for event in trajectory]
    return {"model": model, "temperature": 0, "response_format": {"type": "json_object"},
            "messages": [{"role": "system", "content": PROMPT},
                         {"role": "user", "content": json.dumps({"trajectory": steps}, ensure_ascii=False)}]}


def proposals_from(answer: dict, trajectory: list[dict], rule: str) -> list[Proposal]:
    """The proposals in a chat-completions ``answer``; raises ExtractorError naming what is wrong."""
    try:
        content = answer["choices"][0]["message"]["content"]
        units = json.loads(content)["units"]
    except (KeyError, IndexError, TypeError, json.JSONDecodeError) as exc:
        raise ExtractorError(f"the answer is not {{'units': [...]}} JSON: {type(exc).__name__}: {exc}") from None
    event_ids = [e["envelope"]["record_id"] for e in trajectory]
    scope = {k: v for e in trajectory for k, v in (e.get("scope") or {}).items()}
    out = []
    for unit in units if isinstance(units, list) else []:
        if not isinstance(unit, dict) or not isinstance(unit.get("condition"), str) or not isinstance(
                unit.get("action"), str):
            raise ExtractorError(f"a unit without condition/action strings: {unit!r}")
        out.append(Proposal(unit["condition"], unit["action"], str(unit.get("reason") or ""),
                            str(unit.get("evidence") or ""), event_ids,
                            [str(e) for e in unit.get("entities") or []], scope, "self", rule))
    return out
