package lab

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"
	"github.com/vishvananda/netlink"
)

// ruleChain says whether an iptables chain is one the lab's components add: kubelet and kube-proxy
// (KUBE-…) and the CNI bridge plugin's masquerade chains (CNI-…).
func ruleChain(name string) bool {
	return strings.HasPrefix(name, "KUBE-") || strings.HasPrefix(name, "CNI-")
}

// iptablesCleanup turns iptables-save output into an iptables-restore --noflush script that deletes
// every rule jumping into a lab chain from another chain, then flushes and deletes the lab chains. It
// returns "" when there is nothing to remove.
func iptablesCleanup(save string) string {
	var out strings.Builder
	var table string
	var chains, deletes []string
	flush := func() {
		if table == "" || (len(chains) == 0 && len(deletes) == 0) {
			return
		}
		fmt.Fprintf(&out, "*%s\n", table)
		for _, d := range deletes {
			fmt.Fprintf(&out, "-D %s\n", d)
		}
		for _, c := range chains {
			fmt.Fprintf(&out, "-F %s\n", c)
		}
		for _, c := range chains {
			fmt.Fprintf(&out, "-X %s\n", c)
		}
		out.WriteString("COMMIT\n")
	}
	sc := bufio.NewScanner(strings.NewReader(save))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "*"):
			flush()
			table, chains, deletes = line[1:], nil, nil
		case strings.HasPrefix(line, ":"):
			if f := strings.Fields(line[1:]); len(f) > 0 && ruleChain(f[0]) {
				chains = append(chains, f[0])
			}
		case strings.HasPrefix(line, "-A "):
			f := strings.Fields(line)
			if len(f) < 2 || ruleChain(f[1]) {
				continue // rules inside lab chains go with the chain
			}
			if i := slices.Index(f, "-j"); i >= 0 && i+1 < len(f) && ruleChain(f[i+1]) {
				deletes = append(deletes, strings.TrimPrefix(line, "-A "))
			} else if i := slices.Index(f, "-g"); i >= 0 && i+1 < len(f) && ruleChain(f[i+1]) {
				deletes = append(deletes, strings.TrimPrefix(line, "-A "))
			}
		case line == "COMMIT":
			flush()
			table = ""
		}
	}
	return out.String()
}

// removeRules deletes the lab's iptables and ip6tables rules and chains.
func removeRules() error {
	var errs []error
	for _, family := range []string{"iptables", "ip6tables"} {
		save, err := exec.Command(family + "-save").Output()
		if err != nil {
			if _, lerr := exec.LookPath(family + "-save"); lerr != nil {
				continue
			}
			errs = append(errs, fmt.Errorf("%s-save: %w", family, err))
			continue
		}
		script := iptablesCleanup(string(save))
		if script == "" {
			continue
		}
		cmd := exec.Command(family+"-restore", "--noflush")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s-restore: %w: %s", family, err, bytes.TrimSpace(out)))
		}
	}
	return errors.Join(errs...)
}

// labMounts picks, from the mount points of this machine, those the lab made: everything under the lab
// directory and the pod network namespaces (/run/netns/cni-…) that did not exist before up. Deepest first.
func labMounts(mountPoints []string, dir string, netnsBefore []string) []string {
	var out []string
	for _, m := range mountPoints {
		switch {
		case strings.HasPrefix(m, dir+"/"):
		case strings.HasPrefix(m, "/run/netns/cni-") && !slices.Contains(netnsBefore, filepath.Base(m)):
		default:
			continue
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return strings.Count(out[i], "/") > strings.Count(out[j], "/") || (strings.Count(out[i], "/") == strings.Count(out[j], "/") && out[i] > out[j])
	})
	return out
}

