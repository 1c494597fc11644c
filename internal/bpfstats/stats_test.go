package bpfstats

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/testenv"
)

func TestDelta(t *testing.T) {
	t.Parallel()
	before := []Stat{{Name: "a", RunTime: 100, RunCount: 10}, {Name: "b", RunTime: 50, RunCount: 5},
		{Name: "gone", RunTime: 7, RunCount: 1}}
	after := []Stat{{Name: "a", RunTime: 400, RunCount: 13}, {Name: "b", RunTime: 20, RunCount: 2},
		{Name: "new", InSelf: true, RunTime: 9, RunCount: 3}}
	want := []Stat{{Name: "a", RunTime: 300, RunCount: 3}, {Name: "b", RunTime: 20, RunCount: 2},
		{Name: "new", InSelf: true, RunTime: 9, RunCount: 3}}
	if d := cmp.Diff(want, Delta(before, after)); d != "" {
		t.Errorf("Delta (-want +got):\n%s", d)
	}
}

func TestOutside(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		stats []Stat
		want  time.Duration
	}{
		{"none", nil, 0},
		{"outside only", []Stat{{Name: "a", RunTime: 3}, {Name: "b", RunTime: 4}}, 7},
		{"in self left out", []Stat{{Name: "a", RunTime: 3}, {Name: "it", InSelf: true, RunTime: 100}}, 3},
	} {
		if got := Outside(tc.stats); got != tc.want {
			t.Errorf("%s: Outside = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestEnable: as root, statistics turn on and the Closer turns them off again.
func TestEnable(t *testing.T) {
	testenv.NeedRoot(t, "BPF_ENABLE_STATS needs CAP_SYS_ADMIN")
	c, err := Enable()
	if errors.Is(err, ErrNotSupported) {
		testenv.Unavailable(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
