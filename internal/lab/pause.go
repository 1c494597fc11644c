package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/lab/machine"
)

// Pausing a lab: Pause moves the control plane, kwok and the node agents into cgroups of their own under
// the lab's cgroup root (ROOT/tare-lab/paused/NAME in the freezer hierarchy, and in cpuacct on cgroup v1)
// and freezes them; the pods' processes, containerd and its shims keep running, so user pods keep serving.
// Unpause thaws them, puts each back in the cgroups it came from and removes what pause made, so a
// running lab is the same before a pause and after an unpause. PauseOptions.Freezer chooses the v1 freezer
// controller or cgroup v2 (freezer.go); the state records the hierarchies used, and unpause and down thaw
// and move back with those, whatever the machine offers then. This is minikube's pause (it freezes the
// kube-system containers with runc and stops the kubelet), done with the freezer for every component.

// pausedGroup is the cgroup, under the lab's root in each pause hierarchy, that holds the paused processes.
const pausedGroup = "paused"

// pausedComponents are the components pause freezes: the control plane, kwok, and the node agents (a
// frozen kubelet neither restarts nor kills a container; on thaw it finds them as they were).
var pausedComponents = component.Names(func(e component.Entry) bool {
	return e.InLab() && (e.Role == component.RoleControlPlane || e.Role == component.RoleSimulator || e.Role == component.RoleNode)
})

// PauseState is what the lab state records of a pause, written before each step so an interrupted pause
// can be undone: the hierarchies, the cgroup directories pause made (parents first) and every process it
// moved with the cgroups it came from.
type PauseState struct {
	Since       time.Time          `json:"since"`
	Complete    bool               `json:"complete"` // every moved process frozen; false while pausing
	Hierarchies freezerHierarchies `json:"hierarchies"`
	Made        []string           `json:"made,omitempty"`
	Moved       []MovedProcess     `json:"moved,omitempty"`
}

// MovedProcess is a lab process pause moved: the cgroup directory it is in and, per hierarchy mount, the
// directory it came from.
type MovedProcess struct {
	Process
	Cgroup string            `json:"cgroup"` // its directory under pausedGroup in the freezer hierarchy
	From   map[string]string `json:"from"`
}

// PauseOptions are the choices of a pause.
type PauseOptions struct {
	// Freezer is the cgroup freezer to pause with; "" is FreezerAuto. The state records the one used, and
	// unpause and down thaw with it.
	Freezer Freezer
}

// PauseReport is what Pause did.
type PauseReport struct {
	Dir     string        `json:"dir"`
	Frozen  []string      `json:"frozen"`  // components, node-qualified for extra nodes
	Freezer Freezer       `json:"freezer"` // the freezer used: v1 or v2, never auto
	Cgroup  string        `json:"cgroup"`  // the frozen tree in the freezer hierarchy
	Took    time.Duration `json:"took_ns"`
}

// UnpauseReport is what Unpause did and how long the API server took to be ready again.
type UnpauseReport struct {
	Dir         string        `json:"dir"`
	Paused      time.Duration `json:"paused_ns"` // how long the lab was paused
	ThawTook    time.Duration `json:"thaw_took_ns"`
	ReadyAfter  time.Duration `json:"ready_after_ns"` // from the start of unpause to /readyz ok
	Interrupted bool          `json:"interrupted,omitempty"`
	// LeasesRenewed is when every node's lease was renewed after the node agents thawed, from the start
	// of unpause; zero with LeaseNote saying why it was not seen.
	LeasesRenewed time.Duration `json:"leases_renewed_ns,omitempty"`
	LeaseNote     string        `json:"lease_note,omitempty"`
	// NodesReady is when every real node reported Ready again after a pause past plegThreshold, from
	// the start of unpause; zero with NodeNote saying why it was not seen.
	NodesReady   time.Duration `json:"nodes_ready_ns,omitempty"`
	NodeNote     string        `json:"node_note,omitempty"`
	ProcessesNow int           `json:"processes_thawed"`
}

