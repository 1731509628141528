"""Views of the log: one module per view with its ClickHouse table and its pure projector."""
