package agent

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/tare-dev/tare/internal/sample"
)

// Options configure an agent.
type Options struct {
	// Listen is the address to serve on (host:port); Listener, when set, is used instead (tests pass one
	// bound to 127.0.0.1:0). The agent closes it.
	Listen   string
	Listener net.Listener
	// Access, when set, serves TLS and lets only callers the API server vouches for, with the right to the
	// path, read anything but /healthz. Nil serves every caller in plain HTTP: only for loopback addresses
	// (the caller of Run checks that).
	Access *Access
	// HealthListen, when set, is a second address serving only /healthz in plain HTTP, for the kubelet's
	// probes (on 127.0.0.1 of the node: a flood of the main port cannot fail them); HealthListener, when
	// set, is used instead. The agent closes it.
	HealthListen   string
	HealthListener net.Listener
	// ServeCmdlines serves the command lines of processes and children in /summary (redacted); without it
	// /summary names each by its program.
	ServeCmdlines bool
	// Interval is the time between samples, Detail the time between memory, disk and thread reads, and
	// Window the span of the ring of samples /summary and the top processes are computed over.
	Interval, Detail, Window time.Duration
	// TopProcesses is how many single processes /metrics exports: the top N by CPU over the window.
	TopProcesses int
	// BlockIO counts block I/O by group with BPF on the block tracepoints (blockio), where allowed; where
	// not, a limitation says why and the groups keep /proc/PID/io's bytes only.
	BlockIO bool
	// Node is the node's name, exported in tare_agent_info.
	Node string
	// Version is tare's version.
	Version string
	// Sampler holds the roots of the host's files and the pod namer; its Interval and Detail are set from
	// the fields above.
	Sampler sample.Options
	// Limitations are the caller's notes, added to the sampler's in /summary's meta.
	Limitations []string
	// Log receives one line per warning (nil discards them).
	Log io.Writer
	// OnSample, when set, is called with each sample once /metrics and /summary include it, from the
	// sampling goroutine (tests use it to know which sample a scrape reflects).
	OnSample func(sample.Sample)
}

// validate checks the options and fills in the defaults' derived values.
func (o *Options) validate() error {
	if err := sample.CheckInterval(o.Interval); err != nil {
		return err
	}
	switch {
	case o.Window < 2*o.Interval:
		return fmt.Errorf("--window %s must hold at least two --interval %s samples", o.Window, o.Interval)
	case o.Window/o.Interval > maxRing:
		return fmt.Errorf("--window %s / --interval %s is %d samples, more than the %d the ring holds: lengthen the interval or shorten the window",
			o.Window, o.Interval, o.Window/o.Interval, maxRing)
	case o.TopProcesses < 0:
		return fmt.Errorf("--top-processes %d: want 0 or more", o.TopProcesses)
	case o.Listener == nil && o.Listen == "":
		return errors.New("no address to listen on: pass --listen host:port")
	}
	// Block I/O is read on detail samples, and a process that did I/O and ended is known until its last
	// sample leaves the ring: a detail interval is at most the window less one interval.
	o.Detail = min(max(o.Detail, o.Interval), o.Window-o.Interval)
	return nil
}

// ringLen is the number of samples the ring holds: the window's intervals plus the baseline.
func (o Options) ringLen() int { return int(o.Window/o.Interval) + 1 }

// maxRing bounds the ring, whatever --window and --interval ask: a day at 1 s.
const maxRing = 86400

// The memory bound, stated in --help and docs/guides/deploy-the-agent.md and tested with thousands of short-lived processes.
// A sample row (sample.ProcSample) is 72 bytes; a process the agent knows (its identity, counters and last
// reading) is under 1 KiB with its strings; the sampler keeps about as much per live process, its
// open thread files aside.
const (
	baseBytes    = 16 << 20 // the Go runtime, client_golang, the HTTP server, the sampler's sources
	sampleBytes  = 512      // one sample without its rows
	rowBytes     = 96       // one process row in one sample, slice growth included
	processBytes = 2 << 10  // a process the agent knows, plus the sampler's state for it
)

// MemoryBound is the most Go heap the agent uses when at most processes processes live at once and at
// most as many again end within one window: the ring of samples, each listing at most every process,
// the processes the ring names, and a fixed base. Rows are listed only for processes that ran in the
// interval, and on detail samples for every process, so the ring is usually far below its bound.
func MemoryBound(window, interval time.Duration, processes int) uint64 {
	n := uint64(window/interval) + 1
	p := uint64(processes)
	return baseBytes + n*(sampleBytes+rowBytes*p) + 2*p*processBytes
}

// DescribeBound states the memory bound for people (tare agent --help and docs/guides/deploy-the-agent.md), with its figure
// for 1,000 processes at the default window and interval.
func DescribeBound() string {
	return fmt.Sprintf(`Memory is bounded: the agent keeps a ring of --window / --interval + 1 samples (601 by default) and
the processes they name or that still live. With at most P processes alive at once and at most P more
ending within a window, its Go heap stays under %d MiB + samples x (%d B + %d B x P) + %d KiB x P: %.0f MiB
for 1,000 processes at the defaults, far less in practice (a sample lists only the processes that ran,
and every process only every --detail-interval). Groups and pods gone for longer than --window stop
being exported, so churning pods do not grow the series count.`,
		baseBytes>>20, sampleBytes, rowBytes, 2*processBytes>>10, float64(MemoryBound(10*time.Minute, time.Second, 1000))/(1<<20))
}
