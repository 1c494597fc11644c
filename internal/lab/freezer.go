package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/tare-dev/tare/internal/kernel"
)

// The cgroup freezer that pause uses: which hierarchies hold the paused processes (pickFreezer), moving a
// process into a cgroup, and freezing or thawing a cgroup tree on cgroup v1 (freezer.state) or v2
// (cgroup.freeze and cgroup.events).

// ErrNoFreezer says the machine has no cgroup freezer: neither the v1 freezer controller nor cgroup v2.
var ErrNoFreezer = errors.New("no cgroup freezer")

// freezerHierarchies are the cgroup hierarchies pause puts the paused processes in: Freezer freezes them
// and Acct (the v1 cpuacct hierarchy, or the v2 tree again) counts their CPU time apart, so what pause
// saves can be checked against the kernel's own accounting. The memory, cpuset and other hierarchies
// are left alone.
type freezerHierarchies struct {
	Freezer string `json:"freezer"`        // mount point of the v1 freezer hierarchy or of cgroup v2
	V2      bool   `json:"v2,omitempty"`   // Freezer is cgroup v2 (cgroup.freeze)
	Acct    string `json:"acct,omitempty"` // mount point of the v1 cpuacct hierarchy; "" when Freezer is v2 or there is none
}

// mounts lists Freezer, then Acct when it is another hierarchy.
func (h freezerHierarchies) mounts() []string {
	if h.Acct == "" || h.Acct == h.Freezer {
		return []string{h.Freezer}
	}
	return []string{h.Freezer, h.Acct}
}

// Freezer names the cgroup freezer a pause uses (tare lab pause --freezer).
type Freezer string

// The freezers. The v1 freezer controller freezes a cgroup with freezer.state, and pause also moves the
// processes into the v1 cpuacct hierarchy so that the kernel counts their CPU apart; cgroup v2 freezes
// with cgroup.freeze, which its core offers in any cgroup but the root (no controller needs enabling), and
// counts CPU in the same cgroup's cpu.stat. A hybrid machine (v1 controllers, and cgroup v2 with none at
// /sys/fs/cgroup/unified) has both.
const (
	FreezerAuto Freezer = "auto" // the v1 freezer controller when mounted, else cgroup v2
	FreezerV1   Freezer = "v1"
	FreezerV2   Freezer = "v2"
)

// Freezers lists every Freezer, in the order help text names them.
var Freezers = []Freezer{FreezerAuto, FreezerV1, FreezerV2}

// ParseFreezer reads a freezer's name; "" is FreezerAuto.
func ParseFreezer(s string) (Freezer, error) {
	if s == "" {
		return FreezerAuto, nil
	}
	if f := Freezer(s); slices.Contains(Freezers, f) {
		return f, nil
	}
	return "", fmt.Errorf("freezer %q: want auto, v1 or v2", s)
}

// pickFreezer chooses the hierarchies from the machine's mounts. FreezerAuto takes the v1 freezer
// controller when it is mounted (with v1 cpuacct beside it), else cgroup v2, whose core freezes any cgroup
// but the root; FreezerV1 and FreezerV2 take that one or fail with ErrNoFreezer.
func pickFreezer(hier []kernel.CgroupHierarchy, want Freezer) (freezerHierarchies, error) {
	var v1 freezerHierarchies
	v2 := ""
	for _, h := range hier {
		switch {
		case h.Has("freezer") && v1.Freezer == "":
			v1.Freezer = h.MountPoint
		case h.Has("cpuacct") && v1.Acct == "":
			v1.Acct = h.MountPoint
		case h.V2 && v2 == "":
			v2 = h.MountPoint
		}
	}
	onV2 := freezerHierarchies{Freezer: v2, V2: true}
	switch want {
	case FreezerAuto, "":
		switch {
		case v1.Freezer != "":
			return v1, nil
		case v2 != "":
			return onV2, nil
		}
		return freezerHierarchies{}, fmt.Errorf("%w: mount the v1 freezer controller or cgroup v2 to pause the lab", ErrNoFreezer)
	case FreezerV1:
		if v1.Freezer == "" {
			return freezerHierarchies{}, fmt.Errorf("%w: the v1 freezer controller is not mounted (no cgroup mount has the freezer option): pause with --freezer v2 or auto", ErrNoFreezer)
		}
		return v1, nil
	case FreezerV2:
		if v2 == "" {
			return freezerHierarchies{}, fmt.Errorf("%w: cgroup v2 is not mounted (no cgroup2 mount): pause with --freezer v1 or auto", ErrNoFreezer)
		}
		return onV2, nil
	}
	return freezerHierarchies{}, fmt.Errorf("freezer %q: want auto, v1 or v2", want)
}

