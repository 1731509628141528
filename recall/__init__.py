"""The read path: an in-memory index over the views, lexical ranking, budgeted packs."""
