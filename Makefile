# malt — `make demo` and `make test` create the virtual environment on first use.
VENV   ?= .venv
PYTHON ?= python3
BIN     = $(VENV)/bin
MALT    = $(BIN)/malt
DEMO   ?= demo-results

.PHONY: install demo test lint docs bench bench-scale clean trials-store

$(BIN)/.installed: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

install: $(BIN)/.installed

demo: install
	$(MALT) --version
	$(MALT) cv --repo $(DEMO) --algo mllr --algo mlsvm --dataset synthetic-multilabel
	$(MALT) cv --repo $(DEMO) --algo column-mean --dataset synthetic-multilabel --task missing --missing 0.2
	$(MALT) results --repo $(DEMO)
	$(MALT) show --repo $(DEMO) $$($(MALT) cv --repo $(DEMO) --quiet --algo mllr --dataset synthetic-multilabel 2>/dev/null)
	@echo "malt is installed in $(VENV): run '. $(VENV)/bin/activate' to put malt on your PATH (or type $(MALT))"

test: install
	$(BIN)/python -m pytest -q -p no:cacheprovider -n auto tests

# The layering contracts of pyproject.toml on the package as installed (lint-imports alone cannot see
# the mapped algorithms/, datasets/, repository/ of an editable install; tests/lint_imports.py stages them).
lint: install
	$(BIN)/python -m tests.lint_imports

# The documentation site (docs/): Sphinx with numpydoc and sphinx-gallery; warnings are errors.
$(BIN)/.docs-installed: $(BIN)/.installed pyproject.toml
	$(BIN)/pip install -q -e '.[docs]'
	touch $@

docs: $(BIN)/.docs-installed
	MPLBACKEND=Agg OPENBLAS_NUM_THREADS=1 $(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	@echo "docs/_build/html/index.html"

bench: install
	$(BIN)/pip install -q -e '.[bench]'
	@for script in tests/benchmarks/bench_*.py; do [ $$script = tests/benchmarks/bench_scale.py ] && continue; echo "== $$script"; PYTHONPATH=. MALT_DATA=$(FIGDATA) $(BIN)/python $$script || exit 1; done

# The matrix models at the scale of real rating matrices (issue 36): hours at full sizes; QUICK=1 for minutes.
bench-scale: install
	PYTHONPATH=. MALT_DATA=$(FIGDATA) nice -n 10 $(BIN)/python tests/benchmarks/bench_scale.py $(if $(QUICK),--quick)

# the store's trials of issue 35 with their counts (tmpfs disk-full trials need root; TRIALS=--quick for a sample)
trials-store: install
	PYTHONPATH=. $(BIN)/python -m tests.trials.store_trials $(TRIALS)

clean:
	rm -rf $(DEMO) figures .pytest_cache docs/_build docs/gallery docs/generated

# make figures / figures-quick / table-4-4 ...: the reproductions (see figures.mk)
include figures.mk
