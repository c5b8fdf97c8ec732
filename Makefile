# Targets a newcomer can guess. `make setup` is idempotent and is run by the others.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup browser demo test test-fast test-durations lint bench bench-assess bench-large bench-scd2 bench-copy bench-sync bench-cutover bench-stream bench-verify bench-rerun clean synth announce-synth

setup: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml package-lock.json
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	$(BIN)/pip install --quiet --no-deps -e .
	npm ci --no-audit --no-fund --loglevel=error
	touch $(STAMP)

# A headless Chromium for the browser tests of the HTML pages (only they need it: `make demo` does
# not): Debian's package when none is installed (as root, or through sudo). Playwright's own
# browser builds are never downloaded.
browser:
	@command -v chromium-headless-shell >/dev/null || command -v chromium >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell; }

demo: setup
	$(BIN)/python -m icelake.demo

test: setup browser
	$(BIN)/pytest

test-fast: setup browser
	$(BIN)/pytest -m "not slow and not spark" tests/unit tests/functional

# The whole suite, writing its seconds per file to tests/durations.json: the order in which the
# workers get the files, longest first (tests/schedule.py). Commit the file when it changed much.
test-durations: setup browser
	$(BIN)/pytest --record-durations

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: setup
	$(BIN)/python -m benchmarks.rewrite_bench
	$(BIN)/python -m benchmarks.workflow_bench
	$(BIN)/python -m benchmarks.rerun_bench
	$(BIN)/python -m benchmarks.assess_bench
	$(BIN)/python -m benchmarks.scd2_bench
	$(BIN)/python -m benchmarks.scd2_bench --history 2

# A re-run's estimate (issue 56): the sample lake migrated, then run again 5 times; each table's
# median time against its own estimate (goal: within 30 %, nothing copied).
bench-rerun: setup
	$(BIN)/python -m benchmarks.rerun_bench

# The assessment of an estate (issue 48: tiny tables, the pages at 1,000 and 5,000) and its consumer
# scan (issue 58: 1,000 tables, 500 Glue jobs, 2,000 named queries; budget 0.2 s a table).
bench-assess: setup
	$(BIN)/python -m benchmarks.assess_bench
	$(BIN)/python -m benchmarks.consumer_bench

# Large tables (issue 11): Iceberg's rewrite_table_path against icelake's plan plus rewrite on a
# 1,000,000-file table, the same table's source check as S3 would list it (one listing against
# ranges side by side), then one 100,000-file table through the state machine on embedded AWS.
bench-large: setup
	$(BIN)/python -m benchmarks.large_bench
	$(BIN)/python -m benchmarks.listing_bench
	$(BIN)/python -m benchmarks.workflow_large

# Copy at S3's limits (issue 34): 50,000 data files over 8 prefixes (30 % in one) copied by the
# Lambda engine and the Glue engine (local Spark) against a model of S3's per-prefix rates and
# latency (benchmarks/s3_model.py); last line: JSON with efficiency, slowdowns and cost per object.
bench-copy: setup
	$(BIN)/python -m benchmarks.copy_bench --record

# A copy into S3 Tables' storage streams through the engine (issue 61): tracemalloc's peak over a
# 512 MiB copy (two 32 MiB parts held, whatever the size) and the copying thread's CPU per MiB.
bench-stream: setup
	$(BIN)/python -m benchmarks.stream_copy_bench --mib 512 --record

# Verify at scale (issue 59): a 100,000-file table's files checked against its copy record on the
# S3 model by the Lambda engine (threads) and the Glue engine (local Spark); requests asserted equal
# to the formula the estimate uses, the assessment's estimate of each engine's time within 20 %.
bench-verify: setup
	$(BIN)/python -m benchmarks.verify_bench

# A sync costs the change (issue 42): a local full migration of 1,000,000 files, the sync of 3
# commits and a run with nothing new (seconds and requests), Iceberg's incremental
# rewrite_table_path against icelake's sync, and the workflow's incremental run at 100,000 files.
bench-sync: setup
	$(BIN)/python -m benchmarks.sync_bench

# The write freeze of a cutover (issue 43): a 100,000-file table migrated on embedded AWS gets 3
# commits and is cut over (freeze_s, by step); a late append must be stranded, carried over once.
bench-cutover: setup
	$(BIN)/python -m benchmarks.cutover_bench

# SCD2 merge against a naive rewrite: 1,000,000 wide rows, 1% changed (last line: JSON summary),
# then with 5 earlier batches of history (at 200,000 rows: 6x the rows to build on a 2-core machine).
bench-scd2: setup
	$(BIN)/python -m benchmarks.scd2_bench --rows 1000000
	$(BIN)/python -m benchmarks.scd2_bench --rows 200000 --history 5

# The CDK cloud assembly in build/cdk.out (no AWS credentials, no CDK CLI needed) of the configuration
# ICELAKE_CONFIG names: by default the example, examples/context.json, which the first line says.
ICELAKE_CONFIG ?= examples/context.json
synth: announce-synth setup
	ICELAKE_CONFIG=$(ICELAKE_CONFIG) JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 $(BIN)/python app.py

announce-synth:
	@echo "make synth: synthesizing $(ICELAKE_CONFIG)$(if $(filter examples/context.json,$(ICELAKE_CONFIG)), (the example configuration: the embedded AWS's accounts and buckets; ICELAKE_CONFIG=PATH names yours),) into $(or $(CDK_OUTDIR),build/cdk.out)"

clean:
	rm -rf $(VENV) .demo benchmarks/.work
