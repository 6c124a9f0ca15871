# handoff: the two commands of the README, and the ones behind them.
#
#   make demo   the seed case end to end: emit -> Kafka -> ingest -> ClickHouse -> diagnose
#   make test   installs and starts ClickHouse and Kafka when missing, then runs every test
#
# Services live on loopback with their data under .data/ (HANDOFF_DATA_DIR);
# `make services-down` stops them.

SHELL := /bin/bash
GO ?= go
DATA_DIR ?= $(CURDIR)/.data
export HANDOFF_DATA_DIR := $(DATA_DIR)
BIN := $(CURDIR)/bin/handoff

.PHONY: all build test unit vet services services-down demo bench bench-replay fuzz clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/handoff

vet:
	$(GO) vet ./...
	@# The rooms' import rules (design.md section 7), checked on every run.
	@bash deploy/check-imports.sh
	@# No tracked binary or file over 1 MiB; go.mod tidy.
	@bash deploy/check-tree.sh

services:
	bash deploy/services/up.sh

services-down:
	bash deploy/services/down.sh

# Every test, with real ClickHouse and Kafka.
test: vet services
	set -a; . $(DATA_DIR)/services.env; set +a; \
	$(GO) test -count=1 -timeout 30m ./...

# Tests that need ClickHouse or Kafka. They fail, never skip, without the
# services, so `make unit` leaves them out by name (go test -skip). A new test
# that needs the services goes on this list; its name must be unique in the
# module (-skip matches names, not packages), which `make unit` checks.
INTEGRATION_TESTS := TestDiagnoseFromClickHouseEqualsFromFile|TestClickHouseDown|TestCrash|TestEndToEnd|TestKafkaDown|TestEmitToKafka|TestEnsureIdempotent|TestStoreRoundTrip

# Every test that needs no services, in every package (pure tests beside
# integration tests included). The service addresses are unset, so a test
# that needs them and is missing from INTEGRATION_TESTS fails here.
unit: vet
	@for n in $(subst |, ,$(INTEGRATION_TESTS)); do \
		c=$$(find . -path ./.data -prune -o -name '*_test.go' -print | xargs grep -hE "^func $$n\(" | wc -l); \
		[ "$$c" = 1 ] || { echo "make unit: INTEGRATION_TESTS names $$n, defined $$c times in the module (want exactly once): rename it or fix the list"; exit 1; }; \
	done
	env -u HANDOFF_CLICKHOUSE_ADDR -u HANDOFF_KAFKA_BROKERS \
		$(GO) test -count=1 -skip '^($(INTEGRATION_TESTS))$$' ./...

demo: build
	bash deploy/demo/demo.sh

bench-replay:
	$(GO) test -run '^$$' -bench . -benchmem -cpu 1 ./analyzer/replay/ ./model/

bench: build
	bash deploy/bench/diagnose.sh

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 60s ./model/
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 60s ./model/contract/

clean:
	rm -rf bin