// ErrPaused says the lab is paused (tare lab unpause resumes it).
var ErrPaused = errors.New("the lab is paused")

// ErrNotPaused says unpause found a lab that is not paused.
var ErrNotPaused = errors.New("the lab is not paused")

// Pause freezes the lab with the freezer opts choose. It returns once the kernel reports every paused
// process frozen. When ctx ends before that, or any step fails, Pause undoes what it did (thaws, moves
// back, removes its cgroups) and returns the error: a lab is left paused only by a Pause that returned
// nil.
func (l *Lab) Pause(ctx context.Context, opts PauseOptions) (*PauseReport, error) {
	if _, err := ParseFreezer(string(opts.Freezer)); err != nil {
		return nil, err
	}
	st, err := l.fresh()
	if err != nil {
		return nil, err
	}
	if ps := st.Paused; ps != nil && ps.Complete {
		return nil, fmt.Errorf("%w in %s since %s: tare lab unpause resumes it", ErrPaused, st.Dir, ps.Since.Format(time.RFC3339))
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("pausing the lab writes cgroups: run as root")
	}
	if err := st.resume(); err != nil { // an earlier pause that was interrupted, or a kill -9 of tare
		return nil, fmt.Errorf("undoing an earlier unfinished pause: %w", err)
	}
	var procs []Process
	for _, p := range st.Processes {
		if slices.Contains(pausedComponents, p.Name) && alive(p) {
			procs = append(procs, p)
		}
	}
	if len(procs) == 0 {
		return nil, fmt.Errorf("no control-plane process of the lab in %s runs: tare lab status shows why", st.Dir)
	}
	hier, err := kernel.ReadCgroupHierarchies(procRoot)
	if err != nil {
		return nil, err
	}
	h, err := pickFreezer(hier, opts.Freezer)
	if err != nil {
		return nil, fmt.Errorf("pausing the lab: %w", err)
	}
	// The paused cgroup is the machine's, not the lab's: with this lab's own pause undone above, one
	// that is still there holds another lab (one beside it, lab up --port-offset).
	if g := filepath.Join(h.Freezer, cgroupRootName, pausedGroup); holdsTasks(g) {
		return nil, fmt.Errorf("another lab is paused (its processes are frozen in %s): unpause it first (tare lab unpause --dir DIR)", g)
	}
	start := time.Now()
	st.Paused = &PauseState{Since: start, Hierarchies: h}
	if err := st.pause(ctx, procs); err != nil {
		if uerr := st.resume(); uerr != nil {
			err = fmt.Errorf("%w; undoing the pause also failed (tare lab down still stops the lab): %w", err, uerr)
		} else {
			err = fmt.Errorf("%w (nothing was left frozen)", err)
		}
		_ = st.save()
		return nil, fmt.Errorf("pausing the lab: %w", err)
	}
	r := &PauseReport{Dir: st.Dir, Freezer: h.name(), Cgroup: filepath.Join(h.Freezer, cgroupRootName, pausedGroup), Took: time.Since(start)}
	for _, m := range st.Paused.Moved {
		r.Frozen = append(r.Frozen, filepath.Base(m.Cgroup))
	}
	return r, nil
}

