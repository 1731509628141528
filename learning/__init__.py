"""The learning loop (design.md §B, §D): perception → verified cognition, with every
step an auditable decision record. Pure rules (``write_gate``, ``extract``, ``lifecycle``)
and one stream processor that applies them to the log (``learner``)."""
