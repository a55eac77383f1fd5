# redlock — the front door is `make demo` and `make test`.

GO          ?= go
GOBIN       := $(shell $(GO) env GOPATH)/bin
STATICCHECK := $(GOBIN)/staticcheck
STATICCHECK_VERSION := v0.8.2
export REDLOCK_REDIS_IMAGE ?= redis:7

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

SHELL          := /bin/bash
# The modules of this repository: the library and its command (.), and
# those kept out of its requirements (README.md, "Modules").
MODULES        := . redlockotel demo guard/sqltest bench scripts/modproxy
CHAOS_DURATION ?= 10m
CHAOS_REPORT   := $(CURDIR)/.chaos-report.txt
TEST_LOG       := $(CURDIR)/.test.log

.PHONY: demo chaos test test-otel test-demo test-sqltest consumer-check model lint vet staticcheck fmt-check redis-image redis-server postgres tools bench bench-micro compose-up compose-down

## demo: five local Redis nodes in Docker, four workers on one lock, node kills/restarts and a worker paused past its lease; prints the summary and writes the HTML timeline
# The demo is its own module (demo/), so that the library's consumers and
# the redlock command do not download or link Docker's SDK for it.
demo: redis-image
	cd demo && $(GO) run . $(DEMO_FLAGS)

## test-sqltest: guard.SQL on PostgreSQL (guard/sqltest/, its own module, so the root module needs no PostgreSQL driver)
test-sqltest: redis-image postgres
	cd guard/sqltest && $(GO) test -race -count=1 ./...

## test-demo: the demo's tests (demo/, its own module; Docker)
test-demo: redis-image
	cd demo && $(GO) test -race -count=1 ./...

## test: build the Redis image and install redis-server and PostgreSQL if needed, lint, and run every test with -race against real servers
# The chaos summary table is printed after the tests, then go test's
# package lines again, so that the run still ends with the test results.
# The modules of their own (redlockotel, demo, guard/sqltest) are tested first.
test: redis-image redis-server postgres lint consumer-check test-otel test-demo test-sqltest
	@rm -f $(CHAOS_REPORT)
	@set -o pipefail; REDLOCK_CHAOS_REPORT=$(CHAOS_REPORT) $(GO) test -race -count=1 -p 1 -timeout 30m ./... 2>&1 | tee $(TEST_LOG); \
	  status=$$?; \
	  if [ -f $(CHAOS_REPORT) ]; then echo; cat $(CHAOS_REPORT); echo; grep -E '^(ok|FAIL|---)' $(TEST_LOG); fi; \
	  exit $$status

## test-otel: the OpenTelemetry adapter's tests (redlockotel/, its own module; no servers needed)
test-otel:
	cd redlockotel && $(GO) test -race -count=1 ./...

## chaos: the long soak (10 clients, random faults, a fenced counter) for CHAOS_DURATION (default 10m), then its table
chaos: redis-image
	@rm -f $(CHAOS_REPORT)
	@REDLOCK_CHAOS_DURATION=$(CHAOS_DURATION) REDLOCK_CHAOS_REPORT=$(CHAOS_REPORT) \
	  $(GO) test -run '^TestChaosSoak$$' -count=1 -timeout 3h -v . ; \
	  status=$$?; [ -f $(CHAOS_REPORT) ] && cat $(CHAOS_REPORT); exit $$status

## model: the exhaustive protocol model (TestModel*) at its deep bounds: more clients, nodes and steps; takes minutes (docs/model.md)
model: redis-image
	$(GO) test -run 'Model' -count=1 -timeout 2h -v . -args -long

## lint: gofmt, go vet, staticcheck on every module of the repository (MODULES)
lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	@set -e; for m in $(MODULES); do echo "go vet ($$m)"; (cd $$m && $(GO) vet ./...); done

staticcheck: tools
	@set -e; for m in $(MODULES); do echo "staticcheck ($$m)"; (cd $$m && $(STATICCHECK) ./...); done

tools: $(STATICCHECK)

$(STATICCHECK):
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## consumer-check: go get the root module and redlockotel at v0.1.0 from a local proxy of this tree, as a user would; build and run the README's program on three redis-server nodes and redlockotel's Example; print the downloads and binary sizes; fail above 42 module zips
consumer-check: redis-server
	bash scripts/consumer-check.sh

## redis-image: make sure $(REDLOCK_REDIS_IMAGE) exists locally (pull, or build FROM scratch from Debian's redis-server)
redis-image:
	bash scripts/redis-image.sh

## postgres: install Debian's PostgreSQL server if missing (the SQL guard tests, guard/sqltest/, start their own in a temp dir)
postgres:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		$(SUDO) apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql; \
	fi

## bench: the comparison with redsync, redislock and the protocol's floor on 5 local redis-server nodes (bench/, its own module); writes BENCHMARKS.md and copies its figures into README.md. BENCH_FLAGS: e.g. -rounds 5
bench: redis-server
	cd bench && $(GO) run . -out ../BENCHMARKS.md $(BENCH_FLAGS)
	REDLOCK_README_FIGURES=update $(GO) test -count=1 -run '^TestReadmeBenchFigures$$' .

## bench-micro: go test micro-benchmarks of the pieces (uncontended acquire/release next to a parallel PING round), for profiling
bench-micro: redis-image
	$(GO) test -run '^$$' -bench . -benchmem -count 5 .

## redis-server: install Debian's redis-server if missing (the bench, consumer-check and examples/quickstart's test start their own nodes from the binary)
redis-server:
	@if ! command -v redis-server >/dev/null 2>&1; then \
		$(SUDO) apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server && \
		{ ! command -v systemctl >/dev/null 2>&1 || $(SUDO) systemctl disable --now redis-server >/dev/null 2>&1 || true; }; \
	fi

## compose-up / compose-down: five persistent masters on 127.0.0.1:7001-7005 for trying the library by hand
compose-up: redis-image
	docker-compose up -d
compose-down:
	docker-compose down -v