// pause makes the cgroups, moves procs into them and freezes them, saving the state before each step.
func (st *State) pause(ctx context.Context, procs []Process) error {
	ps := st.Paused
	h := ps.Hierarchies
	for _, mount := range h.mounts() {
		for _, d := range []string{filepath.Join(mount, cgroupRootName), filepath.Join(mount, cgroupRootName, pausedGroup)} {
			if err := st.mkCgroup(d); err != nil {
				return err
			}
		}
	}
	for _, p := range procs {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := p.Name
		if p.Node != "" {
			name += "-" + p.Node
		}
		cgs, err := procCgroups(p.PID)
		if err != nil {
			return fmt.Errorf("reading the cgroups of %s (pid %d): %w", name, p.PID, err)
		}
		m := MovedProcess{Process: p, Cgroup: filepath.Join(h.Freezer, cgroupRootName, pausedGroup, name), From: map[string]string{}}
		for _, mount := range h.mounts() {
			from, ok := cgroupIn(cgs, h.V2, h.controllerOf(mount))
			if !ok {
				return fmt.Errorf("%s (pid %d) is in no cgroup of the hierarchy %s", name, p.PID, mount)
			}
			if err := st.mkCgroup(filepath.Join(mount, cgroupRootName, pausedGroup, name)); err != nil {
				return err
			}
			m.From[mount] = filepath.Join(mount, from)
		}
		ps.Moved = append(ps.Moved, m)
		if err := st.save(); err != nil { // before the move: an interrupted pause knows where to put it back
			return err
		}
		for _, mount := range h.mounts() {
			if err := moveToCgroup(filepath.Join(mount, cgroupRootName, pausedGroup, name), p.PID); err != nil {
				return err
			}
		}
	}
	for _, m := range ps.Moved { // each on its own, so that unpause can thaw them in stages
		if err := setFrozen(ctx, m.Cgroup, h.V2, true); err != nil {
			return err
		}
	}
	ps.Complete = true
	return st.save()
}

// procCgroups reads /proc/PID/cgroup through procfs's default mount.
func procCgroups(pid int) ([]procfs.Cgroup, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return nil, err
	}
	return p.Cgroups()
}

// mkCgroup makes a cgroup directory unless it is there, recording it in the pause state when it made it.
func (st *State) mkCgroup(d string) error {
	err := os.Mkdir(d, 0o755)
	switch {
	case errors.Is(err, os.ErrExist):
		return nil
	case err != nil:
		return fmt.Errorf("creating the cgroup %s: %w", d, err)
	}
	st.Paused.Made = append(st.Paused.Made, d)
	return st.save()
}

