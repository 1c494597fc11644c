# tare: build, test, bench, lint. Everything a fresh machine needs is installed by the targets themselves.
GO        ?= go
BIN       ?= bin/tare
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/tare-dev/tare/internal/cli.Version=$(VERSION)
GOLANGCI  ?= $(shell $(GO) env GOPATH)/bin/golangci-lint
GOLANGCI_VERSION ?= v2.15.0

.PHONY: build krew test test-short kernel-check bench bench-overhead bench-lab bench-firstrun bench-audit bench-experiment bench-agent bench-datapath bench-kernel lint measure deps docs clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/tare

# docs regenerates the CLI reference (docs/cli, one page per command) with cobra's doc generator;
# TestCLIDocsFresh (internal/cli) fails when the committed pages are stale.
docs:
	$(GO) run ./scripts/gendocs docs/cli

# krew builds what a release publishes for krew (kubectl krew install tare): an archive per Linux
# architecture in KREW_ARCHES (the tare executable and README.md) and deploy/krew/tare.yaml with the
# version and each archive's SHA-256 filled in, all in KREW_DIST. VERSION must be a release tag (vX.Y.Z).
KREW_ARCHES ?= amd64 arm64
KREW_DIST   ?= dist/krew
krew:
	@case "$(VERSION)" in v[0-9]*.[0-9]*.[0-9]*) ;; *) echo "make krew: VERSION=$(VERSION) is not a release tag vX.Y.Z" >&2; exit 2;; esac
	rm -rf $(KREW_DIST) && mkdir -p $(KREW_DIST)
	sed 's/__VERSION__/$(VERSION)/g' deploy/krew/tare.yaml > $(KREW_DIST)/tare.yaml
	set -e; for arch in $(KREW_ARCHES); do \
		d=$$(mktemp -d); \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $$d/tare ./cmd/tare; \
		cp README.md $$d/; \
		tar -C $$d -czf $(KREW_DIST)/tare_linux_$$arch.tar.gz tare README.md; rm -rf $$d; \
		sum=$$(sha256sum $(KREW_DIST)/tare_linux_$$arch.tar.gz | cut -d' ' -f1); \
		sed -i "s/__SHA256_LINUX_$$(echo $$arch | tr a-z A-Z)__/$$sum/" $(KREW_DIST)/tare.yaml; \
	done

# apt_install installs Debian packages as root: scripts/asroot.sh goes through sudo only when make does not
# run as root, and says so when there is neither (measure re-runs itself through it too).
apt_install = ./scripts/asroot.sh "make $@ installs $(1) with apt-get" \
	sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(1) >/dev/null'

# deps installs the peers the tests compare against (pidstat from sysstat), the browser the HTML
# report is tested in (Debian's chromium, driven headless), promtool (Debian's prometheus) that lints tare
# agent's /metrics, the exporters bench-agent runs it beside, gcc, which builds tare profile's test
# program with a known hot function, and the data-path peers (iperf3, sockperf, fio) whose programs and
# libraries the lab tests read before any lab installs them.
deps:
	@command -v pidstat >/dev/null || $(call apt_install,sysstat)
	@command -v chromium >/dev/null || $(call apt_install,chromium)
	@command -v promtool >/dev/null || $(call apt_install,prometheus)
	@command -v prometheus-node-exporter >/dev/null || $(call apt_install,prometheus-node-exporter)
	@command -v prometheus-process-exporter >/dev/null || $(call apt_install,prometheus-process-exporter)
	@command -v gcc >/dev/null || $(call apt_install,gcc)
	@command -v iperf3 >/dev/null || $(call apt_install,iperf3)
	@command -v sockperf >/dev/null || $(call apt_install,sockperf)
	@command -v fio >/dev/null || $(call apt_install,fio)

# measure is the README's main command: build tare, install the lab's components, start the lab, measure it
# (DURATION, default 60s) and print the overhead report, then stop the lab. KEEP=1 leaves it running; a lab
# that is already running is measured and left alone. Ctrl-C ends the measurement early (the report is
# still printed) and the lab is still stopped. It needs root (taskstats, a real cluster): run as root it
# needs no sudo (a fresh machine has none); run as another user it re-runs itself with sudo.
ifeq ($(shell id -u),0)
measure: build
	./$(BIN) lab install
	@trap : INT; \
	if ./$(BIN) lab status >/dev/null 2>&1; then started=; else ./$(BIN) lab up $(LAB_FLAGS) || exit 1; started=1; fi; \
	./$(BIN) measure --duration $${DURATION:-60s} --kubeconfig "$$(./$(BIN) lab env --kubeconfig)"; rc=$$?; \
	if [ -n "$$started" ] && [ -z "$$KEEP" ]; then ./$(BIN) lab down; fi; exit $$rc
else
measure:
	./scripts/asroot.sh "make measure installs, starts and measures the lab" \
		$(MAKE) measure GO="$$(command -v $(GO))" DURATION="$(DURATION)" KEEP="$(KEEP)" LAB_FLAGS="$(LAB_FLAGS)"
endif

# test: vet, then the race detector over everything but the real-process timing tests (-short), then every
# test without it, packages one at a time so CPU ground-truth tests do not compete. Every fuzz target's seeds
# and past findings run there as tests; new random inputs are make fuzz's job (a finding must not decide
# whether an unrelated change lands). Both passes go through scripts/gotest: go test's own output, then the
# time of every package and of the slowest tests. scripts/testtools first builds what the tests would build
# on first use (the lab's components, Prometheus, helm, the Prometheus Operator), out of their timeouts.
test: deps
	$(GO) vet ./...
	$(GO) run ./scripts/testtools
	GO=$(GO) $(GO) run ./scripts/gotest -race -short -count=1 -timeout 20m ./...
	GO=$(GO) $(GO) run ./scripts/gotest -count=1 -p 1 -timeout 75m ./...
	GO=$(GO) ./scripts/kernelvm/run

