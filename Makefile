# minivit: `make lab` opens the course, `make test` checks an install: the unit tests (not the integration ones),
# then every notebook. `make integration`, `make smoke` and `make other-copy` run the rest; .ci/run (CI) runs all but
# `make smoke`.
# Both create .venv, install minivit with its [dev] tools and prepare the data on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The PyTorch release to install first (override e.g. TORCH_SPEC="torch torchvision" for the latest) and its
# build: TORCH_VARIANT=auto picks the CPU-only build on a machine without an NVIDIA GPU when PyTorch's CPU index
# answers (else pip's default); cpu | cuda | default force one (see .ci/torch_pip_args.py).
TORCH_SPEC ?= torch==2.14.1 torchvision==0.29.1
TORCH_VARIANT ?= auto
# Run as root (containers), JupyterLab needs --allow-root.
LAB_FLAGS ?= $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: help install data lab test unit integration notebooks other-copy smoke gpu-check bench offline-kit gpu-bundle site assignments kit-folder autograde grading-sandbox clean

help:
	@echo "make lab        open the course notebooks in JupyterLab (sets everything up first)"
	@echo "make test       check an install: make unit, then make notebooks"
	@echo "make unit       the unit tests, without the integration ones (pytest -m \"not integration\" tests/)"
	@echo "make notebooks  every notebook, its outputs compared (pytest --nbval notebooks/)"
	@echo "make integration  the heavy integration tests: browsers (site, Formgrader), the offline kit, nbgrader"
	@echo "                  on whole assignments, notebooks end to end (pytest -m integration tests/)"
	@echo "make other-copy every notebook on another faithful copy of the data (as a user's download), in .other-copy/"
	@echo "make smoke      the full profile's code paths on this machine, a sliver of the work (minivit.smoke)"
	@echo "make install    create $(VENV) and install minivit[dev]"
	@echo "make data       link the offline data sets into data/ (else fetch them) and decode them once"
	@echo "make gpu-check  on a GPU machine: every notebook, one at a time under the full profile, with a report in"
	@echo "                gpu-check/ (GPU_CHECK_ARGS=\"--limit-min 9.5 --replace\": benchmarks/gpu_check.py --help)"
	@echo "make bench      run the CPU benchmarks (benchmarks/)"
	@echo "make offline-kit  offline-kit/: the course, its data and every wheel, for a machine without internet"
	@echo "make site       build the course site (notebooks as last run, README, API reference) into _site/html"
	@echo "make assignments  generate the students' versions of the nbgrader assignments into assignments/release"
	@echo "                  (KIT=DIR: a private copy of the kit outside the repository, for graded use)"
	@echo "make autograde KIT=DIR ASSIGNMENT=NAME  grade submitted/*/NAME, each notebook in a bubblewrap sandbox"
	@echo "                  (AUTOGRADE_ARGS=\"--student ID --force\": python -m minivit.autograde --help)"

install: $(BIN)/.installed

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	args=$$(TORCH_VARIANT=$(TORCH_VARIANT) $(PYTHON) .ci/torch_pip_args.py) || exit 1; \
	$(BIN)/python -m pip install --quiet $(TORCH_SPEC) $$args
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# Links the offline copies (or fetches the course's archives, else the official files) and decodes every split into
# data/cache once, so that no notebook decodes (and warns about the copy it reads) while it is being compared.
data: install
	$(BIN)/python -m minivit.data prepare --decode

lab: install data
	$(BIN)/jupyter lab $(LAB_FLAGS) notebooks/

# -rs: a skipped test is listed with its reason (a student sees what did not run, and why). Plain `pytest tests/`
# runs every test, the integration ones too.
PYTEST_FLAGS ?= -rs
# The test modules run on two workers where there are two cores (pytest-xdist, one module per worker at a time:
# a module's fixtures are made once); TEST_JOBS=1 runs them in this process.
TEST_JOBS ?= $(shell $(BIN)/python -c "import os; print(min(2, os.cpu_count() or 1))")
TEST_PARALLEL = $(if $(filter-out 0 1,$(TEST_JOBS)),-n $(TEST_JOBS) --dist loadfile,)
unit: install data
	$(BIN)/python -m pytest $(PYTEST_FLAGS) $(TEST_PARALLEL) -m "not integration" tests/

