"""The agent loop of ``agent_loop.py`` over HTTP: the very same ``run_task`` (recall before
acting, act on what was injected, perceive what happened, report the outcome naming what was
applied), given a ``hindbrain.Client`` instead of a ``Brain``: the client has the Brain's
methods. The second task finds the lesson the first one taught (nobody calls ``learn``).

    hindbrain --home ./brain keys create --tenant acme        # prints the key once
    hindbrain --home ./brain serve --port 8080 &
    HINDBRAIN_API_KEY=hb_... python examples/client_loop.py

``HINDBRAIN_URL`` (default http://127.0.0.1:8080) and ``HINDBRAIN_TENANT`` (default acme: the
key's tenant; another is refused by the server) are read too.
"""

from __future__ import annotations

import os
import uuid

from agent_loop import run_task  # beside this file

from hindbrain import Client

if __name__ == "__main__":
    url = os.environ.get("HINDBRAIN_URL", "http://127.0.0.1:8080")
    tenant = os.environ.get("HINDBRAIN_TENANT", "acme")
    run = uuid.uuid4().hex[:6]  # new task names on each run (a second run starts with the lesson)
    with Client(url, api_key=os.environ["HINDBRAIN_API_KEY"]) as client:
        first = run_task(client, "agent-1", f"t-1-{run}", tenant)
        second = run_task(client, "agent-1", f"t-2-{run}", tenant)
    print(f"first task {'succeeded' if first else 'failed (and taught a lesson)'}; "
          f"second task {'succeeded with the lesson' if second else 'failed'}")
