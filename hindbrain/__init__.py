"""hindbrain: an event-sourced brain for fleets of AI agents.

    from hindbrain import Brain
    with Brain.open("path/to/brain") as brain:
        brain.perceive(tenant="acme", kind="anomaly", text="clicked submit, nothing happened")

    from hindbrain import Client          # the same API over `hindbrain serve`
    with Client("http://127.0.0.1:8080", api_key="hb_...") as client:
        client.perceive(tenant="acme", kind="anomaly", text="clicked submit, nothing happened")
"""

# Imported on first use: ``python -m hindbrain.recall.workers`` (an embed worker) imports this package
# first, and ``Brain`` pulls in the log, the warehouse and the learner (~0.5 s of CPU a worker start,
# against ~0.1 s without); an embedded brain never needs httpx, so the HTTP clients wait too.
_LAZY = {"Brain": "hindbrain.brain", "BrainClosed": "hindbrain.open_calls", "Recalled": "hindbrain.recall.pack",
         "RecallPack": "hindbrain.recall.pack", "InvalidInput": "hindbrain.schemas.api",
         "LogWriteError": "hindbrain.streams.log"}
_CLIENT_NAMES = ("AsyncClient", "AuthenticationError", "Client", "NotFound", "PermissionDenied", "RateLimited",
                 "RetryPolicy", "ServiceError", "ServiceUnavailable")

__all__ = [*_LAZY, *_CLIENT_NAMES]
__version__ = "0.1.0"


def __getattr__(name: str):
    import importlib

    module = _LAZY.get(name) or ("hindbrain.client" if name in _CLIENT_NAMES else None)
    if module is None:
        raise AttributeError(f"module 'hindbrain' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later reads are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_CLIENT_NAMES})
