# The README's two commands: `make demo` and `make test`. Both install what they need: the dev
# tools and the framework extras whose integrations the suite tests against the real package.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: install demo test lint unit bench clean kafka-up kafka-down

# uv resolves and installs in parallel: a fresh venv in ~20 s where pip took 2-4 minutes on a busy
# 2-core machine (README, "Tests"). uv is taken from PATH, else installed into the venv from PyPI;
# with neither, pip installs as before. The venv keeps its pip (tests/test_packaging.py uses it).
# uv does not byte-compile (compiling all ~9,000 modules took 89 s at load 14): Python writes
# the ~2,400 the suite imports on first use (see PYTHONDONTWRITEBYTECODE below).
INSTALL_ARGS := -e '.[dev,langgraph]'
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	@if command -v uv >/dev/null 2>&1; then UV=uv; \
	elif $(BIN)/python -m pip install --quiet uv; then UV=$(BIN)/uv; else UV=; fi; \
	if [ -n "$$UV" ] && $$UV pip install --quiet --python $(BIN)/python $(INSTALL_ARGS); then echo "installed with $$UV"; \
	else echo "uv unavailable: installing with pip"; $(BIN)/python -m pip install --quiet $(INSTALL_ARGS) || exit 1; fi
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/hindbrain demo

lint: $(STAMP)
	$(BIN)/ruff check .

# With `java` and `mvn` (and no HINDBRAIN_TEST_KAFKA given), the Kafka tests run on a broker
# started here and stopped on exit, pass or fail (the trap); a broker that already answered on
# the port is used and left running. Otherwise the Kafka tests skip and say why.
KAFKA_PORT := $(or $(HINDBRAIN_KAFKA_PORT),19092)
KAFKA_UP_LOG := deploy/kafka/cache/kafka-up.log
# The suite's broker lives minutes: C1 only (no C2 compilation) halves its CPU, start-up
# included (deploy/kafka/README.md, "The test suite's broker"). A caller's setting wins;
# `make kafka-up` (a broker that may live long) keeps the full JIT.
test unit: export KAFKA_JVM_PERFORMANCE_OPTS ?= -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:TieredStopAtLevel=1
# The modules are independent (each Kafka test has its own topic prefix, each brain its own
# folder), so they run on TEST_WORKERS processes (pytest-xdist). Four on 2 cores: many tests
# wait on a broker, a server or a subprocess (199 s on 3 workers against 254 s on 2, issue 18),
# and beside another CPU-bound process the suite took 350 s on 4 against 395 s on 3 (issue 31). A module's tests stay on one worker, in order (--dist loadscope):
# a module-scoped fixture (one server, one brain) is built once, and tests that read what an
# earlier test of the module wrote (tests/service/test_http.py) see it. TEST_WORKERS=0 runs
# them in this process.
TEST_WORKERS ?= 4
# Bytecode is cached (in .venv and the checkout's __pycache__/, both ignored by git) even where
# the environment turns caching off: otherwise every test process and every server or CLI
# subprocess compiles each module it imports from source (collecting the suite: 13.5 s CPU per
# worker uncached against 4.5 s), and pytest rewrites the asserts of every test module again.
unexport PYTHONDONTWRITEBYTECODE
# The hypothesis tests run derandomized here (tests/conftest.py): the same examples every run.
export HINDBRAIN_HYPOTHESIS_PROFILE ?= ci
# pytest's temporary folders: one per checkout (keyed by its path), emptied when the next run
# starts and removed when a run passes (kept after a failure, to look at). Pytest's default root
# (/tmp/pytest-of-<user>) is shared by every pytest run on the machine, and a run that ends
# deletes the numbered folders beyond the newest three, whoever left them: on a machine shared
# with other test runs one `make test` spent 126 s deleting theirs after its last test (issue 31).
TEST_TMP := $(or $(TMPDIR),/tmp)/hindbrain-tests-$(shell id -u)-$(shell printf '%s' '$(CURDIR)' | cksum | cut -d' ' -f1)
# The longest scopes go out first (tests/scheduling.py, sorted by tests/conftest.py): xdist's own
# order (most tests first) left the few-test, long modules (simulator, demo, packaging) to the end,
# one worker busy while three idled.
PYTEST := $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder --basetemp=$(TEST_TMP)
# After a pass the folder is renamed at once and deleted in the background: a run leaves tens of
# thousands of files (a brain is ~200), and deleting them took ~2.5 minutes after the last test
# on a loaded machine (this disk discards on delete). A deletion cut short (or still running)
# is finished by the next pass's.
DROP_TEST_TMP := if [ -e $(TEST_TMP) ]; then mv $(TEST_TMP) $(TEST_TMP).passed.$$$$ && \
  (nohup rm -rf $(TEST_TMP).passed.* >/dev/null 2>&1 &); fi
unit: $(STAMP)
	@if [ -z "$$HINDBRAIN_TEST_KAFKA" ] && command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then \
	  if python3 deploy/kafka/probe.py ready $(KAFKA_PORT) 2>/dev/null; then echo "kafka: using the broker already on 127.0.0.1:$(KAFKA_PORT)"; \
	  else trap 'bash deploy/kafka/kafka-down.sh' EXIT; trap 'exit 130' INT TERM; bash deploy/kafka/kafka-up.sh || exit 1; fi; \
	  echo "HINDBRAIN_TEST_KAFKA=127.0.0.1:$(KAFKA_PORT) $(PYTEST)"; \
	  HINDBRAIN_TEST_KAFKA=127.0.0.1:$(KAFKA_PORT) $(PYTEST) && $(DROP_TEST_TMP); \
	else \
	  echo "$(PYTEST)"; $(PYTEST) && $(DROP_TEST_TMP); \
	fi

# `make test` starts the broker in the background while the venv installs and ruff runs (each
# ~20-40 s on a busy machine), then runs `unit` on it and stops it on exit, pass or fail.
test:
	@kafka=; if [ -z "$$HINDBRAIN_TEST_KAFKA" ] && command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1 \
	  && ! python3 deploy/kafka/probe.py ready $(KAFKA_PORT) 2>/dev/null; then \
	  trap 'bash deploy/kafka/kafka-down.sh' EXIT; trap 'exit 130' INT TERM; mkdir -p $(dir $(KAFKA_UP_LOG)); \
	  bash deploy/kafka/kafka-up.sh >$(KAFKA_UP_LOG) 2>&1 & kafka=$$!; fi; \
	$(MAKE) --no-print-directory lint; linted=$$?; \
	if [ -n "$$kafka" ]; then \
	  if wait $$kafka; then cat $(KAFKA_UP_LOG); export HINDBRAIN_TEST_KAFKA=127.0.0.1:$(KAFKA_PORT); \
	  else cat $(KAFKA_UP_LOG); exit 1; fi; fi; \
	[ $$linted -eq 0 ] || exit $$linted; \
	$(MAKE) --no-print-directory unit

bench: $(STAMP)
	$(BIN)/python bench/foundation.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache

# Single-node Kafka 4.x (KRaft) for development and CI; see deploy/kafka/README.md.
kafka-up:
	bash deploy/kafka/kafka-up.sh

kafka-down:
	bash deploy/kafka/kafka-down.sh
