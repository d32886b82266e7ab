# The two entry points of the README (both work on a fresh machine), plus helpers.
.PHONY: demo test test-llm e2e setup lint bench soak down clean migration mutation

demo:            ## build the demo task, start green + purple with docker compose, run one task
	bash scripts/demo.sh

# pytest-xdist workers (0: one process). In one process the suite keeps two cores less than half
# busy (it waits on containers and services); four keep them busy. docs/testing.md.
TEST_WORKERS ?= 4

test: setup      ## the full test suite (unit + integration with real containers and services; SQLite and PostgreSQL)
	uv run --frozen --extra postgres pytest -n $(TEST_WORKERS) --dist loadscope

test-llm: setup  ## opt-in: purple through green against a real model server (see README: minutes, not seconds)
	ARENA_TEST_LLM=1 uv run --frozen --extra postgres pytest tests/integration/test_real_model_server.py -s -v

e2e: setup       ## only the docker compose end-to-end tests
	uv run --frozen --extra postgres pytest tests/e2e

setup:
	bash scripts/setup.sh

lint:           ## ruff, and the layout rules (import directions, sizes: scripts/check_layout.py)
	uv run --frozen ruff check . && uv run --frozen ruff format --check .
	uv run --frozen python scripts/check_layout.py

bench: setup
	uv run --frozen python bench/bench_sandbox_exec.py
	uv run --frozen python bench/bench_green_exec.py
	uv run --frozen python bench/bench_agent_loop.py
	uv run --frozen python bench/bench_tracing.py
	uv run --frozen python bench/bench_ui_tasks.py
	uv run --frozen python bench/bench_ui_stream.py
	uv run --frozen python bench/bench_disk_cap.py
	uv run --frozen python bench/bench_judge.py
	uv run --frozen python -m bench.bench_burst

soak: setup      ## the long soak (two replicas on PostgreSQL, faults; about 40 minutes here)
	uv run --frozen --extra postgres python -m bench.soak --tasks 2000 --faults

mutation:        ## mutation testing of the scoring core (mutmut; slow, not in CI): config in pyproject [tool.mutmut]
	rm -rf mutants
	uv run --frozen mutmut run --max-children $${MUTMUT_JOBS:-2}
	uv run --frozen mutmut results

migration:       ## a new schema revision: make migration SERVICE=green MSG="add a column"
	uv run --frozen --extra postgres python -m services.shared.migrate $(SERVICE) revision -m "$(MSG)"

down:            ## stop the demo stack; its volumes are kept: the next `make demo` has every task, run and score
	bash deploy/compose.sh --demo down --remove-orphans

clean:           ## stop the demo stack and DELETE its volumes (every task, run and score: `make down` keeps them)
	@echo "make clean: stopping the demo stack and deleting its volumes: green-data (green.db: every task, run and score;"
	@echo "            the task-file cache), purple-data (trajectories, task records), green-logs, purple-logs"
	bash deploy/compose.sh --demo down -v --remove-orphans
