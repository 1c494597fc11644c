package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/lab/machine"
)

// DownReport is what Down stopped and removed.
type DownReport struct {
	Stopped   []Process `json:"stopped"`
	Strays    []Process `json:"strays,omitempty"` // lab processes found by command line, not in the state
	Unmounts  int       `json:"unmounted"`
	Cgroups   int       `json:"cgroups_removed"`
	Kept      bool      `json:"kept"`
	Dir       string    `json:"dir"`
	Leftover  []string  `json:"leftover,omitempty"`
	WasPaused bool      `json:"was_paused,omitempty"` // the lab was paused: down thawed it first
	// Kubeconfig says how the context tare lab up added to the user's kubeconfig was taken out ("" when up
	// added none).
	Kubeconfig string `json:"kubeconfig,omitempty"`
}

// stopFirst are the components stopped first, the node agents and kwok (so nothing restarts pods); then
// everything else goes together.
var stopFirst = component.Names(func(e component.Entry) bool {
	return e.InLab() && (e.Role == component.RoleNode || e.Role == component.RoleSimulator)
})

// nodePrograms are the programs of the lab's node: a stray one means the lab ran a node.
var nodePrograms = component.LabPrograms(func(e component.Entry) bool { return e.Lab.Daemon && e.Lab.Node })

// Down stops every process of the lab in dir and removes what it added to the machine: mounts, pod
// network namespaces, the bridge, iptables rules, cgroups, container log links and changed sysctls, and
// the context tare lab up added to the user's kubeconfig (removeUserContext). It
// works from the recorded state and, for what the state misses (a kill -9 of tare mid-up, shims), from
// the command lines that name the lab directory. The directory itself goes unless keep is set (warm
// start: data, certificates, images). Down reports anything it could not remove.
func Down(ctx context.Context, dir string, keep bool) (*DownReport, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	st, stErr := loadState(dir)
	haveState := stErr == nil || !errors.Is(stErr, ErrNotRunning) // present, maybe corrupt
	if !haveState && len(strayProcesses(dir)) == 0 {
		return nil, stErr // not a lab directory: touch nothing
	}
	loaded := st != nil
	if st == nil { // corrupt state, or lab programs without one: clean what can be found
		st = &State{Dir: dir}
		if os.Geteuid() == 0 {
			st.Cgroups, _ = machine.CgroupRoots(cgroupRootName)
		}
	}
	r := &DownReport{Dir: dir, Kept: keep}
	var errs []error
	if st.Paused != nil { // a frozen process cannot die from SIGKILL on cgroup v1 until thawed
		r.WasPaused = true
		if err := st.resume(); err != nil {
			errs = append(errs, fmt.Errorf("unpausing: %w", err))
		}
		_ = st.save()
	} else if !loaded && os.Geteuid() == 0 {
		thawLeftovers()
	}
	r.Stopped, r.Strays = stopLab(dir, st)
	if note, err := removeUserContext(st); err != nil {
		errs = append(errs, err)
	} else if note != "" {
		r.Kubeconfig = note
		st.UserContext = nil
		_ = st.save() // a second down does not undo it again
	}
	// The KUBE-/CNI- chains are the lab's when it ran a node (kubelet, kube-proxy, pods).
	nodeLab := loaded && !st.ControlOnly
	for _, s := range r.Strays {
		nodeLab = nodeLab || slices.Contains(nodePrograms, s.Name)
	}
	if os.Geteuid() == 0 {
		r.Cgroups = len(st.Cgroups)
		// A control-plane-only lab made nothing machine-wide (bridge, overlay, pod namespaces); another
		// lab beside it (lab up --port-offset) may have: only a lab with a node, or one whose kind is
		// unknown, removes those.
		errs = append(errs, restoreMachine(dir, st, nodeLab, nodeLab || !loaded)...)
	}
	r.Leftover = Leftovers(dir, nodeLab)
	if len(r.Leftover) > 0 {
		errs = append(errs, fmt.Errorf("left behind: %s", strings.Join(r.Leftover, "; ")))
	}
	switch {
	case keep:
		if err := os.Remove(statePath(dir)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	case len(r.Leftover) > 0 || !haveState:
		r.Kept = true // never RemoveAll through a mount still there, nor a directory that held no lab
	default:
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", dir, err))
		}
	}
	_ = ctx
	if len(errs) > 0 {
		return r, fmt.Errorf("lab down: %w", errors.Join(errs...))
	}
	return r, nil
}

