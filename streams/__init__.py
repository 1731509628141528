"""The log (the only write path) and the processors that project it into views."""
