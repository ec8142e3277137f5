# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
# The CPU wheel; a machine that already has a torch in the venv (a GPU build, say) keeps it.
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed

.PHONY: install browser demo test lint bench clean

$(STAMP): pyproject.toml Makefile setup.py sim/_ratecore.c sim/_classcore.c
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[all]"
	touch $(STAMP)

install: $(STAMP)

# Headless Chromium for the report's browser test (tests/test_report_browser.py); a no-op when present.
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
		|| echo "warning: could not install chromium; tests/test_report_browser.py will fail"

# A capacity report for the bundled default job and cluster (reports/specs/default.yaml); prints index.html's path.
DEMO_OUT ?= out/demo
demo: install
	$(VENV)/bin/collsim report reports/specs/default.yaml --out $(DEMO_OUT)

test: install browser
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check sim validate collsim reports netlab benchmarks tests

bench: install
	$(PY) -m pytest -m benchmark

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info sim/*.so
