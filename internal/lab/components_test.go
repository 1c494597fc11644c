package lab

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/classify"
	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/testenv"
)

func TestMissingPackages(t *testing.T) {
	t.Parallel()
	none := func(string) (string, error) { return "", exec.ErrNotFound }
	all := func(p string) (string, error) { return "/usr/bin/" + p, nil }
	if got := missingPackages(none); len(got) < 4 || got[0] != "etcd-server" {
		t.Errorf("nothing installed: missing %v", got)
	}
	got := missingPackages(all)
	for _, p := range got {
		if p != "containernetworking-plugins" { // found by file, not on PATH
			t.Errorf("everything on PATH, yet %s missing", p)
		}
	}
}

func TestCanInstall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		missing []string
		euid    int
		apt     bool
		want    string
	}{
		{"nothing to do", nil, 1000, false, ""},
		{"not root", []string{"containerd"}, 1000, true, "needs root: run tare lab install with sudo"},
		{"no apt", []string{"runc"}, 0, false, "there is no apt-get"},
		{"root with apt", []string{"runc"}, 0, true, ""},
	}
	for _, tt := range tests {
		err := canInstall(tt.missing, tt.euid, tt.apt)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrPrerequisite) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestInstallBadBinDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "kube-apiserver"), []byte("not executable"), 0o644)
	_, err := Install(context.Background(), InstallOptions{BinDir: dir})
	if err == nil || !strings.Contains(err.Error(), "--bin-dir "+dir) {
		t.Errorf("bad --bin-dir: %v", err)
	}
}