// resume undoes a pause, complete or not: it thaws the paused tree, moves every moved process that
// still runs (and anything else left in a paused cgroup) back where it came from, and removes the
// cgroups pause made. It clears st.Paused when nothing is left; the caller saves the state.
func (st *State) resume() error {
	ps := st.Paused
	if ps == nil {
		return nil
	}
	errs := st.thaw(func(string) bool { return true })
	for _, m := range ps.Moved {
		for mount, from := range m.From {
			dir := filepath.Join(mount, cgroupRootName, pausedGroup, filepath.Base(m.Cgroup))
			for _, pid := range machine.CgroupPIDs(dir) { // the process and any child it started while moved
				if err := moveToCgroup(from, pid); err != nil && !errors.Is(err, syscall.ESRCH) {
					errs = append(errs, err)
				}
			}
		}
	}
	for i := len(ps.Made) - 1; i >= 0; i-- {
		if err := rmdirWait(ps.Made[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	st.Paused = nil
	return nil
}

// thaw thaws the paused cgroups of the moved components that match, and returns what failed.
func (st *State) thaw(match func(component string) bool) []error {
	var errs []error
	for _, m := range st.Paused.Moved {
		if !match(m.Name) {
			continue
		}
		if _, err := os.Stat(m.Cgroup); err != nil {
			continue // made and recorded, or recorded and not made: nothing in it is frozen
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := setFrozen(ctx, m.Cgroup, st.Paused.Hierarchies.V2, false)
		cancel()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// rmdirWait removes an empty cgroup directory, waiting a moment for tasks that are leaving it.
func rmdirWait(d string) error {
	var err error
	for range 50 {
		if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("removing the cgroup %s: %w", d, err)
}

// Unpause thaws a paused lab, puts its processes back in their cgroups, and waits (up to ctx's end, and
// at most a minute) for the API server's /readyz to answer ok. The lab is running again once the thaw is
// done, even when ctx ends while waiting for /readyz; the report says so with Interrupted.
func (l *Lab) Unpause(ctx context.Context) (*UnpauseReport, error) {
	st, err := l.fresh()
	if err != nil {
		return nil, err
	}
	if st.Paused == nil {
		return nil, fmt.Errorf("%w in %s: nothing to unpause", ErrNotPaused, st.Dir)
	}
	start := time.Now()
	r := &UnpauseReport{Dir: st.Dir, Paused: start.Sub(st.Paused.Since), ProcessesNow: len(st.Paused.Moved)}
	var readyErr error
	if st.Paused.Complete {
		// etcd, the API server and the node agents first; the controller manager and the scheduler once
		// the API answers and, after a long pause, every node's lease is renewed, so that the node
		// lifecycle controller wakes to fresh leases and does not mark a paused node NotReady.
		if errs := st.thaw(func(c string) bool { return !slices.Contains(thawedLast, c) }); len(errs) == 0 {
			readyErr = r.waitReady(ctx, st.Kubeconfig, start)
			if readyErr == nil && r.Paused >= leaseWaitAfter {
				r.LeasesRenewed, r.LeaseNote = waitLeases(ctx, st.Kubeconfig, start, 15*time.Second)
			}
			if readyErr == nil && r.Paused >= plegThreshold {
				r.NodesReady, r.NodeNote = waitNodesReady(ctx, st.Kubeconfig, start, 30*time.Second)
			}
		}
	}
	if err := st.resume(); err != nil {
		_ = st.save()
		return nil, fmt.Errorf("unpausing the lab: %w (tare lab down still stops it)", err)
	}
	r.ThawTook = time.Since(start)
	if err := st.save(); err != nil {
		return nil, err
	}
	if r.ReadyAfter == 0 {
		readyErr = r.waitReady(ctx, st.Kubeconfig, start)
	}
	if readyErr != nil {
		return r, fmt.Errorf("the lab is thawed, but the API server is not ready: %w (tare lab status shows why)", readyErr)
	}
	return r, nil
}

// waitReady waits up to a minute for /readyz and records when it answered ok, or that ctx ended first.
func (r *UnpauseReport) waitReady(ctx context.Context, kubeconfig string, start time.Time) error {
	ready, err := waitReadyz(ctx, kubeconfig, time.Minute)
	if err != nil {
		r.Interrupted = ctx.Err() != nil
		return err
	}
	r.ReadyAfter = ready.Sub(start)
	return nil
}

// leaseWaitAfter is the pause from which unpause waits for the node leases. A kubelet renews its lease
// every 10 s and the node lifecycle controller marks a node NotReady once it has not seen a renewal for
// its grace period (40 s upstream): a shorter pause cannot make a lease look stale, and waiting for the
// next renewal would cost up to 10 s.
const leaseWaitAfter = 20 * time.Second

// thawLeftovers thaws any paused tree of a lab under the machine's cgroup hierarchies, for a down that
// has no state to say whether the lab was paused (a frozen process on cgroup v1 cannot die until thawed).
func thawLeftovers() {
	roots, err := machine.CgroupRoots(cgroupRootName)
	if err != nil {
		return
	}
	for _, root := range roots {
		dirs, _ := filepath.Glob(filepath.Join(root, pausedGroup, "*"))
		for _, d := range append(dirs, filepath.Join(root, pausedGroup)) {
			for _, v2 := range []bool{false, true} {
				if _, err := readFreezeState(d, v2); err == nil {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					_ = setFrozen(ctx, d, v2, false)
					cancel()
				}
			}
		}
	}
}

// holdsTasks says whether a cgroup or one below it has a process in it.
func holdsTasks(cgroup string) bool {
	busy := false
	_ = filepath.WalkDir(cgroup, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			if b, err := os.ReadFile(filepath.Join(path, "cgroup.procs")); err == nil && len(strings.TrimSpace(string(b))) > 0 {
				busy = true
				return filepath.SkipAll
			}
		}
		return nil
	})
	return busy
}
