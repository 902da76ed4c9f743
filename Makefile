# malt — `make demo` and `make test` create the virtual environment on first use.
VENV   ?= .venv
PYTHON ?= python3
BIN     = $(VENV)/bin
MALT    = $(BIN)/malt
DEMO   ?= demo-results

.PHONY: install demo test bench bench-scale clean

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

test: install
	$(BIN)/python -m pytest -q -p no:cacheprovider tests

bench: install
	@for script in tests/benchmarks/bench_*.py; do [ $$script = tests/benchmarks/bench_scale.py ] && continue; echo "== $$script"; PYTHONPATH=. MALT_DATA=$(FIGDATA) $(BIN)/python $$script || exit 1; done

# The matrix models at the scale of real rating matrices (issue 36): hours at full sizes; QUICK=1 for minutes.
bench-scale: install
	PYTHONPATH=. MALT_DATA=$(FIGDATA) nice -n 10 $(BIN)/python tests/benchmarks/bench_scale.py $(if $(QUICK),--quick)

clean:
	rm -rf $(DEMO) figures .pytest_cache

# make figures / figures-quick / table-4-4 ...: the reproductions (see figures.mk)
include figures.mk
