# The README's two commands: `make demo` and `make test`. Both install what they need.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: install demo test lint unit bench clean kafka-up kafka-down

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/hindbrain demo

lint: $(STAMP)
	$(BIN)/ruff check .

unit: $(STAMP)
	$(BIN)/python -m pytest

test: lint unit

bench: $(STAMP)
	$(BIN)/python bench/foundation.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache

# Single-node Kafka 4.x (KRaft) for development and CI; see deploy/kafka/README.md.
kafka-up:
	bash deploy/kafka/kafka-up.sh

kafka-down:
	bash deploy/kafka/kafka-down.sh
