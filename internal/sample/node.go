package sample

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
)

// NodeReader reads the node-wide part of a sample under an injected /proc and /sys root: the counters
// of /proc/stat, loadavg and pressure (kernel.NodeReader), and the task time of the node's reference, which
// it picks here. It is not safe for concurrent use.
type NodeReader struct {
	counters   *kernel.NodeReader
	procRoot   string
	sysRoot    string
	ref        Reference             // what TasksCPU counts
	cgroup     *kernel.PinnedFile    // v1: the root's cpuacct.usage
	v2         *kernel.CgroupV2Tasks // v2: the top-level cgroups and the root's threads
	cgroupFile string                // the v1 file or v2 hierarchy TasksCPU reads, "" if none
	sources    []string              // what of the node's counters could not be read, and why
	refLimit   string                // what the task-time reference misses, "" when nothing: replaced with the reference
}

// NewNodeReader probes which node sources this kernel offers.
func NewNodeReader(procRoot, sysRoot string) (*NodeReader, error) {
	counters, err := kernel.NewNodeReader(procRoot)
	if err != nil {
		return nil, err
	}
	r := &NodeReader{counters: counters, procRoot: procRoot, sysRoot: sysRoot, sources: append([]string(nil), counters.Limitations...)}
	r.detectCgroup()
	return r, nil
}

// detectCgroup picks the node's task-time reference under the sys root: a cgroup v2 hierarchy mounted at
// fs/cgroup, else the v1 cpuacct hierarchy, else the v2 hierarchy a hybrid host mounts at
// fs/cgroup/unified; without any, node busy comes from /proc/stat.
func (r *NodeReader) detectCgroup() {
	cg := filepath.Join(r.sysRoot, "fs", "cgroup")
	var errs []string
	for _, dir := range []string{cg, filepath.Join(cg, "cpuacct"), filepath.Join(cg, "cpu,cpuacct"), filepath.Join(cg, "unified")} {
		err := r.UseCgroupRoot(dir)
		if err == nil {
			return
		}
		if !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err.Error())
		}
	}
	why := "no cgroup v2 root, v1 cpuacct or hybrid v2 hierarchy under " + cg
	if len(errs) > 0 {
		why = strings.Join(errs, "; ")
	}
	r.refLimit = "node task time: " + why + "; node busy comes from /proc/stat (tick-sampled), pass --cgroup-root to name a hierarchy"
}

// Limitations lists what could not be read and why, for the report: the node's counters, then what the
// task-time reference misses.
func (r *NodeReader) Limitations() []string {
	out := append([]string(nil), r.sources...)
	if r.refLimit != "" {
		out = append(out, r.refLimit)
	}
	return out
}

// UseCgroupRoot makes the cgroup hierarchy rooted at dir the node's task-time reference: the root of a
// cgroup v2 hierarchy (any controllers, or none), or of a v1 hierarchy with the cpuacct controller. The
// error wraps os.ErrNotExist when dir is neither.
func (r *NodeReader) UseCgroupRoot(dir string) error {
	var v1 *kernel.PinnedFile
	v2, err := kernel.OpenCgroupV2Tasks(dir, r.procRoot)
	if err != nil {
		if _, statErr := kernel.ReadBounded(filepath.Join(dir, "cgroup.controllers")); statErr == nil {
			return err // a cgroup v2 hierarchy tare cannot use: say why
		}
		p := filepath.Join(dir, "cpuacct.usage")
		b, err := kernel.ReadBounded(p)
		if err != nil {
			return fmt.Errorf("%s is neither a cgroup v2 root (no cgroup.controllers) nor a v1 cpuacct root: %w", dir, err)
		}
		if _, err := kernel.ParseCgroupUsage("cpuacct.usage", b); err != nil {
			return fmt.Errorf("reading %s: %w: %w", p, kernel.ErrMalformed, err)
		}
		if v1, err = kernel.OpenPinned(p); err != nil {
			return fmt.Errorf("opening %s: %w", p, err)
		}
	}
	r.closeCgroup()
	r.refLimit = "" // about the reference replaced
	if v2 != nil {
		r.v2, r.ref, r.cgroupFile = v2, RefCgroupV2, dir
		if n := kernel.RootUserProcesses(dir, r.procRoot); n > 0 {
			r.refLimit = fmt.Sprintf("cgroup v2 reference: %d processes besides kernel threads live in the root cgroup of %s "+
				"(an init that does not place services in cgroups): what they run after their last reading before they exit, and all "+
				"of those that start and end between samples, is missed, so node busy may read low", n, dir)
		}
		return nil
	}
	r.cgroup, r.ref, r.cgroupFile = v1, RefCgroupV1, filepath.Join(dir, "cpuacct.usage")
	return nil
}

// CgroupSource names the file (v1) or hierarchy (v2) the task time is read from, "" if none.
func (r *NodeReader) CgroupSource() string { return r.cgroupFile }

// Reference says what TasksCPU counts: RefCgroupV1, RefCgroupV2, or RefProcStat when it reads nothing.
func (r *NodeReader) Reference() Reference {
	if r.ref == "" {
		return RefProcStat
	}
	return r.ref
}

// Read takes one node reading: /proc/stat, then the task time of the reference (TasksCPUNs), so that both
// are read as close together as can be; then, with full set, the load average and pressure, which are
// otherwise carried over from prev (slowly moving figures). at is when /proc/stat was read: the instant
// the node's busy is measured to, which a sample's Time and Elapsed hold.
func (r *NodeReader) Read(full bool, prev Node) (n Node, at time.Time, err error) {
	st, err := r.counters.ReadStat()
	if err != nil {
		return Node{}, time.Time{}, err
	}
	tasks := r.TasksCPU()
	if !full {
		prev.CPU, prev.Running, prev.TasksCPUNs = NodeCPU(st.CPU), st.Running, tasks
		return prev, st.At, nil
	}
	r.counters.ReadSlow(&st)
	return Node{CPU: NodeCPU(st.CPU), Running: st.Running, Load1: st.Load1, Load5: st.Load5, Load15: st.Load15, Pressure: st.Pressure,
		TasksCPUNs: tasks}, st.At, nil
}

// TasksCPU reads the node's cumulative task time (ns) from its reference, 0 if unavailable. The sampler
// reads it with /proc/stat as a sample begins, so that both span the interval between the samples' times
// (see Sampler.sample). On cgroup v2 each call also reads every thread of the root cgroup (see kernel.CgroupV2Tasks).
func (r *NodeReader) TasksCPU() uint64 {
	switch {
	case r.v2 != nil:
		v, err := r.v2.Read()
		if err != nil {
			return 0
		}
		return v
	case r.cgroup != nil:
		b, err := r.cgroup.Read()
		if err != nil {
			return 0
		}
		v, _ := kernel.ParseCgroupUsage("cpuacct.usage", b)
		return v
	}
	return 0
}

// Close releases the files the reader keeps open.
func (r *NodeReader) Close() {
	r.counters.Close()
	r.closeCgroup()
}

func (r *NodeReader) closeCgroup() {
	if r.cgroup != nil {
		r.cgroup.Close()
		r.cgroup = nil
	}
	if r.v2 != nil {
		r.v2.Close()
		r.v2 = nil
	}
	r.ref, r.cgroupFile = "", ""
}
