"""Integrations with agent frameworks. Each module needs its framework, installed with an extra:

* ``hindbrain.integrations.langgraph`` — ``HindbrainStore``, LangGraph's ``BaseStore`` on a brain
  (``pip install 'hindbrain[langgraph]'``; ``docs/langgraph.md``).

Nothing is imported here, so ``import hindbrain`` never pulls in a framework.
"""
