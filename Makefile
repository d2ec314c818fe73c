# The two entry points a newcomer needs: `make demo` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint types unit bench bench-quick clean servers docs contract-check

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m reconciler.cli.demo

lint: $(STAMP)
	$(BIN)/ruff check reconciler tests bench tools
	$(BIN)/ruff format --check reconciler tests bench tools
	$(BIN)/lint-imports

types: $(STAMP)
	$(BIN)/mypy

# The documentation site (docs/, mkdocs.yml) into site/: --strict fails on a broken link, a
# missing page or a reference that cannot be generated. Open site/index.html.
docs: $(STAMP)
	DISABLE_MKDOCS_2_WARNING=true NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The state tests start a real PostgreSQL from the machine's server binaries, and the watch tests
# open its status page in headless chromium: install them if missing.
servers:
	tools/ensure-postgres
	tools/ensure-chromium

# Four workers on two cores: the suite mostly waits on the servers it starts (latency, pacing,
# timeouts), so it takes about half the wall time of one worker. Each module stays on one
# worker (--dist loadfile) so that a module's costly fixtures (an emulator of its own, the built
# site, a venv) are set up once. The order of the tests is new each run (pytest-randomly: no
# test leans on another's order or output); the summary names the seed that replays it, and
# -p no:randomly keeps the written order.
test: servers lint types docs
	$(BIN)/python -m pytest -n 4 --dist loadfile

# For maintainers: the service's contract (contract/) against our manifest schemas. Prints the
# contract's writable fields we do not manage, one a line, then anything our schemas accept that
# the contract refuses or file otherwise than its bodies (those make it fail).
contract-check: $(STAMP)
	$(BIN)/python -m tests.contract.drift

bench: $(STAMP)
	$(BIN)/python bench/validate_bench.py
	$(BIN)/python bench/limits_bench.py
	$(BIN)/python bench/plan_scale.py

# The scale table at small N in under a minute: a regression guard to read, never timed by CI.
bench-quick: $(STAMP)
	$(BIN)/python bench/plan_scale.py --quick

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache site
