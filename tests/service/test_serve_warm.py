"""A served owner pays pyarrow's lazy pandas import before it accepts connections, not on its
first projection while it serves (``projections.table.warm_arrow``; docs/speed.md, round eleven)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# a fresh interpreter: pandas is not imported yet there (this test process may have imported it)
SCRIPT = textwrap.dedent("""
    import socket, sys
    from types import SimpleNamespace
    from pathlib import Path
    import uvicorn
    from hindbrain.service import replica
    from hindbrain.settings import Settings

    assert "pandas" not in sys.modules, "pandas imported before serving: the test cannot tell"
    seen = []

    def run(self, sockets=None):  # what the server would serve from: record, do not serve
        seen.append("pandas" in sys.modules)

    uvicorn.Server.run = run
    brain = SimpleNamespace(index=SimpleNamespace(semantic=None), settings=Settings(home=Path(sys.argv[1])))
    listener = socket.create_server(("127.0.0.1", 0))
    replica.serve_owner(brain, lambda scope, receive, send: None, "127.0.0.1", 0, 0, "warning", listener)
    print(seen)
""")


def test_the_owner_imports_pandas_for_arrow_before_it_serves(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[True]"
