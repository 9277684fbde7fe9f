# Every target installs what it needs into $(VENV) first; reinstalls only when pyproject.toml changes.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build; on a GPU machine use e.g. TORCH='torch==2.13.0 --index-url <your CUDA index>'.
TORCH ?= torch==2.13.0
EXTRAS ?= train,local,client,report,dev
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: venv test lint demo engine-demo bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH)
	$(BIN)/python -m pip install -q -e '.[$(EXTRAS)]'
	touch $@

venv: $(STAMP)

test: venv
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
	rm -rf $(VENV) outputs