// stopLab stops the lab's processes in order and returns those that were running and the strays (lab
// programs naming dir that the state does not record): 1. the node agents, so nothing restarts pods; 2. the
// pods' processes, by their cgroups; 3. the rest of the recorded processes, etcd last (an API server whose
// etcd is gone hangs in its graceful shutdown); 4. the strays (shims, processes started but not recorded).
func stopLab(dir string, st *State) (stopped, strays []Process) {
	var first, rest, last []Process
	for _, pr := range st.Processes {
		switch {
		case slices.Contains(stopFirst, pr.Name):
			first = append(first, pr)
		case pr.Name == component.Etcd:
			last = append(last, pr)
		default:
			rest = append(rest, pr)
		}
	}
	stopped = append(stopped, stopAll(first, 10*time.Second)...)
	machine.KillCgroupTree(st.Cgroups...)
	stopped = append(stopped, stopAll(rest, 15*time.Second)...)
	stopped = append(stopped, stopAll(last, 10*time.Second)...)
	for _, s := range strayProcesses(dir) {
		if !slices.ContainsFunc(st.Processes, func(q Process) bool { return q.PID == s.PID }) {
			strays = append(strays, s)
		}
	}
	stopAll(strays, time.Second)
	return stopped, strays
}

// restoreMachine undoes, in order, what a lab changed on the machine beside its processes; each undo lives
// in internal/lab/machine next to what up does, one file per subsystem: mounts and pod network namespaces
// (mounts.go), cgroups (cgroups.go), the extra nodes' namespaces, links and routes (nodenet.go), the
// machine's VTEP of the overlay (vtep.go), the pod bridge (residue.go), the KUBE-/CNI- iptables chains
// when the lab ran a node (iptables.go), the components' residue outside the lab directory (residue.go)
// and sysctls (sysctl.go). Without whole (a control-plane-only lab) it leaves what is the machine's, not
// the lab directory's: pod network namespaces, the VTEP and the bridge.
func restoreMachine(dir string, st *State, nodeLab, whole bool) []error {
	p := paths{dir}
	var errs []error
	before := st.NetnsBefore
	if !whole {
		before = machine.NetnsNames() // every pod namespace there is another lab's
	}
	if err := machine.Unmount(dir, before); err != nil {
		errs = append(errs, err)
	}
	if err := machine.RemoveCgroups(st.Cgroups); err != nil {
		errs = append(errs, err)
	}
	if err := machine.RemoveNodeNetworks(st.ExtraNodes); err != nil {
		errs = append(errs, err)
	}
	if whole {
		if err := machine.RemoveMachineVTEP(); err != nil {
			errs = append(errs, err)
		}
		if err := machine.RemoveLink(bridgeName); err != nil {
			errs = append(errs, err)
		}
	}
	if nodeLab {
		if err := machine.RemoveRuleChains(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, np := range append([]paths{p}, p.nodes()...) {
		machine.RemoveContainerLogLinks(np.join("pod-logs"))
		machine.RemoveShimSockets(filepath.Join(np.containerdState(), "io.containerd.runtime.v2.task", containerdNS), np.containerdSocket(), containerdNS)
		machine.RemoveCNIResults(cniNetworkName, np.join("containerd", "root", "io.containerd.grpc.v1.cri", "sandboxes"))
	}
	if err := machine.RemoveDirs(st.MadeDirs); err != nil {
		errs = append(errs, err)
	}
	if err := machine.RestoreSysctls(st.Sysctls); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// stopAll stops processes in parallel and returns those that were running.
func stopAll(ps []Process, grace time.Duration) []Process {
	return stopEach(ps, func(Process) time.Duration { return grace })
}

// stopEach is stopAll with a grace of each process's own before SIGKILL.
func stopEach(ps []Process, grace func(Process) time.Duration) []Process {
	var wg sync.WaitGroup
	var out []Process
	for _, p := range ps {
		if !alive(p) {
			continue
		}
		out = append(out, p)
		wg.Add(1)
		go func() { defer wg.Done(); stopProcess(p, grace(p)) }()
	}
	wg.Wait()
	return out
}

// Leftovers lists what of a lab is still on the machine: processes naming its directory and mounts under
// it, and for a lab with a node (node) the machine-wide things such a lab makes: its bridge, cgroups, the
// extra nodes' namespaces, links and routes, the overlay's VTEP, and KUBE-/CNI- iptables chains. A
// control-plane-only lab makes none of those, and another lab beside it may hold them.
func Leftovers(dir string, node bool) []string {
	var out []string
	for _, p := range strayProcesses(dir) {
		out = append(out, fmt.Sprintf("process %d (%s)", p.PID, p.Name))
	}
	if mounts, err := procfs.GetMounts(); err == nil {
		for _, m := range mounts {
			if strings.HasPrefix(m.MountPoint, dir+"/") {
				out = append(out, "mount "+m.MountPoint)
			}
		}
	}
	if !node {
		return out
	}
	if machine.HasLink(bridgeName) {
		out = append(out, "bridge "+bridgeName)
	}
	out = append(out, machine.CgroupRootLeftovers(cgroupRootName)...)
	out = append(out, machine.NodeNetworkLeftovers()...)
	out = append(out, machine.VTEPLeftovers()...)
	for _, c := range machine.RuleChains() {
		out = append(out, "iptables chain "+c)
	}
	return out
}
