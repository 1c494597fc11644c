package lab

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEnvironHas(t *testing.T) {
	t.Parallel()
	want := [][]byte{[]byte("TARE_RUN_ID=ab12")}
	for _, c := range []struct {
		environ string
		has     bool
	}{
		{"PATH=/usr/bin\x00TARE_RUN_ID=ab12\x00", true},
		{"TARE_RUN_ID=ab12", true}, // no final NUL
		{"TARE_RUN_ID=ab123\x00", false},
		{"TARE_RUN_ID=ab1\x00", false},
		{"XTARE_RUN_ID=ab12\x00", false},
		{"TARE_RUN_ID=other\x00TARE_RUN_ID=ab12\x00", true}, // a duplicate: either entry counts
		{"", false},
		{"\x00\x00", false},
	} {
		if got := environHas([]byte(c.environ), want); got != c.has {
			t.Errorf("environHas(%q) = %v, want %v", c.environ, got, c.has)
		}
	}
}

// TestMarkedProcessesFixture reads a /proc captured here: two sleeps started with TARE_RUN_ID and
// TARE_EXPERIMENT (9107, 9108, both at tick 5283839), kthreadd (2) and a zombie (9155, whose environ, not
// readable on a real zombie, was given the marker to check that ended processes are skipped).
func TestMarkedProcessesFixture(t *testing.T) {
	t.Parallel()
	const root = "testdata/marked"
	const start = 5283839
	for _, c := range []struct {
		name      string
		values    []string
		notBefore uint64
		want      []ProcRef
	}{
		{"TARE_RUN_ID", []string{"aaaa1111"}, 0, []ProcRef{{PID: 9107, Start: start}}},
		{"TARE_RUN_ID", []string{"aaaa1111", "bbbb2222"}, 0, []ProcRef{{PID: 9107, Start: start}, {PID: 9108, Start: start}}},
		{"TARE_RUN_ID", []string{"aaaa1111", "bbbb2222"}, start, []ProcRef{{PID: 9107, Start: start}, {PID: 9108, Start: start}}},
		{"TARE_RUN_ID", []string{"aaaa1111", "bbbb2222"}, start + 1, nil}, // started before the runs
		{"TARE_EXPERIMENT", []string{"/exp/two"}, 0, []ProcRef{{PID: 9108, Start: start}}},
		{"TARE_EXPERIMENT", []string{"/exp"}, 0, nil}, // a prefix is not the value
		{"TARE_RUN_ID", []string{"cccc3333"}, 0, nil},
		{"TARE_RUN", []string{"aaaa1111"}, 0, nil},
	} {
		got := MarkedProcesses(root, c.name, c.values, c.notBefore)
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("MarkedProcesses(%s=%v, notBefore %d) (-want +got):\n%s", c.name, c.values, c.notBefore, diff)
		}
	}
}
