package sample

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChildrenFirst(t *testing.T) {
	t.Parallel()
	proc := func(pid, ppid int) *procState { return &procState{info: &ProcInfo{Key: ProcKey{PID: pid}, PPID: ppid}} }
	tests := []struct {
		name string
		in   [][2]int // pid, ppid
		want []int
	}{
		{"chain listed parent first", [][2]int{{10, 1}, {11, 10}, {12, 11}}, []int{12, 11, 10}},
		{"pids wrapped: child below parent", [][2]int{{300, 1}, {5, 300}}, []int{5, 300}},
		{"siblings and strangers", [][2]int{{20, 2}, {7, 3}, {21, 20}, {22, 20}}, []int{7, 21, 22, 20}},
		{"self parent (pid 0 style)", [][2]int{{4, 4}}, []int{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ps []*procState
			for _, p := range tt.in {
				ps = append(ps, proc(p[0], p[1]))
			}
			var got []int
			for _, st := range childrenFirst(ps) {
				got = append(got, st.info.Key.PID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}
