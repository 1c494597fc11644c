package sample

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// BenchmarkSample measures one sample of this machine, with idle sleepers added up to 300 and 3,000
// processes, at tare's defaults (1 s interval, detail every 5 s: every fifth sample reads memory and I/O).
// cpu-ns/op is this process's CPU per sample, kernel time included; filter=off reads every process as
// tare does without the BPF task iterator.
func BenchmarkSample(b *testing.B) {
	for _, n := range []int{300, 3000} {
		for _, filter := range []bool{true, false} {
			name := "procs=" + strconv.Itoa(n) + "/filter=" + map[bool]string{true: "on", false: "off"}[filter]
			b.Run(name, func(b *testing.B) {
				if have := countProcs(); have < n {
					testload.Sleepers(b, n-have)
				}
				s, err := New(context.Background(), Options{Interval: time.Second, Detail: 5 * time.Second}, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				switch {
				case !filter:
					s.act.close()
					s.act = nil
				case s.act == nil:
					testenv.Unavailable(b, "no BPF task iterator here: %v", s.Meta().Limitations)
				default:
					if err := s.act.load(); err != nil { // at once, not once it has paid for itself
						testenv.Unavailable(b, "no BPF task iterator here: %v", err)
					}
				}
				if _, err := s.Sample(); err != nil {
					b.Fatal(err)
				}
				before := selfCPU()
				b.ResetTimer()
				for b.Loop() {
					if _, err := s.Sample(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(selfCPU()-before)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(len(s.procs)), "procs")
			})
		}
	}
}

// BenchmarkBaseline measures a sampler's start: New and the baseline sample, which reads every process's
// identity, CPU, I/O and statm once (its smaps_rollup later, on its turn: refresh.go), with idle sleepers
// added up to 300 and 3,000 processes. cpu-ns/op is this
// process's CPU per start, kernel time included.
func BenchmarkBaseline(b *testing.B) {
	for _, n := range []int{300, 3000} {
		b.Run("procs="+strconv.Itoa(n), func(b *testing.B) {
			if have := countProcs(); have < n {
				testload.Sleepers(b, n-have)
			}
			before := selfCPU()
			for b.Loop() {
				s, err := New(context.Background(), Options{Interval: time.Second, Detail: 5 * time.Second}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Sample(); err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
			b.ReportMetric(float64(selfCPU()-before)/float64(b.N), "cpu-ns/op")
		})
	}
}

func countProcs() int {
	pids, _ := kernel.ListPIDs("/proc")
	return len(pids)
}
