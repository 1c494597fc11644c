package lab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/lab/machine"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/session"
	"github.com/tare-dev/tare/internal/summary"
	"github.com/tare-dev/tare/internal/testenv"
)

// TestPauseLab starts a real lab with a web pod and pauses it: for 10 s measured by tare's session, every
// frozen component's CPU is under 1 millicore, and the kernel's own accounting (cpuacct.usage of the
// paused cgroups on v1, cpu.stat's usage_usec on v2; not the per-task counters tare reads) agrees; the
// pod still answers on its IP; status says paused; pause and up refuse a paused lab. Unpause brings
// /readyz back within seconds, the node stays Ready, no pod restarts, and every process is back in its
// cgroups; after a pause past leaseWaitAfter, unpause waits for the node's lease renewal. Pauses
// interrupted at each step leave nothing frozen. The same pause and unpause again with cgroup v2's
// freezer (on a hybrid machine, the v2 tree with no controllers beside the v1 freezer), and a down from
// that v2-paused lab leaves nothing behind.
func TestPauseLab(t *testing.T) {
	ctx, st := upLab(t, UpOptions{}, 4*time.Minute) // pausing needs root too: the cgroup freezer
	dir := st.Dir
	c, err := Client(st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	pod := runWeb(ctx, t, c, "web", st.Node)
	url := "http://" + pod.Status.PodIP + ":8080/pause"
	waitAnswers(ctx, t, url)
	before := restarts(ctx, t, c)
	cgroupsBefore := freezerCgroups(t, st)

	t.Run("paused", func(t *testing.T) {
		checkPaused(ctx, t, dir, url, PauseOptions{}) // auto: the v1 freezer where it is mounted
	})

	t.Run("unpaused", func(t *testing.T) {
		checkUnpaused(ctx, t, dir, c, before, cgroupsBefore)
	})

	// A pause past leaseWaitAfter: unpause waits for the node's lease before it thaws the controller
	// manager (a pause of minutes otherwise has the node marked NotReady for a moment).
	t.Run("long", func(t *testing.T) {
		if _, err := at(dir).Pause(ctx, PauseOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(leaseWaitAfter + time.Second) // the pause is what is tested: nothing to poll for
		began := time.Now()
		r, err := at(dir).Unpause(ctx)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(began)
		t.Logf("after %s paused: /readyz ok after %s, lease renewed after %s, all thawed in %s", r.Paused, r.ReadyAfter, r.LeasesRenewed, r.ThawTook)
		if r.LeasesRenewed <= 0 || r.LeasesRenewed > took || r.LeaseNote != "" || r.ReadyAfter > 5*time.Second {
			t.Errorf("unpause after %s (took %s): lease renewed after %s (%q), /readyz after %s", r.Paused, took, r.LeasesRenewed, r.LeaseNote, r.ReadyAfter)
		}
		// The kubelet's own record: every node lease was renewed after the unpause began.
		// The API server's cache is refilled from etcd after the thaw: a list can come back empty for a
		// moment (CI once: no lease, right after unpause had read the node's renewed lease itself).
		var leases *coordinationv1.LeaseList
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			leases, err = c.CoordinationV1().Leases("kube-node-lease").List(ctx, metav1.ListOptions{})
			if err == nil && len(leases.Items) > 0 || time.Now().After(deadline) {
				break
			}
		}
		if err != nil || len(leases.Items) == 0 {
			t.Fatalf("node leases: %v (%d)", err, len(leases.Items))
		}
		for _, l := range leases.Items {
			if l.Spec.RenewTime == nil || l.Spec.RenewTime.Time.Before(began.Truncate(time.Microsecond)) {
				t.Errorf("node lease %s last renewed %v, before the unpause began at %v", l.Name, l.Spec.RenewTime, began)
			}
		}
		checkResumed(ctx, t, dir, c, before, cgroupsBefore)
	})

	// Ctrl-C: ctx ends after the first n checks (0: before any process moves; 3: some moved; 1000: at
	// the freeze). An interrupted pause leaves nothing frozen; one that finished first is paused.
	t.Run("interrupted", func(t *testing.T) {
		for _, n := range []int32{0, 3, 1000} {
			ictx := &endsAfter{Context: ctx, n: n}
			_, err := at(dir).Pause(ictx, PauseOptions{})
			st, lerr := loadState(dir)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if err == nil {
				if st.Paused == nil || !st.Paused.Complete {
					t.Errorf("after %d checks: pause returned nil but the state says %+v", n, st.Paused)
				}
				t.Logf("after %d checks: the freeze completed first", n)
				if _, err := at(dir).Unpause(ctx); err != nil {
					t.Fatal(err)
				}
			} else {
				t.Logf("after %d checks: %v", n, err)
				if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "nothing was left frozen") {
					t.Errorf("after %d checks: %v, want canceled and nothing left frozen", n, err)
				}
				if st.Paused != nil {
					t.Errorf("after %d checks: an interrupted pause is still recorded: %+v", n, st.Paused)
				}
			}
			checkResumed(ctx, t, dir, c, before, cgroupsBefore)
		}
	})

	// cgroup v2's freezer on the same lab: the processes move into the v2 tree (on a hybrid machine
	// /sys/fs/cgroup/unified, which has no controllers: cgroup.freeze and cpu.stat's usage_usec are its
	// core's) and back to their v2 cgroups on unpause, leaving nothing there.
	hier, err := kernel.ReadCgroupHierarchies("/proc")
	if err != nil {
		t.Fatal(err)
	}
	v2, v2Err := pickFreezer(hier, FreezerV2)
	haveV2 := v2Err == nil
	t.Run("v2 paused", func(t *testing.T) {
		if !haveV2 {
			testenv.Unavailable(t, "%v", v2Err)
		}
		ps := checkPaused(ctx, t, dir, url, PauseOptions{Freezer: FreezerV2})
		if !ps.Hierarchies.V2 || ps.Hierarchies.Freezer != v2.Freezer || ps.Hierarchies.Acct != "" {
			t.Errorf("paused with the v2 freezer in %+v, want %+v", ps.Hierarchies, v2)
		}
	})
	t.Run("v2 unpaused", func(t *testing.T) {
		if !haveV2 {
			testenv.Unavailable(t, "%v", v2Err)
		}
		checkUnpaused(ctx, t, dir, c, before, cgroupsBefore)
		left, _ := filepath.Glob(filepath.Join(v2.Freezer, cgroupRootName, pausedGroup+"*"))
		if len(left) > 0 {
			t.Errorf("left in the v2 tree after unpause: %v", left)
		}
	})

	// Down from a paused lab, paused with the v2 freezer where there is one: down's thaw reads the
	// freezer from the state (a v2 tree's cgroup.freeze, not the v1 freezer.state auto would pick here);
	// down's thaw on v1 is the same resume that every v1 unpause above ran.
	t.Run("down from paused", func(t *testing.T) {
		opts := PauseOptions{Freezer: FreezerV2}
		if !haveV2 {
			opts.Freezer = FreezerAuto
		}
		pr, err := at(dir).Pause(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("paused with the %s freezer in %s", pr.Freezer, pr.Cgroup)
		// The processes down must stop: those alive now, frozen, by their PIDs in /proc.
		var running []int
		for _, p := range st.Processes {
			if alive(p) {
				running = append(running, p.PID)
			}
		}
		r, err := Down(ctx, dir, false)
		if err != nil {
			t.Fatal(err)
		}
		var stopped []int
		for _, p := range r.Stopped {
			stopped = append(stopped, p.PID)
		}
		slices.Sort(running)
		slices.Sort(stopped)
		if !r.WasPaused || len(running) == 0 || !slices.Equal(stopped, running) {
			t.Errorf("down from paused: was paused %v, stopped PIDs %v, want those alive before it %v", r.WasPaused, stopped, running)
		}
		for _, p := range st.Processes {
			if alive(p) {
				t.Errorf("%s (pid %d) still runs after down", p.Name, p.PID)
			}
		}
		if left := Leftovers(dir, true); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
		if haveV2 {
			if _, err := os.Stat(filepath.Join(v2.Freezer, cgroupRootName)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the lab's v2 cgroup %s after down: %v", filepath.Join(v2.Freezer, cgroupRootName), err)
			}
		}
	})
}

// checkPaused pauses the lab in dir with opts and checks it: every moved process is in its paused cgroup
// and frozen; for 10 s tare's session sees each frozen component use under 1 millicore and the kernel's
// accounting of its paused cgroup agrees; the pod at url answers; status says paused; pause and up refuse.
// It returns the pause's state.
func checkPaused(ctx context.Context, t *testing.T, dir, url string, opts PauseOptions) *PauseState {
	t.Helper()
	r, err := at(dir).Pause(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("paused with the %s freezer in %s, took %s", r.Freezer, r.Cgroup, r.Took)
	for _, want := range []string{component.Etcd, component.APIServer, component.ControllerManager, component.Scheduler, component.Kubelet} {
		if !slices.Contains(r.Frozen, want) {
			t.Errorf("pause froze %v, not %s", r.Frozen, want)
		}
	}
	st, err := loadState(dir)
	if err != nil || st.Paused == nil || !st.Paused.Complete {
		t.Fatalf("state after pause: %+v, %v", st.Paused, err)
	}
	h := st.Paused.Hierarchies
	if h.name() != r.Freezer || (opts.Freezer != FreezerAuto && opts.Freezer != "" && r.Freezer != opts.Freezer) {
		t.Errorf("asked for the %q freezer: the report says %s, the state %+v", opts.Freezer, r.Freezer, h)
	}
	// The kernel's view: each process in its paused cgroup of the freezer hierarchy, and that cgroup frozen.
	for _, m := range st.Paused.Moved {
		cgs, err := procCgroups(m.PID)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := filepath.Rel(h.Freezer, m.Cgroup)
		if got, _ := cgroupIn(cgs, h.V2, "freezer"); got != "/"+want {
			t.Errorf("%s (pid %d) is in %q of %s, want /%s", m.Name, m.PID, got, h.Freezer, want)
		}
		if fs, err := readFreezeState(m.Cgroup, h.V2); err != nil || fs != frozen {
			t.Errorf("%s: freezer state %v, %v; want frozen", m.Cgroup, fs, err)
		}
	}
	acct := h.Acct
	if acct == "" {
		acct = h.Freezer
	}
	usage0 := pausedUsage(t, st, acct)
	var total uint64
	for _, u := range usage0 {
		total += u
	}
	// The counters count: the components ran between their move and the freeze (a frozen task runs to
	// its freezing point), so a cgroup's usage that stayed 0 would say nothing.
	t.Logf("usage of the paused cgroups since their move, at the freeze: %v ns", usage0)
	if h.V2 && total == 0 {
		t.Errorf("cpu.stat usage_usec of every paused cgroup is 0 in %s: the v2 tree counts nothing", h.Freezer)
	}
	res, err := session.Measure(ctx, session.Options{Sampler: sample.Options{Interval: time.Second, Detail: 5 * time.Second},
		Duration: 10 * time.Second, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	usage1 := pausedUsage(t, st, acct)
	sum := summary.Build(res.Meta, res.Samples, summary.Options{})
	seen := 0
	for _, g := range sum.Groups {
		if !slices.Contains(r.Frozen, g.Name) {
			continue
		}
		seen++
		t.Logf("paused %s: %.3fm over %.1f s (tare); kernel's usage delta %d ns", g.Name, g.CPU.Mean, sum.Window.Seconds, usage1[g.Name]-usage0[g.Name])
		if g.CPU.Mean >= 1 {
			t.Errorf("paused %s used %.3f millicores, want under 1", g.Name, g.CPU.Mean)
		}
	}
	if seen < len(r.Frozen) {
		t.Errorf("tare's summary has %d of the %d frozen components", seen, len(r.Frozen))
	}
	// Ground truth from the kernel's cgroup accounting: under 1 millicore is under 1 ms per second.
	for name, u := range usage1 {
		if d := u - usage0[name]; d >= uint64(sum.Window.Seconds*1e6) {
			t.Errorf("the kernel's usage of paused %s grew %d ns in %.1f s, want under 1 millicore", name, d, sum.Window.Seconds)
		}
	}
	waitAnswers(ctx, t, url)
	s, err := at(dir).Status(ctx)
	if err != nil || !s.Paused || !s.Healthy || s.APIReady {
		t.Errorf("status of a paused lab: paused %v healthy %v api ready %v, %v", s.Paused, s.Healthy, s.APIReady, err)
	}
	if _, err := at(dir).Pause(ctx, opts); !errors.Is(err, ErrPaused) {
		t.Errorf("pausing a paused lab: %v, want %v", err, ErrPaused)
	}
	if _, err := Up(ctx, UpOptions{Dir: dir}); !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("up on a paused lab: %v, want %v", err, ErrAlreadyRunning)
	}
	return st.Paused
}

// checkUnpaused unpauses the lab in dir and checks that /readyz answers within 5 s and the lab is as
// before the pause (checkResumed); a second unpause is refused.
func checkUnpaused(ctx context.Context, t *testing.T, dir string, c kubernetes.Interface, before map[string]int32, cgroupsBefore map[int]string) {
	t.Helper()
	r, err := at(dir).Unpause(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("thawed in %s, /readyz ok after %s", r.ThawTook, r.ReadyAfter)
	if r.ReadyAfter > 5*time.Second {
		t.Errorf("/readyz ok %s after unpause, want within 5 s", r.ReadyAfter)
	}
	checkResumed(ctx, t, dir, c, before, cgroupsBefore)
	if _, err := at(dir).Unpause(ctx); !errors.Is(err, ErrNotPaused) {
		t.Errorf("unpausing a running lab: %v, want %v", err, ErrNotPaused)
	}
}

// checkResumed checks a lab after an unpause (or an undone pause): nothing of pause's cgroups is left,
// every lab process is back in the freezer cgroup it was in, /readyz answers ok, the node is Ready and
// no pod restarted.
func checkResumed(ctx context.Context, t *testing.T, dir string, c kubernetes.Interface, before map[string]int32, cgroupsBefore map[int]string) {
	t.Helper()
	st, err := loadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Paused != nil {
		t.Errorf("the state still records a pause: %+v", st.Paused)
	}
	if hier, err := machine.CgroupMounts(); err == nil {
		for _, h := range hier {
			if _, err := os.Stat(filepath.Join(h, cgroupRootName, pausedGroup)); err == nil {
				t.Errorf("the paused cgroup %s is left", filepath.Join(h, cgroupRootName, pausedGroup))
			}
		}
	}
	if got := freezerCgroups(t, st); fmt.Sprint(got) != fmt.Sprint(cgroupsBefore) {
		t.Errorf("freezer cgroups of the lab's processes: %v, want as before the pause %v", got, cgroupsBefore)
	}
	if _, err := waitReadyz(ctx, st.Kubeconfig, 5*time.Second); err != nil {
		t.Errorf("/readyz: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		err := nodeReady(ctx, c, st.Node, time.Time{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node is not Ready 10 s after unpause: %v", err)
		}
	}
	if after := restarts(ctx, t, c); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("pod restarts: %v after, %v before", after, before)
	}
}

// endsAfter is a context that reports no error for its first n Err calls and is done from then on: Pause
// sees Ctrl-C at its (n+1)th check.
type endsAfter struct {
	context.Context
	n     int32
	calls atomic.Int32
}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Done is closed once Err says the context ended, as a real context's is; before that it never fires.
func (e *endsAfter) Done() <-chan struct{} {
	if e.calls.Load() >= e.n {
		return closed
	}
	return nil
}

func (e *endsAfter) Err() error {
	if e.calls.Add(1) <= e.n {
		return nil
	}
	return context.Canceled
}

// restarts is every container's restart count, by pod/container.
func restarts(ctx context.Context, t *testing.T, c kubernetes.Interface) map[string]int32 {
	t.Helper()
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			out[p.Namespace+"/"+p.Name+"/"+cs.Name] = cs.RestartCount
		}
	}
	return out
}

