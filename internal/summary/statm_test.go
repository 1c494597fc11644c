package summary

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/sample"
)

// TestBuildMemoryPrefersSmaps: a process whose memory some samples give from statm alone (StatmOnly, the
// sampler's deferred smaps_rollup) has the mean of its smaps_rollup readings; one that never had a
// smaps_rollup reading keeps statm's.
func TestBuildMemoryPrefersSmaps(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	statm := func(id int64, pss uint64) sample.ProcSample {
		return sample.ProcSample{ID: id, HasDetail: true, RSS: 2 * pss, PSS: pss, Private: pss, StatmOnly: true}
	}
	smaps := func(id int64, pss uint64) sample.ProcSample {
		return sample.ProcSample{ID: id, HasDetail: true, RSS: 3 * pss, PSS: pss, Private: pss / 2}
	}
	ss := series([]float64{0.1, 0.1, 0.1}, func(i int, s *sample.Sample) {
		if i == 0 {
			s.New = []sample.ProcInfo{
				{ID: 1, Key: sample.ProcKey{PID: 10}, Cmdline: "read later", Group: "etcd", GroupKind: "component"},
				{ID: 2, Key: sample.ProcKey{PID: 20}, Cmdline: "statm only", Group: "kubelet", GroupKind: "component"},
			}
		}
		s.Procs = []sample.ProcSample{statm(1, 10*mib), statm(2, 4*mib)}
		if i >= 2 {
			s.Procs[0] = smaps(1, 30*mib+uint64(i-2)*2*mib)
		}
	})
	s := Build(sample.Meta{CPUs: 2}, ss, Options{})
	got := map[string][3]float64{}
	for _, g := range s.Groups {
		got[g.Name] = [3]float64{g.RSS, g.PSS, g.Private}
	}
	// etcd: smaps_rollup at samples 2 and 3, PSS 30 and 32 MiB; kubelet: statm's 4 MiB throughout.
	want := map[string][3]float64{
		"etcd":    {93 * mib, 31 * mib, 15.5 * mib},
		"kubelet": {8 * mib, 4 * mib, 4 * mib},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("group memory (RSS, PSS, private) (-want +got):\n%s", d)
	}
}
