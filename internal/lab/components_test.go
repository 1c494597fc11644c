package lab

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
