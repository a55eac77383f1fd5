# redlock — the front door is `make demo` and `make test`.

GO          ?= go
GOBIN       := $(shell $(GO) env GOPATH)/bin
STATICCHECK := $(GOBIN)/staticcheck
STATICCHECK_VERSION := v0.8.2
export REDLOCK_REDIS_IMAGE ?= redis:7

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

SHELL          := /bin/bash
CHAOS_DURATION ?= 10m
CHAOS_REPORT   := $(CURDIR)/.chaos-report.txt
TEST_LOG       := $(CURDIR)/.test.log

.PHONY: demo chaos test lint vet staticcheck fmt-check redis-image postgres tools bench compose-up compose-down

## demo: five local Redis nodes in Docker, four workers on one lock, node kills/restarts and a worker paused past its lease; prints the summary and writes the HTML timeline
demo: redis-image
	$(GO) run ./cmd/redlock demo $(DEMO_FLAGS)

## test: build the Redis image and install PostgreSQL if needed, lint, and run every test with -race against real servers
# The chaos summary table is printed after the tests, then go test's
# package lines again, so that the run still ends with the test results.
test: redis-image postgres lint
	@rm -f $(CHAOS_REPORT)
	@set -o pipefail; REDLOCK_CHAOS_REPORT=$(CHAOS_REPORT) $(GO) test -race -count=1 -p 1 -timeout 30m ./... 2>&1 | tee $(TEST_LOG); \
	  status=$$?; \
	  if [ -f $(CHAOS_REPORT) ]; then echo; cat $(CHAOS_REPORT); echo; grep -E '^(ok|FAIL|---)' $(TEST_LOG); fi; \
	  exit $$status

## chaos: the long soak (10 clients, random faults, a fenced counter) for CHAOS_DURATION (default 10m), then its table
chaos: redis-image
	@rm -f $(CHAOS_REPORT)
	@REDLOCK_CHAOS_DURATION=$(CHAOS_DURATION) REDLOCK_CHAOS_REPORT=$(CHAOS_REPORT) \
	  $(GO) test -run '^TestChaosSoak$$' -count=1 -timeout 3h -v . ; \
	  status=$$?; [ -f $(CHAOS_REPORT) ] && cat $(CHAOS_REPORT); exit $$status

## lint: gofmt, go vet, staticcheck
lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck: tools
	$(STATICCHECK) ./...

tools: $(STATICCHECK)

$(STATICCHECK):
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## redis-image: make sure $(REDLOCK_REDIS_IMAGE) exists locally (pull, or build FROM scratch from Debian's redis-server)
redis-image:
	bash scripts/redis-image.sh

## postgres: install Debian's PostgreSQL server if missing (the SQLGuard tests start their own in a temp dir)
postgres:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		$(SUDO) apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql; \
	fi

## bench: uncontended acquire/release next to a parallel PING round to the same nodes, in one run
bench: redis-image
	$(GO) test -run '^$$' -bench . -benchmem -count 5 .

## compose-up / compose-down: five persistent masters on 127.0.0.1:7001-7005 for trying the library by hand
compose-up: redis-image
	docker-compose up -d
compose-down:
	docker-compose down -v
