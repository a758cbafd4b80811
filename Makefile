# Convenience targets; the README's two commands stay the reference.
PYTHON ?= .venv/bin/python

.PHONY: samples test bench docs

# Regenerate every committed synthetic sample (timelines, NCCL job logs, EXPECTED.md), byte for byte.
samples:
	$(PYTHON) -m sample_traces.generator

# Regenerate the generated docs (store table schemas).
docs:
	$(PYTHON) -m parsers.schema > docs/schema.md

test:
	$(PYTHON) -m pytest -q

# The benchmarks (need: pip install -e ".[bench]"); each prints its ratio against its baseline.
bench:
	$(PYTHON) bench/ingest.py --skip-json
	$(PYTHON) bench/report.py
	$(PYTHON) bench/nccl_log.py
	$(PYTHON) bench/dashboard.py