// name is the freezer h uses: FreezerV1 or FreezerV2.
func (h freezerHierarchies) name() Freezer {
	if h.V2 {
		return FreezerV2
	}
	return FreezerV1
}

// cgroupIn returns the cgroup (a path from the hierarchy's root) a process's /proc/PID/cgroup names for
// the hierarchy mounted at mount: the v2 line (hierarchy 0) when v2, else the line listing controller.
func cgroupIn(cgs []procfs.Cgroup, v2 bool, controller string) (string, bool) {
	for _, c := range cgs {
		if (v2 && c.HierarchyID == 0) || (!v2 && slices.Contains(c.Controllers, controller)) {
			return c.Path, true
		}
	}
	return "", false
}

// controllerOf names the v1 controller a pause hierarchy is found by in /proc/PID/cgroup.
func (h freezerHierarchies) controllerOf(mount string) string {
	if mount == h.Freezer {
		return "freezer"
	}
	return "cpuacct"
}

// moveToCgroup moves every thread of process pid into the cgroup directory dir.
func moveToCgroup(dir string, pid int) error {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(fmt.Sprint(pid)), 0o644); err != nil {
		return fmt.Errorf("moving process %d to the cgroup %s: %w", pid, dir, err)
	}
	return nil
}

// freezeState is what a cgroup's freezer reports.
type freezeState int

const (
	thawed freezeState = iota
	freezing
	frozen
)

// parseFreezerState reads a v1 freezer.state file: THAWED, FREEZING or FROZEN.
func parseFreezerState(b []byte) (freezeState, error) {
	switch s := strings.TrimSpace(string(b)); s {
	case "THAWED":
		return thawed, nil
	case "FREEZING":
		return freezing, nil
	case "FROZEN":
		return frozen, nil
	default:
		return thawed, fmt.Errorf("%w: freezer.state %q", errMalformedCgroupFile, s)
	}
}

// parseCgroupEvents reads the frozen key of a v2 cgroup.events file ("populated 1\nfrozen 0\n").
func parseCgroupEvents(b []byte) (freezeState, error) {
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		if k != "frozen" {
			continue
		}
		switch v {
		case "1":
			return frozen, nil
		case "0":
			return thawed, nil
		}
		return thawed, fmt.Errorf("%w: cgroup.events frozen %q", errMalformedCgroupFile, v)
	}
	return thawed, fmt.Errorf("%w: cgroup.events without a frozen key (the kernel's cgroup v2 has no freezer before 5.2)", errMalformedCgroupFile)
}

// errMalformedCgroupFile wraps every parse error of a freezer file.
var errMalformedCgroupFile = errors.New("malformed cgroup file")

// readFreezeState reads the freezer state of the cgroup directory dir.
func readFreezeState(dir string, v2 bool) (freezeState, error) {
	if v2 {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		if err != nil {
			return thawed, err
		}
		return parseCgroupEvents(b)
	}
	b, err := os.ReadFile(filepath.Join(dir, "freezer.state"))
	if err != nil {
		return thawed, err
	}
	return parseFreezerState(b)
}

// setFrozen freezes (or thaws) the cgroup tree at dir and waits until the kernel reports every task in
// it frozen (or thawed), up to ctx's end. A v1 freezer may stay FREEZING while a task sleeps where it
// cannot be frozen; the write is repeated while waiting, as the kernel documentation advises.
func setFrozen(ctx context.Context, dir string, v2, freeze bool) error {
	file, value, want := "freezer.state", "THAWED", thawed
	if v2 {
		file, value = "cgroup.freeze", "0"
	}
	if freeze {
		want = frozen
		if value = "FROZEN"; v2 {
			value = "1"
		}
	}
	verb := "thawing"
	if freeze {
		verb = "freezing"
	}
	for tick := time.NewTicker(10 * time.Millisecond); ; {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
			tick.Stop()
			return fmt.Errorf("%s the cgroup %s: %w", verb, dir, err)
		}
		st, err := readFreezeState(dir, v2)
		if err != nil {
			tick.Stop()
			return fmt.Errorf("%s the cgroup %s: %w", verb, dir, err)
		}
		if st == want {
			tick.Stop()
			return nil
		}
		select {
		case <-ctx.Done():
			tick.Stop()
			return fmt.Errorf("%s the cgroup %s: %w", verb, dir, ctx.Err())
		case <-tick.C:
		}
	}
}
