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
# torchvision (the `zoo` extra: `carb zoo`) is installed --no-deps at the release paired with
# TORCH_SPEC's torch (0.28 with 2.13; carb_lib/families/_torchvision.py lists the pairs), so it
# never replaces the installed torch; set both when overriding, e.g.
# `make TORCH_SPEC="torch==2.12.0" TORCHVISION_SPEC="torchvision==0.27.0" test`.
TORCHVISION_SPEC ?= torchvision==0.28.0
PROFILE ?= full

# Python writes its bytecode caches (__pycache__, git-ignored) even where the environment sets
# PYTHONDONTWRITEBYTECODE: the suite and a reproduce start hundreds of Python processes (notebook
# kernels, CLI runs, Dask workers), and each would otherwise compile carb_lib and the tests afresh.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: test reproduce reproduce-quick lab lint bench check-features clean-venv

# The rest of the dependencies go in with uv (the same releases as pip resolves, in about 20 s
# instead of about 55 s); it keeps the torch installed above and compiles the bytecode as pip
# does. Where uv cannot be installed or fails, pip does the same install.
$(STAMP): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q --no-deps "$(TORCHVISION_SPEC)"
	$(BIN)/python -m pip install -q uv && $(BIN)/uv pip install -q --compile-bytecode \
	  --python $(BIN)/python -e ".[dev,lab,dask]" || $(BIN)/python -m pip install -q -e ".[dev,lab,dask]"
	@touch $(STAMP)

# The suite runs on PYTEST_WORKERS processes (pytest-xdist, tests handed out one by one and stolen
# by an idle worker): 2 on the 2-core machines this project is tested on. PYTEST_WORKERS=0 runs it
# in one process.
PYTEST_WORKERS ?= 2
test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=15 $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist worksteal)

reproduce: $(STAMP)
	$(BIN)/carb reproduce --profile $(PROFILE)

reproduce-quick: $(STAMP)
	$(BIN)/carb reproduce --profile quick

# The kernel is registered inside .venv (--sys-prefix): JupyterLab started from .venv lists it as
# "CARB (.venv)". LAB_ARGS passes options, e.g. `make lab LAB_ARGS="--no-browser --port 8890"`.
# As root (a container, a cloud VM) JupyterLab refuses to start without --allow-root: make passes it.
# Notebooks saved from notebooks/ lose their outputs (carb_lib.app.lab.strip_on_save): Run All
# leaves the checkout clean.
LAB_ARGS ?=
LAB_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)
lab: $(STAMP)
	$(BIN)/python -m carb_lib.app.lab install
	$(BIN)/jupyter lab --notebook-dir=notebooks \
	  --ContentsManager.pre_save_hook=carb_lib.app.lab.strip_on_save $(LAB_ROOT) $(LAB_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check carb_lib tests benchmarks scripts examples

# Every benchmark: timings, the allocator check against every measured row, the default's choice.
bench: $(STAMP)
	@for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

check-features: $(STAMP)
	$(BIN)/python scripts/check_features_full_grid.py
	$(BIN)/python scripts/check_new_families.py

clean-venv:
	rm -rf $(VENV)
