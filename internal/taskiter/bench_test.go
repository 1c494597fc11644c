package taskiter_test

import (
	"errors"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/taskiter"
	"github.com/tare-dev/tare/internal/testload"
)

// BenchmarkChanged measures one pass of each BPF task pass, side by side, on a quiet machine filled with
// idle sleepers up to 300 and 3,000 processes: the BPF program filters (only groups whose CPU moved come
// out). cpu-ns/op is the CPU the pass costs this process, kernel time included, from getrusage; incomplete/op
// the share of PassBPFIter's passes that could not add up a group (threads born or ended mid-walk).
func BenchmarkChanged(b *testing.B) {
	for _, n := range []int{300, 3000} {
		for _, p := range bpfPasses {
			b.Run("procs="+strconv.Itoa(n)+"/pass="+string(p), func(b *testing.B) {
				fillTo(b, n)
				it := openIter(b, p)
				gs, _ := it.Changed(nil)
				incomplete := 0
				passes(b, func() (int, error) {
					var err error
					gs, err = it.Changed(gs[:0])
					if errors.Is(err, taskiter.ErrIncomplete) {
						incomplete++
						err = nil
					}
					return len(gs), err
				})
				b.ReportMetric(float64(incomplete)/float64(b.N), "incomplete/op")
			})
		}
	}
}

// BenchmarkAllFilteredInGo is the alternative to filtering in BPF: every group comes out and Go compares
// it with the previous pass.
func BenchmarkAllFilteredInGo(b *testing.B) {
	for _, n := range []int{300, 3000} {
		for _, p := range bpfPasses {
			b.Run("procs="+strconv.Itoa(n)+"/pass="+string(p), func(b *testing.B) {
				fillTo(b, n)
				it := openIter(b, p)
				last := map[int]uint64{}
				var gs []taskiter.Group
				passes(b, func() (int, error) {
					var err error
					if gs, err = it.All(gs[:0]); err != nil && !errors.Is(err, taskiter.ErrIncomplete) {
						return 0, err
					}
					moved := 0
					for _, g := range gs {
						if last[g.TGID] != g.CPUNs {
							last[g.TGID] = g.CPUNs
							moved++
						}
					}
					return moved, nil
				})
			})
		}
	}
}

func passes(b *testing.B, pass func() (int, error)) {
	b.Helper()
	var before, after unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &before)
	b.ResetTimer()
	out := 0
	for b.Loop() {
		n, err := pass()
		if err != nil {
			b.Fatal(err)
		}
		out += n
	}
	b.StopTimer()
	_ = unix.Getrusage(unix.RUSAGE_SELF, &after)
	cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(out)/float64(b.N), "groups/op")
	b.ReportMetric(float64(countProcs()), "procs")
}

// fillTo starts idle sleepers until the machine has about n processes.
func fillTo(b *testing.B, n int) {
	b.Helper()
	if have := countProcs(); have < n {
		testload.Sleepers(b, n-have)
	}
}

func countProcs() int {
	pids, _ := kernel.ListPIDs("/proc")
	return len(pids)
}

// BenchmarkOpen measures what each pass adds to tare's start-up: reading the kernel's BTF for CO-RE,
// loading and verifying the program, attaching it. Each Open decodes the kernel BTF anew, as tare does.
func BenchmarkOpen(b *testing.B) {
	for _, p := range bpfPasses {
		b.Run("pass="+string(p), func(b *testing.B) {
			openIter(b, p) // skips where unsupported
			var before, after unix.Rusage
			_ = unix.Getrusage(unix.RUSAGE_SELF, &before)
			for b.Loop() {
				it, err := taskiter.OpenPass(p)
				if err != nil {
					b.Fatal(err)
				}
				_ = it.Close()
			}
			_ = unix.Getrusage(unix.RUSAGE_SELF, &after)
			b.ReportMetric(float64(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano())/float64(b.N), "cpu-ns/op")
		})
	}
}
