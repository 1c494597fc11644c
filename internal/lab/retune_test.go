package lab

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tare-dev/tare/internal/component"
)

func TestRetuned(t *testing.T) {
	from := []Tuning{{Component: component.Etcd, Flag: "snapshot-count", Value: "1000"}, {Component: component.Scheduler, Flag: "v", Value: "2"}}
	for _, tc := range []struct {
		name string
		to   []Tuning
		also []string
		want []string
	}{
		{"same", from, nil, nil},
		{"one value", []Tuning{from[0], {Component: component.Scheduler, Flag: "v", Value: "3"}}, nil, []string{component.Scheduler}},
		{"one dropped", from[:1], nil, []string{component.Scheduler}},
		{"one added", append(slices.Clone(from), Tuning{Component: component.ControllerManager, Flag: "v", Value: "1"}), nil,
			[]string{component.ControllerManager}},
		{"also", from, []string{component.Scheduler, component.ControllerManager}, []string{component.ControllerManager, component.Scheduler}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := retuned(from, tc.to, tc.also)
			// The registry's order, whatever the order asked.
			want := component.Names(func(e component.Entry) bool { return slices.Contains(tc.want, e.Name) })
			if !slices.Equal(got, want) {
				t.Errorf("retuned = %v, want %v", got, want)
			}
		})
	}
	if !CanRetune([]string{component.Scheduler, component.ControllerManager}) || CanRetune([]string{component.Scheduler, component.Etcd}) || CanRetune(nil) {
		t.Error("CanRetune: the controller manager and scheduler alone can be restarted alone; etcd cannot; nothing is nothing to restart")
	}
}

// TestRetune restarts components of a real running lab (control plane only) by their flags: nothing when
// nothing changes; only the controller manager when its flag changes, the others' processes untouched, the
// new one running the flag (its command line, from the kernel), healthy and leading at once (its lease
// taken by the new instance); a forced restart of an unchanged scheduler; etcd refused with nothing
// changed; and Down leaves nothing.
func TestRetune(t *testing.T) {
	ctx, st := upLab(t, UpOptions{ControlPlaneOnly: true}, 5*time.Minute)
	dir := st.Dir
	pids := func() map[string]int {
		st, err := LoadState(dir)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, p := range st.Running() {
			m[p.Name] = p.PID
		}
		return m
	}
	before := pids()
	r, err := Retune(ctx, dir, nil, nil)
	if err != nil || len(r.Restarted) != 0 || !maps(before, pids()) {
		t.Fatalf("no change: %+v, %v; processes %v -> %v", r, err, before, pids())
	}
	c, err := Client(st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	lease := func(name string) string {
		l, err := c.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	holder := lease("kube-controller-manager")
	set := []Tuning{{Component: component.ControllerManager, Flag: "leader-elect-retry-period", Value: "1s"}}
	if r, err = Retune(ctx, dir, set, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("controller manager restarted in %s", r.Took)
	after := pids()
	for name, pid := range before {
		changed := after[name] != pid
		if changed != (name == component.ControllerManager) || after[name] == 0 {
			t.Errorf("%s: pid %d -> %d", name, pid, after[name])
		}
	}
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(after[component.ControllerManager]) + "/cmdline")
	if !strings.Contains(string(cmdline), "--leader-elect-retry-period=1s") {
		t.Errorf("the new controller manager runs %q", strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	deadline := time.Now().Add(30 * time.Second)
	for h := lease("kube-controller-manager"); (h == holder || h == "") && time.Now().Before(deadline); h = lease("kube-controller-manager") {
		time.Sleep(200 * time.Millisecond) // dropped ("") until the new one takes it
	}
	if h := lease("kube-controller-manager"); h == holder || h == "" {
		t.Errorf("the lease is still %q (was %q): the new controller manager does not lead", h, holder)
	}
	// Forced: the scheduler, unchanged; the controller manager keeps its flag and its process.
	before = pids()
	if r, err = Retune(ctx, dir, set, []string{component.Scheduler}); err != nil || !slices.Equal(r.Restarted, []string{component.Scheduler}) {
		t.Fatalf("forced scheduler restart: %+v, %v", r, err)
	}
	if after := pids(); after[component.Scheduler] == before[component.Scheduler] || after[component.ControllerManager] != before[component.ControllerManager] {
		t.Errorf("forced scheduler restart: %v -> %v", before, after)
	}
	// etcd cannot be restarted alone: refused, nothing changed.
	before = pids()
	_, err = Retune(ctx, dir, append(set, Tuning{Component: component.Etcd, Flag: "snapshot-count", Value: "5000"}), nil)
	if !errors.Is(err, ErrRetuneUnsupported) || !strings.Contains(err.Error(), component.Etcd) || !maps(before, pids()) {
		t.Errorf("etcd: %v; processes %v -> %v", err, before, pids())
	}
	if _, err := Down(ctx, dir, false); err != nil {
		t.Fatal(err)
	}
	if left := Leftovers(dir, false); len(left) > 0 {
		t.Errorf("left after down: %v", left)
	}
}

func maps(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