# The tests marked integration (pytestmark = pytest.mark.integration): Chromium on the site and the Formgrader, the
# offline kit, nbgrader on whole assignments, notebooks run end to end (the GPU check's runner, the CUDA stand-in).
# The slowest tests' seconds are listed at the end.
integration: install data
	$(BIN)/python -m pytest $(PYTEST_FLAGS) $(TEST_PARALLEL) --durations=15 -m integration tests/

# Notebooks run two at a time on a machine without a CUDA GPU (NB_JOBS=2: two lanes, see notebooks/conftest.py),
# one at a time on a GPU (the full profile's budgets are per notebook on one GPU) or with NB_JOBS=1.
NB_JOBS ?= $(shell $(BIN)/python -c "import os, torch; print(1 if torch.cuda.is_available() or os.cpu_count() < 2 else 2)")
NB_PARALLEL = $(if $(filter-out 0 1,$(NB_JOBS)),-n $(NB_JOBS) --dist loadscope,)

# pytest exits 5 when it collects no test: say so instead of failing an empty folder.
# A cell still running after NB_CELL_TIMEOUT seconds fails with its traceback (the longest cell takes a few minutes).
NB_CELL_TIMEOUT ?= 1200
notebooks: install data
	$(BIN)/python -m pytest $(PYTEST_FLAGS) --nbval --nbval-cell-timeout=$(NB_CELL_TIMEOUT) $(NB_PARALLEL) notebooks/; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "no notebooks collected"; rc=0; fi; exit $$rc

# The full profile's code paths (presets, recipes, batched RandAugment, MixUp/CutMix) with a sliver of the work, so
# the GPU path is checked on any machine; outputs are not compared (--nbval-lax) and claims are printed, not checked.
# It runs through the GPU check's runner (below): the notebooks one at a time in its order, a report in
# gpu-check-smoke/, and a wall-clock limit that ends a stuck run with the report saying where it stuck.
smoke: install data
	MINIVIT_SMOKE=1 $(BIN)/python benchmarks/gpu_check.py --lax --out gpu-check-smoke --replace --limit-min 40

# What README gives a student to check an install; CI (.ci/run) runs it, then integration, smoke and other-copy.
test: unit notebooks

# The notebooks under strict nbval on another faithful copy of the data (benchmarks/other_copy.py: CIFAR-10 re-encoded
# at JPEG quality 90, Imagenette's JPEG copy for its WebP one, each class's files in another order), as a user who
# downloads the official files meets them: no compared output, zoo check or claim may depend on the copy. Its own
# data root, with no caches or checkpoints of earlier runs; no shared folder and no course archive (a closed port).
# 00 (which prints the copy), 04 and 07 (which once failed on such a copy), 05 (its live runs checked against a
# record made on the course's copy; beside 04, whose models it loads) and 08 (the zoo's CIFAR-10 and mosaic models,
# whose records were made on the course's copy) -- to keep CI's time. 01 reads no data; 03 reads Fashion-MNIST,
# whose official files hold the course's images in the course's order; 02 reads CIFAR-10 and passed on the other
# copy when last run in full, 06 and 09 when CI last ran them, 2026-12-02 (docs/install.md).
# OTHER_COPY_NOTEBOOKS=notebooks/ runs all ten.
OTHER_COPY ?= .other-copy
OTHER_COPY_NOTEBOOKS ?= $(filter-out notebooks/01_% notebooks/02_% notebooks/03_% notebooks/06_% notebooks/09_%,$(wildcard notebooks/0*.ipynb))
other-copy: install
	rm -rf $(OTHER_COPY)/cache $(OTHER_COPY)/checkpoints
	test -f $(OTHER_COPY)/OTHER_COPY.txt || $(BIN)/python benchmarks/other_copy.py $(OTHER_COPY)
	export MINIVIT_DATA=$(abspath $(OTHER_COPY)) MINIVIT_SHARED_DATASETS=$(abspath $(OTHER_COPY)) \
		MINIVIT_DATA_URL=http://127.0.0.1:9/; \
	$(BIN)/python -m minivit.data prepare --decode && \
	$(BIN)/python -m pytest $(PYTEST_FLAGS) -p no:cacheprovider --nbval --nbval-cell-timeout=$(NB_CELL_TIMEOUT) \
		$(NB_PARALLEL) $(OTHER_COPY_NOTEBOOKS)

