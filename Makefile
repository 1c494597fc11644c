# tare: build, test, bench, lint. Everything a fresh machine needs is installed by the targets themselves.
GO        ?= go
BIN       ?= bin/tare
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/tare-dev/tare/internal/cli.Version=$(VERSION)
GOLANGCI  ?= $(shell $(GO) env GOPATH)/bin/golangci-lint
GOLANGCI_VERSION ?= v2.15.0

.PHONY: build test test-short bench bench-overhead bench-lab bench-audit bench-experiment lint measure deps clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/tare

# deps installs the peers the tests compare against (pidstat from sysstat) and the browser the HTML
# report is tested in (Debian's chromium, driven headless).
deps:
	@command -v pidstat >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sysstat >/dev/null)
	@command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

# measure is the README's main command: build tare, install the lab's components, start the lab, measure it
# (DURATION, default 60s) and print the overhead report, then stop the lab. KEEP=1 leaves it running; a lab
# that is already running is measured and left alone. Ctrl-C ends the measurement early (the report is
# still printed) and the lab is still stopped.
measure: build
	./$(BIN) lab install
	@trap : INT; \
	if ./$(BIN) lab status >/dev/null 2>&1; then started=; else ./$(BIN) lab up $(LAB_FLAGS) || exit 1; started=1; fi; \
	./$(BIN) measure --duration $${DURATION:-60s} --kubeconfig "$$(./$(BIN) lab env --kubeconfig)"; rc=$$?; \
	if [ -n "$$started" ] && [ -z "$$KEEP" ]; then ./$(BIN) lab down; fi; exit $$rc

# test: vet, then the race detector over everything but the real-process timing tests (-short), then every
# test without it, packages one at a time so CPU ground-truth tests do not compete.
test: deps
	$(GO) vet ./...
	$(GO) test -race -short -count=1 -timeout 20m ./...
	$(GO) test -count=1 -p 1 -timeout 30m ./...

test-short:
	$(GO) test -short -count=1 ./...

# bench: tare's own overhead next to pidstat, then the lab (time to Ready and first pod, cold and warm;
# idle CPU upstream vs tuned), explain's audit-log reader against jq on 1 GiB, and how long an A/B
# experiment needs to detect a 5% change in control-plane CPU. Root.
bench: bench-overhead bench-lab bench-audit bench-experiment

bench-overhead: build deps
	$(GO) run ./bench/overhead -tare ./$(BIN)

bench-lab: build
	$(GO) run ./bench/lab -tare ./$(BIN)

bench-audit:
	@command -v jq >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null)
	$(GO) run ./bench/audit

bench-experiment: build
	$(GO) run ./bench/experiment -tare ./$(BIN)

lint:
	@test -x $(GOLANGCI) || $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)
	$(GOLANGCI) run ./...
	$(GO) mod tidy -diff

clean:
	rm -rf bin
