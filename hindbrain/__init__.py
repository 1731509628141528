"""hindbrain: an event-sourced brain for fleets of AI agents.

    from hindbrain import Brain
    with Brain.open("path/to/brain") as brain:
        brain.perceive(tenant="acme", kind="anomaly", text="clicked submit, nothing happened")

    from hindbrain import Client          # the same API over `hindbrain serve`
    with Client("http://127.0.0.1:8080", api_key="hb_...") as client:
        client.perceive(tenant="acme", kind="anomaly", text="clicked submit, nothing happened")
"""

from hindbrain.brain import Brain
from hindbrain.open_calls import BrainClosed
from hindbrain.recall.pack import Recalled, RecallPack
from hindbrain.schemas.api import InvalidInput
from hindbrain.streams.log import LogWriteError

# The HTTP clients are imported on first use: an embedded brain never needs httpx.
_CLIENT_NAMES = ("AsyncClient", "AuthenticationError", "Client", "NotFound", "PermissionDenied", "RateLimited",
                 "RetryPolicy", "ServiceError", "ServiceUnavailable")

__all__ = ["Brain", "BrainClosed", "InvalidInput", "LogWriteError", "Recalled", "RecallPack", *_CLIENT_NAMES]
__version__ = "0.1.0"


def __getattr__(name: str):
    if name in _CLIENT_NAMES:
        from hindbrain import client

        return getattr(client, name)
    raise AttributeError(f"module 'hindbrain' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_CLIENT_NAMES})