// waitAnswers waits up to 10 s for the web pod to answer GET url over its pod IP.
func waitAnswers(ctx context.Context, t *testing.T, url string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = errors.New(resp.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
}

// freezerCgroups is the cgroup of every lab process, by PID, in each hierarchy pause may move it in
// (v1 freezer and cpuacct, and the cgroup v2 tree), from /proc/PID/cgroup.
func freezerCgroups(t *testing.T, st *State) map[int]string {
	t.Helper()
	out := map[int]string{}
	for _, p := range st.Processes {
		cgs, err := procCgroups(p.PID)
		if err != nil {
			t.Fatal(err)
		}
		freezer, _ := cgroupIn(cgs, false, "freezer")
		cpuacct, _ := cgroupIn(cgs, false, "cpuacct")
		v2, _ := cgroupIn(cgs, true, "")
		out[p.PID] = fmt.Sprintf("freezer:%s cpuacct:%s 0::%s", freezer, cpuacct, v2)
	}
	return out
}

// pausedUsage reads cpuacct.usage (v1) or cpu.stat's usage_usec (v2) of each paused component's cgroup
// in the hierarchy acct, in nanoseconds.
func pausedUsage(t *testing.T, st *State, acct string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, m := range st.Paused.Moved {
		name := filepath.Base(m.Cgroup)
		d := filepath.Join(acct, cgroupRootName, pausedGroup, name)
		if b, err := os.ReadFile(filepath.Join(d, "cpuacct.usage")); err == nil {
			v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = v
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, "cpu.stat"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				us, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				out[name] = us * 1000
			}
		}
	}
	return out
}