// unmountLab detaches every mount the lab made and removes the pod netns files.
func unmountLab(dir string, netnsBefore []string) error {
	mounts, err := procfs.GetMounts()
	if err != nil {
		return fmt.Errorf("reading mounts: %w", err)
	}
	var points []string
	for _, m := range mounts {
		points = append(points, m.MountPoint)
	}
	var errs []error
	for _, m := range labMounts(points, dir, netnsBefore) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
		}
	}
	for _, n := range newNetns(netnsBefore) {
		if err := os.Remove(filepath.Join("/run/netns", n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// netnsNames lists /run/netns.
func netnsNames() []string {
	ents, _ := os.ReadDir("/run/netns")
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func newNetns(before []string) []string {
	var out []string
	for _, n := range netnsNames() {
		if strings.HasPrefix(n, "cni-") && !slices.Contains(before, n) {
			out = append(out, n)
		}
	}
	return out
}

// removeBridge deletes the lab's pod bridge (the veths went with the pods' network namespaces).
func removeBridge() error {
	l, err := netlink.LinkByName(bridgeName)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("finding the %s bridge: %w", bridgeName, err)
	}
	if err := netlink.LinkDel(l); err != nil {
		return fmt.Errorf("deleting the %s bridge: %w", bridgeName, err)
	}
	return nil
}

// cgroupMounts returns the mount points of every cgroup hierarchy (v1 controllers and the v2 tree).
func cgroupMounts() ([]string, error) {
	mounts, err := procfs.GetMounts()
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	var out []string
	for _, m := range mounts {
		if (m.FSType == "cgroup" || m.FSType == "cgroup2") && !slices.Contains(out, m.MountPoint) {
			out = append(out, m.MountPoint)
		}
	}
	return out, nil
}

// createCgroupRoot makes the lab's cgroup root (the kubelet's cgroupRoot) in every hierarchy, copying
// cpuset.cpus and cpuset.mems from the parent (a v1 cpuset cgroup without them cannot hold tasks). It
// returns the directories it created.
func createCgroupRoot() ([]string, error) {
	hier, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	var made []string
	for _, h := range hier {
		d := filepath.Join(h, cgroupRootName)
		if err := os.Mkdir(d, 0o755); err != nil {
			if errors.Is(err, os.ErrExist) {
				made = append(made, d)
				continue
			}
			return made, fmt.Errorf("creating the lab cgroup %s: %w", d, err)
		}
		made = append(made, d)
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				_ = os.WriteFile(filepath.Join(d, f), b, 0o644)
			}
		}
	}
	return made, nil
}

// removeCgroups kills every task left in the lab's cgroups (pod processes whose shim died) and removes
// the directories, deepest first.
func removeCgroups(roots []string) error {
	killCgroupTree(roots...)
	dirs := cgroupDirs(roots)
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	var errs []error
	for _, d := range dirs {
		var err error
		for range 50 { // killed tasks take a moment to leave
			if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
				err = nil
				break
			}
			if !errors.Is(err, syscall.EBUSY) {
				break
			}
			sleepShort()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

func cgroupPIDs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// labSysctls are the kernel settings kubelet, kube-proxy and the bridge plugin change; up records them
// and down puts them back.
var labSysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward",
	"net/ipv4/conf/all/route_localnet", "net/bridge/bridge-nf-call-iptables", "net/bridge/bridge-nf-call-ip6tables",
}

func readSysctls() map[string]string {
	out := map[string]string{}
	for _, k := range labSysctls {
		if b, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil {
			out[k] = strings.TrimSpace(string(b))
		}
	}
	return out
}

func restoreSysctls(saved map[string]string) error {
	var errs []error
	for k, v := range saved {
		p := filepath.Join("/proc/sys", k)
		if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == v {
			continue
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s=%s: %w", k, v, err))
		}
	}
	return errors.Join(errs...)
}

// removeContainerLogLinks removes the kubelet's /var/log/containers symlinks into the lab's pod logs.
func removeContainerLogLinks(p paths) {
	ents, _ := os.ReadDir("/var/log/containers")
	for _, e := range ents {
		l := filepath.Join("/var/log/containers", e.Name())
		if t, err := os.Readlink(l); err == nil && strings.HasPrefix(t, p.join("pod-logs")+"/") {
			_ = os.Remove(l)
		}
	}
}

// removeShimSockets removes the sockets of shims that were killed rather than stopped: containerd 1.6
// names them /run/containerd/s/sha256(address/namespace/id).
func removeShimSockets(p paths) {
	tasks := filepath.Join(p.containerdState(), "io.containerd.runtime.v2.task", containerdNS)
	ents, _ := os.ReadDir(tasks)
	for _, e := range ents {
		sum := sha256.Sum256([]byte(filepath.Join(p.containerdSocket(), containerdNS, e.Name())))
		_ = os.Remove(fmt.Sprintf("/run/containerd/s/%x", sum))
	}
}

// labPrograms are the executables a lab runs (and containerd's shims).
var labPrograms = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet",
	"kube-proxy", "containerd", "containerd-shim-runc-v2", "kwok"}

// strayProcesses finds processes that belong to the lab but are not in its state (a kill -9 of tare
// between starting a component and recording it, or shims): a lab program whose command line names the
// lab directory. Anything else that mentions the directory (a shell, an editor, tare itself) is left alone.
func strayProcesses(dir string) []Process {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []Process
	for _, pr := range procs {
		if pr.PID == self {
			continue
		}
		args, err := pr.CmdLine()
		if err != nil || len(args) == 0 || !slices.Contains(labPrograms, filepath.Base(args[0])) {
			continue
		}
		for _, a := range args {
			if a == dir || strings.HasPrefix(a, dir+"/") || strings.Contains(a, "="+dir+"/") {
				st, _ := pr.Stat()
				out = append(out, Process{Name: filepath.Base(args[0]), PID: pr.PID, StartTicks: st.Starttime, Args: args})
				break
			}
		}
	}
	return out
}

// chainsIn lists the lab chains in iptables-save output as "table CHAIN".
func chainsIn(save string) []string {
	var out []string
	var table string
	for _, line := range strings.Split(save, "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
		case strings.HasPrefix(line, ":"):
			if f := strings.Fields(line[1:]); len(f) > 0 && ruleChain(f[0]) {
				out = append(out, table+" "+f[0])
			}
		}
	}
	return out
}

