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

.PHONY: all build test unit vet services services-down demo bench bench-replay fuzz clean cluster cluster-down cluster-status cluster-test

all: build

build:
	$(GO) build -o $(BIN) ./cmd/handoff

vet:
	$(GO) vet ./...
	@# The rooms' import rules (docs/architecture.md), checked on every run.
	@bash deploy/check-imports.sh
	@# No tracked binary or file over 1 MiB; go.mod tidy.
	@bash deploy/check-tree.sh
	@# Every relative link and #anchor in the Markdown resolves.
	@bash deploy/check-links.sh
	@# The repository stands alone: no file cites an outside file or this
	@# project's issue numbers (docs/testing.md).
	@bash deploy/check-standalone.sh

services:
	bash deploy/services/up.sh

services-down:
	bash deploy/services/down.sh

# Every test, with real ClickHouse and Kafka.
test: vet services
	set -a; . $(DATA_DIR)/services.env; set +a; \
	$(GO) test -count=1 -timeout 30m ./...

# Every test that needs no services, in every package (pure tests beside
# integration tests included). Integration tests ask internal/testenv for
# the services; under -short it skips them with the reason (the one place a
# test may skip), while `make test` runs without -short, where a missing
# service fails the test with how to start it. The service addresses are
# unset, so a test that reaches for a service without testenv fails here.
unit: vet
	env -u HANDOFF_CLICKHOUSE_ADDR -u HANDOFF_KAFKA_BROKERS \
		$(GO) test -short -count=1 ./...

# The local cluster (deploy/cluster/cluster.sh, docs/cluster.md): ZooKeeper,
# three Kafka brokers, ClickHouse as two shards of two replicas, two
# ingesters and two detectors, on loopback ports 26xxx beside the services.
cluster:
	bash deploy/cluster/cluster.sh up

cluster-down:
	bash deploy/cluster/cluster.sh down

cluster-status:
	bash deploy/cluster/cluster.sh status

# The cluster's tests (build tag cluster; not part of make test). The
# single-server services are the reference a read through the cluster is
# compared with.
cluster-test: cluster services
	set -a; . $(DATA_DIR)/services.env; . $(DATA_DIR)/cluster/cluster.env; set +a; \
	$(GO) test -tags cluster -count=1 -v -timeout 150m ./deploy/cluster/

demo: build
	bash deploy/demo/demo.sh

bench-replay:
	$(GO) test -run '^$$' -bench . -benchmem -cpu 1 ./analyzer/replay/ ./model/

# Every benchmark of deploy/bench in sequence with its defaults, then one
# table of their figures (deploy/bench/README.md); BENCH= runs some only:
#   make bench BENCH=serve
#   make bench BENCH="replay openbatch"
bench: build
	BENCH="$(BENCH)" bash deploy/bench/all.sh

# Every fuzz target of the tree, each for FUZZTIME (make fuzz FUZZTIME=10m);
# deploy/check-tree.sh fails when one is missing here.
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzFreeze$$' -fuzztime $(FUZZTIME) ./analyzer/detect/
	$(GO) test -run '^$$' -fuzz '^FuzzParseFinding$$' -fuzztime $(FUZZTIME) ./analyzer/detect/
	$(GO) test -run '^$$' -fuzz '^FuzzParseFindingFastPath$$' -fuzztime $(FUZZTIME) ./analyzer/detect/
	$(GO) test -run '^$$' -fuzz '^FuzzAppendJSONText$$' -fuzztime $(FUZZTIME) ./analyzer/replay/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./deploy/examples/
	$(GO) test -run '^$$' -fuzz '^FuzzKeyParser$$' -fuzztime $(FUZZTIME) ./judge/backfill/
	$(GO) test -run '^$$' -fuzz '^FuzzReplayRowSplit$$' -fuzztime $(FUZZTIME) ./store/history/
	$(GO) test -run '^$$' -fuzz '^FuzzAppendRecords$$' -fuzztime $(FUZZTIME) ./ingest/consumer/
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME) ./ingest/jsonl/
	$(GO) test -run '^$$' -fuzz '^FuzzParseDiagnosis$$' -fuzztime $(FUZZTIME) ./ingest/results/
	$(GO) test -run '^$$' -fuzz '^FuzzParseFinding$$' -fuzztime $(FUZZTIME) ./ingest/results/
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./model/
	$(GO) test -run '^$$' -fuzz '^FuzzParseCron$$' -fuzztime $(FUZZTIME) ./model/contract/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./model/contract/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeFast$$' -fuzztime $(FUZZTIME) ./model/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./model/manifest/
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./model/openlineage/
	$(GO) test -run '^$$' -fuzz '^FuzzParseTime$$' -fuzztime $(FUZZTIME) ./model/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeView$$' -fuzztime $(FUZZTIME) ./model/
	$(GO) test -run '^$$' -fuzz '^FuzzParams$$' -fuzztime $(FUZZTIME) ./query/dash/

clean:
	rm -rf bin
