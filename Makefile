# CARB — two commands do all set-up on a fresh machine:
#   make test        create/refresh .venv, install, run the test suite
#   make reproduce   create/refresh .venv, install, run every notebook (full profile) on data/
#   make lab         same set-up, register the kernel "CARB (.venv)", open JupyterLab on notebooks/
# The virtual environment is (re)built only when pyproject.toml changes (stamp file).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.carb-deps-stamp
# torch is installed first so that no CUDA build is pulled on a CPU machine; GPU workstations
# use environment.yml (conda) or override, e.g. `make TORCH_SPEC="torch==2.13.0" test`.
TORCH_SPEC ?= torch==2.13.0
PROFILE ?= full

.PHONY: test reproduce reproduce-quick lab lint bench check-features clean-venv

$(STAMP): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e ".[dev,lab,dask]"
	@touch $(STAMP)

# The suite runs on PYTEST_WORKERS processes (pytest-xdist; one test file per worker at a time):
# 2 on the 2-core machines this project is tested on. PYTEST_WORKERS=0 runs it in one process.
PYTEST_WORKERS ?= 2
test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=15 $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile)

reproduce: $(STAMP)
	$(BIN)/carb reproduce --profile $(PROFILE)

reproduce-quick: $(STAMP)
	$(BIN)/carb reproduce --profile quick

# The kernel is registered inside .venv (--sys-prefix): JupyterLab started from .venv lists it as
# "CARB (.venv)". LAB_ARGS passes options, e.g. `make lab LAB_ARGS="--no-browser --port 8890"`.
LAB_ARGS ?=
lab: $(STAMP)
	$(BIN)/python -m carb_lib.lab install
	$(BIN)/jupyter lab --notebook-dir=notebooks $(LAB_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check carb_lib tests benchmarks scripts examples

bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

check-features: $(STAMP)
	$(BIN)/python scripts/check_features_full_grid.py

clean-venv:
	rm -rf $(VENV)