# The BPF paths on a real Linux 6.1 (Debian 12's cloud kernel) in QEMU: see scripts/kernelvm/run.
kernel-check:
	GO=$(GO) ./scripts/kernelvm/run

test-short:
	$(GO) test -short -count=1 ./...

# fuzz: every fuzz target (parsers of kernel files, recordings, audit logs, metrics, profiles and specs) for
# a few seconds each, about 2-3 minutes in all; FUZZTIME=1m make fuzz for longer. A finding fails the pass
# and stays under the package's testdata/fuzz/, replayed by every go test from then on.
.PHONY: fuzz
fuzz:
	GO=$(GO) ./scripts/fuzz.sh

# bench: tare's own overhead next to pidstat, then the lab (time to Ready and first pod, cold and warm;
# idle CPU upstream vs tuned), explain's audit-log reader against jq on 1 GiB, sequential experiments
# (--mde 2% --budget 10m) against a planted 2% change and A/A, the agent beside the exporters, and a default
# tare datapath net run, and tare profile and the block I/O tracer beside perf record and bpftrace. Root.
bench: bench-overhead bench-lab bench-audit bench-experiment bench-agent bench-datapath bench-kernel

# bench-overhead: tare beside pidstat, as tare chooses its task pass and with each pass forced
# (TARE_TASK_PASS), with ~300 processes (30 s runs) and 3,000 idle ones (60 s runs), and start-up: about
# 25 minutes at the defaults (3 interleaved repetitions; -reps, -passes, -skip-* to shorten it).
bench-overhead: build deps
	$(GO) run ./bench/overhead -tare ./$(BIN)

bench-lab: build
	$(GO) run ./bench/lab -tare ./$(BIN)

# bench-firstrun: what make measure takes on a fresh machine, from empty Go and tare caches (removed after),
# then warm: tare's build, lab install, lab up and a 60 s measurement, each step's wall and CPU time. Root;
# about 10 minutes.
bench-firstrun:
	$(GO) run ./bench/lab -firstrun

bench-audit:
	@command -v jq >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null)
	$(GO) run ./bench/audit

# bench-experiment: where the control plane's CPU noise comes from (16 min of one idle lab), which concurrent
# designs remove it (24 idle labs measured 11 min, every design replayed on them), then 10 experiments
# with a planted 2% change in control-plane CPU and 20 A/A, interleaved, each --mde 2% --budget 10m on 16
# control-plane-only labs, the variants at once on 8 each, dealt at random every round, 114 s windows
# (concurrent, the lab-level estimate): how often each is found (exact binomial
# intervals) and the wall time. About 3.5 hours (the 30 experiments 5-10 min each); BENCH_EXPERIMENT='-planted 2 -aa 2' for a
# short run, '-noise 0 -designs 0' to skip the noise and the designs, '-replicas 1 -concurrent=false'
# for one lab.
bench-experiment: build
	$(GO) run ./bench/experiment -tare ./$(BIN) -designs 11m -replicas 16 -concurrent -window 114s $(BENCH_EXPERIMENT)

# bench-agent: tare agent beside prometheus-node-exporter and prometheus-process-exporter, each scraped every
# 15 s for 5 minutes, on the node as it is and then with 8 short processes started a second: CPU and peak
# RSS of each, and the ratios. Root.
bench-agent: build deps
	$(GO) run ./bench/agent -tare ./$(BIN) -duration 5m
	$(GO) run ./bench/agent -tare ./$(BIN) -duration 5m -churn 8

# bench-datapath: a default tare datapath net run on a two-node lab: how long it takes, each ratio's interval
# width, and the smallest throughput difference the host path's noise lets it detect. Root.
bench-datapath: build
	$(GO) run ./bench/datapath -tare ./$(BIN)

# bench-kernel: tare profile beside perf record -F 99 -a -g over the same spans with one core busy (CPU, samples,
# output, the busy core's slowdown), then fio's direct random reads alone, beside tare measure, tare measure
# --block-io and bpftrace's biolatency on the same tracepoints (IOPS, p50/p99 latency, each tracer's CPU and
# its BPF programs' in-kernel time); 3 repetitions interleaved, about 5 minutes. Installs perf, fio and
# bpftrace if missing. Root.
bench-kernel: build
	@command -v perf >/dev/null || $(call apt_install,linux-perf)
	@command -v fio >/dev/null || $(call apt_install,fio)
	@command -v bpftrace >/dev/null || $(call apt_install,bpftrace)
	$(GO) run ./bench/kernel -tare ./$(BIN)

# lint installs golangci-lint GOLANGCI_VERSION from the module proxy when GOLANGCI is missing or another
# version, and holds every package to the Imports line of its doc.go (internal/archtest).
lint:
	@$(GOLANGCI) version 2>/dev/null | grep -q ' $(GOLANGCI_VERSION:v%=%) ' || \
		GOBIN='$(dir $(GOLANGCI))' $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)
	$(GOLANGCI) run ./...
	$(GO) test -count=1 -run 'TestImportRules' ./internal/archtest/
	$(GO) mod tidy -diff

clean:
	rm -rf bin dist
