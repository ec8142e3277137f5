# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
# The CPU wheel; a machine that already has a torch in the venv (a GPU build, say) keeps it.
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint bench clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[all]"
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(VENV)/bin/collsim simulate --topology dgx-h100-4 --collective allreduce --algorithm ring --sizes 1MiB:1GiB:4

test: install
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check sim validate collsim netlab benchmarks tests

bench: install
	$(PY) -m pytest -m benchmark

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