// labChains lists the lab chains present in iptables and ip6tables.
func labChains() []string {
	var out []string
	for _, family := range []string{"iptables", "ip6tables"} {
		save, err := exec.Command(family + "-save").Output()
		if err != nil {
			continue
		}
		for _, c := range chainsIn(string(save)) {
			out = append(out, family+" "+c)
		}
	}
	return out
}

// machineDirs are directories outside the lab directory that the components create whatever they are
// told: kubelet's device-plugins directory and container log links, libcni's result cache, containerd's
// shim sockets, the pod network namespaces. up records which were absent; down removes those.
var machineDirs = []string{"/var/lib/kubelet", "/var/lib/cni", "/var/log/containers", "/var/log/pods", "/run/containerd", "/run/netns"}

func absentDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
			out = append(out, d)
		}
	}
	return out
}

// removeMachineDirs removes the directories the lab made (namespaces and sockets only when empty).
func removeMachineDirs(made []string) error {
	var errs []error
	for _, d := range made {
		var err error
		if d == "/run/netns" || d == "/run/containerd" {
			_ = os.Remove(filepath.Join(d, "s"))
			err = os.Remove(d)
			if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
				err = nil // in use by someone else now: leave it
			}
		} else {
			err = os.RemoveAll(d)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// removeCNIResults removes libcni's cached results for the lab's pods (/var/lib/cni/results keeps one
// per network and interface, named NETWORK-CONTAINERID-IFNAME) when the directory predates the lab.
func removeCNIResults(p paths) {
	sandboxes, _ := os.ReadDir(p.join("containerd", "root", "io.containerd.grpc.v1.cri", "sandboxes"))
	ents, _ := os.ReadDir("/var/lib/cni/results")
	for _, e := range ents {
		n := e.Name()
		ours := strings.HasPrefix(n, cniNetworkName+"-")
		for _, sb := range sandboxes {
			ours = ours || strings.Contains(n, "-"+sb.Name()+"-")
		}
		if ours {
			_ = os.Remove(filepath.Join("/var/lib/cni/results", n))
		}
	}
}