// TestInstall gets every real component (building the Kubernetes ones the first time), checks each runs
// and reports the pinned version, and that a second install is a no-op.
func TestInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("installs packages and builds Kubernetes")
	}
	testenv.NeedRoot(t, "installing packages and the components' binaries")
	ctx := context.Background()
	comps, err := Install(ctx, InstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Component{}
	for _, c := range comps {
		byName[c.Name] = c
		if strings.HasPrefix(c.Name, "image ") { // an OCI archive (imported by the lab tests)
			if fi, err := os.Stat(c.Path); err != nil || fi.Size() == 0 {
				t.Errorf("%s: %v", c.Name, err)
			}
			continue
		}
		if err := executable(c.Path); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	for _, name := range built {
		out, err := exec.Command(byName[name].Path, "--version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), KubernetesVersion) {
			t.Errorf("%s --version = %q, %v; want %s", name, out, err, KubernetesVersion)
		}
	}
	for _, name := range []string{"etcd", "containerd", "runc", "iptables", "bridge", "kwok"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("%s missing from the install", name)
		}
	}
	again, err := Install(ctx, InstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range again {
		if c.Source != "cached" && c.Source != "present" {
			t.Errorf("second install did work for %s (%s)", c.Name, c.Source)
		}
	}
}

// TestFromRegistry: the lab's lists of components, now read from the registry, are what they were when
// each was written out here.
func TestFromRegistry(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff([]string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"}, built); diff != "" {
		t.Errorf("built (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kwok"}, labComponents); diff != "" {
		t.Errorf("--set components (-want +got):\n%s", diff)
	}
	want := []debianPackage{{"etcd", "etcd-server"}, {"containerd", "containerd"}, {"runc", "runc"},
		{"/usr/lib/cni/bridge", "containernetworking-plugins"}, {"iptables", "iptables"}, {"/bin/busybox", "busybox-static"}}
	if diff := cmp.Diff(want, debianPackages, cmp.AllowUnexported(debianPackage{})); diff != "" {
		t.Errorf("Debian packages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet",
		"kube-proxy", "containerd", "containerd-shim-runc-v2", "kwok"}, labPrograms); diff != "" {
		t.Errorf("lab programs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"kubelet", "kube-proxy", "kwok"}, stopFirst); diff != "" {
		t.Errorf("stopped first (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2"}, nodePrograms); diff != "" {
		t.Errorf("the node's programs (-want +got):\n%s", diff)
	}
	ports := map[int]string{}
	for _, p := range (portSet{}).of(component.Names(component.Entry.InLab)) {
		if p.Port <= 0 || ports[p.Port] != "" {
			t.Errorf("port %d of %s: not set, or also %s's", p.Port, p, ports[p.Port])
		}
		ports[p.Port] = p.String()
	}
	if len(ports) != len(allPorts) {
		t.Errorf("%d of the lab's %d ports belong to a lab component", len(ports), len(allPorts))
	}
	if got := []int{apiserverPort, kcmPort, schedulerPort, kubeletPort, proxyMetrics}; !slices.Equal(got, []int{6443, 10257, 10259, 10250, 10249}) {
		t.Errorf("the components' ports are %v, not their upstream defaults", got)
	}
}

// TestUpComponents: what each kind of up runs, finds programs for, checks the ports of and reads profiles
// from.
func TestUpComponents(t *testing.T) {
	t.Parallel()
	control := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}
	node := []string{"kubelet", "kube-proxy", "containerd", "containerd-shim", "runc", "cni"}
	for _, tc := range []struct {
		name  string
		opts  UpOptions
		want  []string
		ports []string
	}{
		{"full", UpOptions{}, append(slices.Clone(control), node...), []string{"etcd", "etcd (peer)", "kube-apiserver",
			"kube-controller-manager", "kube-scheduler", "kubelet", "kubelet (healthz)", "kube-proxy (metrics)", "kube-proxy (healthz)"}},
		{"full with kwok", UpOptions{KwokNodes: 2}, append(append(slices.Clone(control), node...), "kwok"), nil},
		{"control plane", UpOptions{ControlPlaneOnly: true, KwokNodes: 1}, append(slices.Clone(control), "kwok"),
			[]string{"etcd", "etcd (peer)", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}},
		{"API server", UpOptions{APIServerOnly: true, ControlPlaneOnly: true}, []string{"etcd", "kube-apiserver"},
			[]string{"etcd", "etcd (peer)", "kube-apiserver"}},
	} {
		got := tc.opts.components()
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: components (-want +got):\n%s", tc.name, diff)
		}
		st := State{ControlOnly: tc.opts.ControlPlaneOnly, APIServerOnly: tc.opts.APIServerOnly, KwokNodes: tc.opts.KwokNodes}
		if diff := cmp.Diff(got, st.components()); diff != "" {
			t.Errorf("%s: the state's components differ from the options' (-options +state):\n%s", tc.name, diff)
		}
		if tc.ports == nil {
			continue
		}
		var ports []string
		for _, p := range (portSet{}).of(got) {
			ports = append(ports, p.String())
		}
		if diff := cmp.Diff(tc.ports, ports); diff != "" {
			t.Errorf("%s: ports (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestInstalledProgramsRecognised starts every installed lab program stopped at its first instruction (traced,
// so it runs nothing of its own), and checks that what /proc shows of it (exe, comm, command line) is
// recognised as its component, as the sampler will recognise it in a lab.
func TestInstalledProgramsRecognised(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the installed lab (tare lab install)")
	}
	b, err := findBinaries("", component.Names(component.Entry.InLab))
	if err != nil {
		testenv.Unavailable(t, "the lab is not installed (tare lab install): %v", err)
	}
	for _, e := range component.All() {
		if !e.InLab() {
			continue
		}
		bin := b.path(e.Name)
		if bin == "" { // programs the lab does not install, such as containerd's shims, come with another's package
			if bin, err = exec.LookPath(e.Lab.Program); err != nil {
				t.Errorf("%s: %v", e.Name, err)
				continue
			}
		}
		pid := stoppedAtExec(t, bin, "--v=2")
		read := func(f string) string {
			b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), f))
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		}
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
		if err != nil {
			t.Fatal(err)
		}
		comm, cmdline := read("comm"), read("cmdline")
		t.Logf("%s: exe %s, comm %s", e.Name, exe, comm)
		if got := classify.Component(exe, comm, cmdline); got != e.Name {
			t.Errorf("%s: exe %s, comm %s, command line %q recognised as %q", e.Name, exe, comm, cmdline, got)
		}
	}
}

// stoppedAtExec starts bin traced, so that it stops as its exec completes, and returns its PID once it is
// stopped there. The process is killed and reaped when the test ends.
func stoppedAtExec(t *testing.T, bin string, args ...string) int {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		testenv.Unavailable(t, "starting %s traced: %v", bin, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	stat := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "stat")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(stat)
		if err != nil {
			t.Fatal(err)
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && len(b) > i+2 && b[i+2] == 't' { // tracing stop
			return cmd.Process.Pid
		}
	}
	t.Fatalf("%s did not stop at exec within 10 s", bin)
	return 0
}
