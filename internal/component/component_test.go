package component

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// process is one line of testdata/processes.txt: a real process of a component, as /proc showed it.
type process struct{ component, exe, comm, cmdline string }

func realProcesses(t *testing.T) []process {
	t.Helper()
	f, err := os.Open("testdata/processes.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []process
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if sc.Text() == "" || strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 4 {
			t.Fatalf("testdata/processes.txt: %d fields in %q, want 4", len(f), sc.Text())
		}
		out = append(out, process{f[0], f[1], f[2], f[3]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRecogniseRealProcesses: every process of a component seen on this machine is recognised as that
// component from what /proc shows, also when its exe cannot be read (another user's process, as non-root).
// Every component the lab runs or needs has a real process in the table.
func TestRecogniseRealProcesses(t *testing.T) {
	t.Parallel()
	procs := realProcesses(t)
	seen := map[string]bool{}
	for _, p := range procs {
		seen[p.component] = true
		if got := Recognise(p.exe, p.comm, p.cmdline); got != p.component {
			t.Errorf("Recognise(%q, %q, %.60q…) = %q, want %q", p.exe, p.comm, p.cmdline, got, p.component)
		}
		e, _ := Lookup(p.component)
		if e.Dir != "" {
			continue // recognised by where its executable lives: nothing without exe
		}
		if got := Recognise("", p.comm, p.cmdline); got != p.component {
			t.Errorf("without exe: Recognise(\"\", %q, %.60q…) = %q, want %q", p.comm, p.cmdline, got, p.component)
		}
		if got := Recognise("", p.comm, ""); got != p.component {
			t.Errorf("from comm alone: Recognise(\"\", %q, \"\") = %q, want %q", p.comm, got, p.component)
		}
	}
	for _, e := range registry {
		if e.InLab() && !seen[e.Name] {
			t.Errorf("%s: the lab runs it, but testdata/processes.txt has no real process of it", e.Name)
		}
	}
}

// TestRecogniseEveryProgram: each program of each entry is recognised by its executable, by argv[0], by comm
// (cut to 15 bytes as the kernel cuts it) and as a deleted executable (a binary replaced while it runs).
func TestRecogniseEveryProgram(t *testing.T) {
	t.Parallel()
	for _, e := range registry {
		for _, p := range e.Programs {
			comm := p[:min(len(p), commLen)]
			for _, tc := range []struct{ how, exe, comm, cmdline string }{
				{"exe", "/usr/local/bin/" + p, "x", "x --v=2"},
				{"argv[0]", "", "x", "/opt/bin/" + p + " --v=2"},
				{"comm", "", comm, ""},
				{"deleted exe", "/usr/local/bin/" + p + " (deleted)", comm, ""},
				{"hyperkube", "/usr/local/bin/hyperkube", "hyperkube", "hyperkube " + p + " --v=2"},
			} {
				if got := Recognise(tc.exe, tc.comm, tc.cmdline); got != e.Name {
					t.Errorf("%s by %s: Recognise(%q, %q, %q) = %q", e.Name, tc.how, tc.exe, tc.comm, tc.cmdline, got)
				}
			}
		}
	}
}

func TestRecogniseOthers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ exe, comm, cmdline, want string }{
		{"/usr/lib/cni/host-local", "host-local", "/usr/lib/cni/host-local", CNI},
		{"/opt/cni/bin/portmap", "portmap", "/opt/cni/bin/portmap", CNI},
		{"/usr/bin/k3s", "k3s-server", "/usr/local/bin/k3s server", "k3s"},
		{"/usr/bin/k3s", "k3s-agent", "/usr/local/bin/k3s kubelet --v=2", Kubelet}, // multi-call naming a component
		{"/usr/local/bin/hyperkube", "hyperkube", "hyperkube", ""},
		{"/usr/bin/bash", "bash", "bash -c sleep 1", ""},
		{"/usr/bin/python3", "python3", "python3 kubelet.py", ""},
		{"/usr/bin/python3", "kube-controlle", "python3", ""}, // 14 bytes: not cut, not a program
		{"", "", "", ""},
	} {
		if got := Recognise(tc.exe, tc.comm, tc.cmdline); got != tc.want {
			t.Errorf("Recognise(%q, %q, %q) = %q, want %q", tc.exe, tc.comm, tc.cmdline, got, tc.want)
		}
	}
}

// TestRegistry checks the facts entries must agree on.
func TestRegistry(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	programs := map[string]string{}
	cut := map[string]string{} // 15-byte comm -> component
	for _, e := range registry {
		if e.Name == "" || names[e.Name] {
			t.Errorf("entry %q: empty or repeated name", e.Name)
		}
		names[e.Name] = true
		if len(e.Programs) == 0 && e.Dir == "" {
			t.Errorf("%s: no program or directory to recognise it by", e.Name)
		}
		for _, p := range e.Programs {
			if other, ok := programs[p]; ok {
				t.Errorf("program %s is both %s and %s", p, other, e.Name)
			}
			programs[p] = e.Name
			if len(p) >= commLen {
				if other, ok := cut[p[:commLen]]; ok && other != e.Name {
					t.Errorf("comm %q could be %s or %s", p[:commLen], other, e.Name)
				}
				cut[p[:commLen]] = e.Name
			}
		}
		if e.Lease != "" && e.Role != RoleControlPlane {
			t.Errorf("%s holds lease %s but is not control plane", e.Name, e.Lease)
		}
		checkLab(t, e)
	}
	for _, c := range []string{Etcd, APIServer, ControllerManager, Scheduler, Kubelet, KubeProxy, Containerd, ContainerdShim,
		Runc, CNI, Pause, Kwok, CoreDNS} {
		if !names[c] {
			t.Errorf("name constant %q has no entry", c)
		}
	}
}

func checkLab(t *testing.T, e Entry) {
	t.Helper()
	l := e.Lab
	if !e.InLab() {
		if l != (Lab{}) {
			t.Errorf("%s: lab facts %+v without a program", e.Name, l)
		}
		return
	}
	if !slices.Contains(e.Programs, l.Program) && !strings.Contains(l.Program, "/"+e.Dir+"/") {
		t.Errorf("%s: the lab's program %s would not be recognised as it", e.Name, l.Program)
	}
	switch l.Source {
	case SourceDebian:
		if l.Package == "" || l.Module != "" {
			t.Errorf("%s: from Debian needs a package and no module: %+v", e.Name, l)
		}
	case SourceUpstream, SourceGoInstall:
		if l.Package != "" || !strings.HasSuffix(l.Module, "/"+l.Program) {
			t.Errorf("%s: built or installed with Go needs the module of its program: %+v", e.Name, l)
		}
		if l.Source == SourceUpstream && !strings.HasPrefix(l.Module, "k8s.io/kubernetes/cmd/") {
			t.Errorf("%s: built upstream from %s, not k8s.io/kubernetes", e.Name, l.Module)
		}
	case SourceNone:
		if l.Package != "" || l.Module != "" {
			t.Errorf("%s: not installed, yet a package or module: %+v", e.Name, l)
		}
	default:
		t.Errorf("%s: unknown source %q", e.Name, l.Source)
	}
	if e.Core() && e.Role != RoleRuntime && e.Metrics.Port == 0 {
		t.Errorf("%s: a lab component of the control plane or node without its metrics port", e.Name)
	}
}

func TestLookups(t *testing.T) {
	t.Parallel()
	if e, ok := Lookup(ControllerManager); !ok || e.Lease != "kube-controller-manager" || e.Metrics.Port != 10257 {
		t.Errorf("Lookup(%s) = %+v, %v", ControllerManager, e, ok)
	}
	if _, ok := Lookup("kube-nothing"); ok {
		t.Error("Lookup found a component that does not exist")
	}
	all := All()
	all[0].Name = "changed"
	if registry[0].Name == "changed" {
		t.Error("All returned the registry itself")
	}
	for _, tc := range []struct {
		name string
		keep func(Entry) bool
		want []string
	}{
		{"core", Entry.Core, []string{Etcd, APIServer, ControllerManager, Scheduler, Kubelet, KubeProxy, Containerd}},
		{"leases", func(e Entry) bool { return e.Lease != "" }, []string{ControllerManager, Scheduler}},
		{"tunable", func(e Entry) bool { return e.Lab.Tunable }, []string{Etcd, APIServer, ControllerManager, Scheduler, Kubelet, KubeProxy, Kwok}},
		{"built", func(e Entry) bool { return e.Lab.Source == SourceUpstream }, []string{APIServer, ControllerManager, Scheduler, Kubelet, KubeProxy}},
	} {
		if diff := cmp.Diff(tc.want, Names(tc.keep)); diff != "" {
			t.Errorf("Names(%s) (-want +got):\n%s", tc.name, diff)
		}
	}
	daemons := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy",
		"containerd", "containerd-shim-runc-v2", "kwok"}
	if diff := cmp.Diff(daemons, LabPrograms(func(e Entry) bool { return e.Lab.Daemon })); diff != "" {
		t.Errorf("LabPrograms(daemons) (-want +got):\n%s", diff)
	}
	if got := LabPrograms(nil); len(got) != len(daemons)+2 || !slices.Contains(got, "/usr/lib/cni/bridge") || !slices.Contains(got, "runc") {
		t.Errorf("LabPrograms(nil) = %q, want the daemons, runc and the CNI bridge plugin", got)
	}
	if got := Names(nil); len(got) != len(registry) {
		t.Errorf("Names(nil) has %d names, the registry %d", len(got), len(registry))
	}
}

// FuzzRecognise: any process is recognised as a registry component or as none, without a panic.
func FuzzRecognise(f *testing.F) {
	f.Add("/usr/bin/etcd", "etcd", "/usr/bin/etcd --data-dir /x")
	f.Add("/usr/local/bin/hyperkube (deleted)", "kube-controller", "hyperkube kubelet")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, exe, comm, cmdline string) {
		if got := Recognise(exe, comm, cmdline); got != "" {
			if _, ok := Lookup(got); !ok {
				t.Errorf("Recognise(%q, %q, %q) = %q, not a registry component", exe, comm, cmdline, got)
			}
		}
	})
}
