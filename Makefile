# Convenience targets; the README's two commands stay the reference.
PYTHON ?= .venv/bin/python

.PHONY: samples test bench docs check

# Regenerate every committed synthetic sample (timelines, NCCL job logs, EXPECTED.md), byte for byte.
samples:
	$(PYTHON) -m sample_traces.generator

# Regenerate the generated docs: store tables, report JSON Schema, README's CLI reference and thresholds.
docs:
	$(PYTHON) scripts/docs.py

# The checks of the README's test command, without the install.
check:
	.venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy && .venv/bin/lint-imports

test: check
	$(PYTHON) -m pytest -q

# The benchmarks (need: pip install -e ".[bench]"); each prints its ratio against its baseline.
# machine.py first: what fresh memory and the page cache cost on this machine right now.
bench:
	$(PYTHON) bench/machine.py
	$(PYTHON) bench/processes.py --report
	$(PYTHON) bench/cold_start.py
	$(PYTHON) bench/ingest.py --skip-json
	$(PYTHON) bench/report.py
	$(PYTHON) bench/nccl_log.py
	$(PYTHON) bench/dashboard.py
