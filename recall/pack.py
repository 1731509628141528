"""What a recall returns: ranked, gated items within the token budget, and their rendering."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Recalled:
    """One recalled item. ``why`` holds every channel contribution and gate decision."""

    id: str
    kind: str  # "fragment" | "belief" | "event"
    text: str
    event_ids: list[str]
    score: float
    why: dict
    source: str  # "perceived" | "lived" | "read" | "induced"
    layer: str
    confidence: float
    tokens: int
    scope: dict = field(default_factory=dict)


@dataclass(frozen=True)
class RecallPack:
    recall_id: str
    items: list[Recalled]
    budget_tokens: int
    cut: list[dict] = field(default_factory=list)  # candidates the gate left out, with reasons

    @property
    def tokens(self) -> int:
        return sum(i.tokens for i in self.items)

    def render(self) -> str:
        """The block to put into the prompt: one line per item, with its provenance."""
        if not self.items:
            return ""
        lines = [f"[hindbrain recall {self.recall_id}]"]
        for n, item in enumerate(self.items, 1):
            lines.append(f"{n}. ({item.layer}, {item.source}, confidence {item.confidence:.2f}) {item.text}")
        return "\n".join(lines)

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)
