package lab

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/component"
)

func TestRetuned(t *testing.T) {
	t.Parallel()
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
	if !CanRetune([]string{component.Scheduler, component.Etcd, component.APIServer, component.Kubelet}) ||
		CanRetune([]string{component.Scheduler, component.Kwok}) || CanRetune(nil) {
		t.Error("CanRetune: etcd, the API server, the scheduler and the kubelet can be restarted alone; kwok cannot; nothing is nothing to restart")
	}
}

// TestMergeSets: a later set of a flag replaces the earlier one in place of being added (so that the same
// value again changes nothing), and the lab's sets are its tunings beyond its profile's.
func TestMergeSets(t *testing.T) {
	t.Parallel()
	v2 := Tuning{Component: component.Kubelet, Flag: "v", Value: "2", Reason: "--set"}
	v3 := Tuning{Component: component.Kubelet, Flag: "v", Value: "3", Reason: "--set"}
	snap := Tuning{Component: component.Etcd, Flag: "snapshot-count", Value: "5000", Reason: "--set"}
	schedV := Tuning{Component: component.Scheduler, Flag: "v", Value: "3", Reason: "--set"}
	for _, tc := range []struct {
		name             string
		base, over, want []Tuning
	}{
		{"none", nil, nil, nil},
		{"added", []Tuning{v2}, []Tuning{snap}, []Tuning{v2, snap}},
		{"replaced", []Tuning{v2, snap}, []Tuning{v3}, []Tuning{snap, v3}},
		{"same flag of another component", []Tuning{v2}, []Tuning{schedV}, []Tuning{v2, schedV}},
	} {
		if got := MergeSets(tc.base, tc.over); !slices.Equal(got, tc.want) {
			t.Errorf("%s: MergeSets = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := MergeSets([]Tuning{v3}, []Tuning{v3}); len(Changed([]Tuning{v3}, got)) != 0 {
		t.Errorf("the same value again changes %v", Changed([]Tuning{v3}, got))
	}
	tuned, _ := ProfileTunings(ProfileTuned)
	st := State{Profile: ProfileTuned, Tunings: append(slices.Clone(tuned), v2)}
	if got := st.Sets(); !slices.Equal(got, []Tuning{v2}) {
		t.Errorf("Sets of a tuned lab with kubelet.v=2 = %v", got)
	}
}

// TestRetune restarts components of one real running lab (with a node as root, else control plane only)
// by their flags, and checks each against the kernel and the API rather than tare's state: nothing restarts
// when nothing changes; the API server, etcd and the kubelet restart alone, each new process running the
// flag (its /proc/PID/cmdline) and the old one gone, the other components' processes untouched, /readyz
// ok, the node Ready, a pod created before still running with no container restart, an object created
// before still there (etcd's data kept), and the controller manager and the scheduler still leading
// with their leases renewed after the restart. Then the controller manager alone, leading at once (its
// lease taken by the new instance); a forced restart of an unchanged scheduler; kwok refused with nothing
// changed; and Down leaves nothing.
func TestRetune(t *testing.T) {
	node := os.Geteuid() == 0
	ctx, st := upLab(t, UpOptions{ControlPlaneOnly: !node}, 5*time.Minute)
	dir := st.Dir
	c, err := Client(st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	if node {
		pod = runWeb(ctx, t, c, "web", st.Node)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-retune"}, Data: map[string]string{"kept": "yes"}}
	if _, err := c.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := labPIDs(t, dir)
	if r, err := at(dir).Retune(ctx, nil, nil); err != nil || len(r.Restarted) != 0 || !maps(before, labPIDs(t, dir)) {
		t.Fatalf("no change: %+v, %v; processes %v -> %v", r, err, before, labPIDs(t, dir))
	}

	// The sets accumulate as tare lab retune merges them: each step changes one component's flag.
	var sets []Tuning
	for _, step := range []struct {
		set  []Tuning // one component's flag, or etcd's and the API server's together
		node bool     // needs the lab's node
	}{
		{[]Tuning{{Component: component.APIServer, Flag: "max-requests-inflight", Value: "401"}}, false},
		{[]Tuning{{Component: component.Etcd, Flag: "snapshot-count", Value: "5000"}}, false},
		{[]Tuning{{Component: component.Etcd, Flag: "snapshot-count", Value: "6000"},
			{Component: component.APIServer, Flag: "max-requests-inflight", Value: "402"}}, false},
		{[]Tuning{{Component: component.Kubelet, Flag: "v", Value: "3"}}, true},
	} {
		var want []string
		for _, set := range step.set {
			want = append(want, set.Component)
		}
		t.Run(strings.Join(want, "+"), func(t *testing.T) {
			if step.node && !node {
				t.Skip("the lab has no node without root")
			}
			before := labPIDs(t, dir)
			old := map[string]string{}
			for _, name := range want {
				old[name] = cmdline(before[name])
			}
			holders := leaseHolders(ctx, t, c)
			sets = MergeSets(sets, step.set)
			r, err := at(dir).Retune(ctx, sets, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%v restarted in %s: %v", want, r.Took, r.Steps)
			if !slices.Equal(r.Restarted, want) {
				t.Errorf("restarted %v, want %v", r.Restarted, want)
			}
			after := labPIDs(t, dir)
			for name, pid := range before {
				if changed := after[name] != pid; changed != slices.Contains(want, name) || after[name] == 0 {
					t.Errorf("%s: pid %d -> %d", name, pid, after[name])
				}
			}
			for _, set := range step.set {
				if now := cmdline(before[set.Component]); now != "" && now == old[set.Component] {
					t.Errorf("the old %s (pid %d) still runs", set.Component, before[set.Component])
				}
				if args := cmdline(after[set.Component]); !strings.Contains(args, " --"+set.Flag+"="+set.Value) {
					t.Errorf("the new %s runs %q", set.Component, args)
				}
			}
			checkWhole(ctx, t, c, st, pod)
			if _, err := c.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, cm.Name, metav1.GetOptions{}); err != nil {
				t.Errorf("the object created before: %v", err)
			}
			checkLeading(ctx, t, c, holders, time.Now())
		})
	}

	lease := func(name string) string { return leaseHolders(ctx, t, c)[name] }
	holder := lease("kube-controller-manager")
	before = labPIDs(t, dir)
	sets = MergeSets(sets, []Tuning{{Component: component.ControllerManager, Flag: "leader-elect-retry-period", Value: "1s"}})
	r, err := at(dir).Retune(ctx, sets, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("controller manager restarted in %s", r.Took)
	after := labPIDs(t, dir)
	for name, pid := range before {
		changed := after[name] != pid
		if changed != (name == component.ControllerManager) || after[name] == 0 {
			t.Errorf("%s: pid %d -> %d", name, pid, after[name])
		}
	}
	if args := cmdline(after[component.ControllerManager]); !strings.Contains(args, "--leader-elect-retry-period=1s") {
		t.Errorf("the new controller manager runs %q", args)
	}
	deadline := time.Now().Add(30 * time.Second)
	for h := lease("kube-controller-manager"); (h == holder || h == "") && time.Now().Before(deadline); h = lease("kube-controller-manager") {
		time.Sleep(200 * time.Millisecond) // dropped ("") until the new one takes it
	}
	if h := lease("kube-controller-manager"); h == holder || h == "" {
		t.Errorf("the lease is still %q (was %q): the new controller manager does not lead", h, holder)
	}
	// Forced: the scheduler, unchanged; the controller manager keeps its flag and its process.
	before = labPIDs(t, dir)
	if r, err = at(dir).Retune(ctx, sets, []string{component.Scheduler}); err != nil || !slices.Equal(r.Restarted, []string{component.Scheduler}) {
		t.Fatalf("forced scheduler restart: %+v, %v", r, err)
	}
	if after := labPIDs(t, dir); after[component.Scheduler] == before[component.Scheduler] || after[component.ControllerManager] != before[component.ControllerManager] {
		t.Errorf("forced scheduler restart: %v -> %v", before, after)
	}
	// kwok cannot be restarted alone: refused, nothing changed.
	before = labPIDs(t, dir)
	_, err = at(dir).Retune(ctx, append(sets, Tuning{Component: component.Kwok, Flag: "v", Value: "3"}), nil)
	if !errors.Is(err, ErrRetuneUnsupported) || !strings.Contains(err.Error(), component.Kwok) || !maps(before, labPIDs(t, dir)) {
		t.Errorf("kwok: %v; processes %v -> %v", err, before, labPIDs(t, dir))
	}
	if _, err := Down(ctx, dir, false); err != nil {
		t.Fatal(err)
	}
	if left := Leftovers(dir, node); len(left) > 0 {
		t.Errorf("left after down: %v", left)
	}
}

// labPIDs are the PIDs of the lab's running components, by name (node 1's and the control plane's).
func labPIDs(t *testing.T, dir string) map[string]int {
	t.Helper()
	st, err := loadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int{}
	for _, p := range st.Running() {
		if p.Node == "" {
			m[p.Name] = p.PID
		}
	}
	return m
}

// cmdline is a process's command line from the kernel, its arguments joined by spaces ("" when it is gone).
func cmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	return string(bytes.ReplaceAll(bytes.TrimRight(b, "\x00"), []byte{0}, []byte{' '}))
}

// leaseHolders are the holders of the leader-election leases in kube-system, by lease name.
func leaseHolders(ctx context.Context, t *testing.T, c kubernetes.Interface) map[string]string {
	t.Helper()
	out := map[string]string{}
	ls, err := c.CoordinationV1().Leases(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls.Items {
		if l.Spec.HolderIdentity != nil {
			out[l.Name] = *l.Spec.HolderIdentity
		}
	}
	return out
}

// checkWhole checks the lab from the API: /readyz ok, the node (if any) Ready, and the pod (if any)
// running the container it ran before, with no restart.
func checkWhole(ctx context.Context, t *testing.T, c kubernetes.Interface, st *State, pod *corev1.Pod) {
	t.Helper()
	if b, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil || string(b) != "ok" {
		t.Errorf("/readyz: %q, %v", b, err)
	}
	if pod == nil {
		return
	}
	if err := nodeReady(ctx, c, st.Node, time.Time{}); err != nil {
		t.Error(err)
	}
	p, err := c.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != 1 {
		t.Fatalf("pod %s: %s, %v", p.Name, p.Status.Phase, p.Status.ContainerStatuses)
	}
	cs, was := p.Status.ContainerStatuses[0], pod.Status.ContainerStatuses[0]
	if cs.RestartCount != 0 || cs.ContainerID != was.ContainerID || cs.State.Running == nil || !cs.Ready {
		t.Errorf("pod %s's container: %d restarts, %s (was %s), %+v, ready %v", p.Name, cs.RestartCount, cs.ContainerID, was.ContainerID, cs.State, cs.Ready)
	}
}

// checkLeading checks that the controller manager and the scheduler kept leading through a restart of
// something else: the same holders as before renew their leases after since, the restart's end (every 2 s).
func checkLeading(ctx context.Context, t *testing.T, c kubernetes.Interface, holders map[string]string, since time.Time) {
	t.Helper()
	for _, name := range []string{"kube-controller-manager", "kube-scheduler"} {
		var l string
		var renewed time.Time
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			got, err := c.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
			if err != nil || got.Spec.HolderIdentity == nil || got.Spec.RenewTime == nil {
				continue
			}
			l, renewed = *got.Spec.HolderIdentity, got.Spec.RenewTime.Time
			if renewed.After(since) {
				break
			}
		}
		if l != holders[name] || !renewed.After(since) {
			t.Errorf("%s's lease: held by %q (was %q), renewed %s (restart at %s)", name, l, holders[name], renewed.Format(time.RFC3339Nano), since.Format(time.RFC3339Nano))
		}
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
