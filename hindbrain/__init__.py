"""hindbrain: an event-sourced brain for fleets of AI agents.

    from hindbrain import Brain
    with Brain.open("path/to/brain") as brain:
        brain.perceive(tenant="acme", kind="anomaly", text="clicked submit, nothing happened")
"""

from hindbrain.brain import Brain
from hindbrain.recall.pack import Recalled, RecallPack
from hindbrain.schemas.api import InvalidInput
from hindbrain.streams.log import LogWriteError

__all__ = ["Brain", "InvalidInput", "LogWriteError", "Recalled", "RecallPack"]
__version__ = "0.1.0"
