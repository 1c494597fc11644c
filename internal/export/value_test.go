package export

import (
	"math"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/sample"
)

// TestNodeBusyIsTheReferenceCounter: the exported node busy of the fixture recording is, interval by
// interval, the rise of the node's task-time counter that the recording holds raw (Node.TasksCPUNs, the
// scheduler's nanoseconds from cpuacct) over the interval's elapsed time, and each /proc/stat mode is the
// rise of its own raw counter: the series carry the recorded values, not a reworking of them.
func TestNodeBusyIsTheReferenceCounter(t *testing.T) {
	t.Parallel()
	rec := readFixture(t)
	// The fixture predates the recorded reference and tickless idle: node busy is cpuacct's task time alone.
	if m := rec.Meta; !strings.HasSuffix(m.CgroupSource, "cpuacct.usage") || m.IRQTime {
		t.Fatalf("the fixture read %q (irq time apart: %v); this test expects cpuacct alone", m.CgroupSource, m.IRQTime)
	}
	var busy, user *Series
	series := Build(rec)
	for i := range series {
		switch s := &series[i]; {
		case s.Metric == "tare_node_busy_millicores":
			busy = s
		case s.Metric == "tare_node_cpu_millicores" && s.Labels[labelMode] == "user":
			user = s
		}
	}
	if busy == nil || user == nil || busy.Labels[labelReference] != string(sample.RefCgroupV1) {
		t.Fatalf("node busy %+v, user %+v", busy, user)
	}
	ss := rec.Samples
	if len(busy.Points) != len(ss)-1 || len(user.Points) != len(ss)-1 {
		t.Fatalf("%d busy and %d user points for %d samples", len(busy.Points), len(user.Points), len(ss))
	}
	for i := 1; i < len(ss); i++ {
		ns := float64(ss[i].Node.TasksCPUNs - ss[i-1].Node.TasksCPUNs)
		want := ns / float64(ss[i].Elapsed.Nanoseconds()) * 1000
		if p := busy.Points[i-1]; !p.Time.Equal(ss[i].Time) || math.Abs(p.Value-want) > 1e-9*want {
			t.Errorf("interval %d: node busy %v at %v, the counter rose %.0f ns in %v: %.3fm", i, p.Value, p.Time, ns, ss[i].Elapsed, want)
		}
		secs := ss[i].Node.CPU.User - ss[i-1].Node.CPU.User
		if want := secs / ss[i].Elapsed.Seconds() * 1000; math.Abs(user.Points[i-1].Value-want) > 1e-9 {
			t.Errorf("interval %d: user %vm, /proc/stat's user rose %.2f s: %.3fm", i, user.Points[i-1].Value, secs, want)
		}
	}
}