# The GPU check (docs/gpu.md): every notebook alone, in number order (04 trains what 06 loads), strict, under the
# full profile, with a report (per notebook and per cell: outcome and seconds; each failing cell's report) written as
# it goes to gpu-check/ (--out), and a clean stop before a wall-clock limit (--limit-min).
GPU_CHECK_ARGS ?=
gpu-check: install data
	$(BIN)/python benchmarks/gpu_check.py $(GPU_CHECK_ARGS)

bench: install data
	$(BIN)/python benchmarks/throughput.py
	$(BIN)/python benchmarks/time_to_accuracy.py cifar10
	$(BIN)/python benchmarks/time_to_accuracy.py cifar10-hybrid
	$(BIN)/python benchmarks/time_to_accuracy.py fashion-mnist

# The offline route (docs/gpu.md, "Without internet"): offline-kit/, every wheel the notebooks and the tests need on
# a machine without internet, the course and its data sets, installed there by its install.sh. The target's Python,
# platform and torch build go in OFFLINE_ARGS, e.g. `make offline-kit OFFLINE_ARGS="--python-version 3.12 --torch
# cpu"` (python -m minivit.gpu kit --help). gpu-bundle is its former name.
OFFLINE_ARGS ?=
offline-kit: install
	$(BIN)/python -m minivit.gpu kit --torch-spec "$(TORCH_SPEC)" $(OFFLINE_ARGS)

gpu-bundle: offline-kit

# The course site: Sphinx + myst-nb, the notebooks' committed outputs (not re-run), warnings as errors; offline.
site: install
	$(BIN)/python docs/build.py _site

kit-folder:  # checked before anything is installed or written
	@test -d "$(KIT)/source" || { echo "KIT=$(KIT) has no source/ folder: expected an nbgrader course folder"; exit 2; }

# The students' versions of $(KIT)/source/* (solutions and hidden tests removed) into $(KIT)/release. KIT is an
# nbgrader course folder: this repository's assignments/ by default, or a private copy outside it for graded use
# (make assignments KIT=$HOME/minivit-kit; a copy without its own nbgrader_config.py and mathjax_templates/, for
# grading offline, gets this one's).
KIT ?= assignments
assignments: kit-folder install
	@test -f "$(KIT)/nbgrader_config.py" || cp assignments/nbgrader_config.py "$(KIT)/"
	@test -d "$(KIT)/mathjax_templates" || cp -r assignments/mathjax_templates "$(KIT)/"
	cd "$(KIT)" && for a in source/*/; do \
		PATH="$(abspath $(BIN)):$$PATH" nbgrader generate_assignment "$$(basename $$a)" --force || exit 1; done

# Grading: `nbgrader autograde $(ASSIGNMENT)` in $(KIT), each submission's notebook run in a bubblewrap sandbox that
# sees only a copy of that submission, the Python environment and the data (no source/, autograded/, gradebook.db or
# other submission, no network, no process left after the notebook): minivit/autograde.py, docs/instructors.md. The
# sandbox is checked first, before anything is installed: without bwrap this says so and how to get it, and stops
# (AUTOGRADE_ARGS=--unsandboxed grades without it). B and C read CIFAR-10's decoded caches (make data).
ASSIGNMENT ?=
AUTOGRADE_ARGS ?=
grading-sandbox:  # checked before anything is installed or written, like kit-folder
	@test -n "$(ASSIGNMENT)" || { echo "ASSIGNMENT= is empty: expected one of: $$(ls "$(KIT)/source")"; exit 2; }
	@$(PYTHON) -I minivit/autograde.py check $(AUTOGRADE_ARGS)

autograde: kit-folder grading-sandbox install data
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m minivit.autograde "$(ASSIGNMENT)" --kit "$(KIT)" $(AUTOGRADE_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis _site docs/_autosummary
