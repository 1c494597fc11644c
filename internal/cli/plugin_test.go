package cli

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// needKubectl skips without the real kubectl, which the plugin tests run tare through.
func needKubectl(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl tare is tested through the real kubectl: install it (apt-get install kubectl)")
	}
	return path
}

// pluginEnv is the environment of a kubectl that finds bin's kubectl-tare (this test binary, which runs
// tare itself under envRunCLI) first on its PATH.
func pluginEnv(bin string) []string {
	return append(os.Environ(), "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"), envRunCLI+"=1")
}

// TestPluginInstall: tare plugin install links kubectl-tare to this executable, says so, is a no-op the
// second time, and leaves another program of that name alone unless --force.
func TestPluginInstall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, PluginName)
	out, errOut, err := run(context.Background(), "plugin", "install", "--dir", dir)
	if err != nil {
		t.Fatalf("plugin install: %v\n%s", err, errOut)
	}
	if to, err := os.Readlink(link); err != nil || to != self {
		t.Errorf("%s links to %q (%v), want %s", link, to, err, self)
	}
	if !strings.Contains(out, "linked "+link) || !strings.Contains(errOut, "is not on the PATH") {
		t.Errorf("plugin install says %q, %q", out, errOut)
	}
	if out, _, err = run(context.Background(), "plugin", "install", "--dir", dir); err != nil || !strings.Contains(out, "already links") {
		t.Errorf("second install: %v, %q", err, out)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(link, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, err = run(context.Background(), "plugin", "install", "--dir", dir)
	var ec ExitCoder
	if !errors.As(err, &ec) || ec.ExitCode() != 2 || !strings.Contains(err.Error(), "--force") {
		t.Errorf("install over another program: %v, want a usage error naming --force", err)
	}
	if _, _, err = run(context.Background(), "plugin", "install", "--dir", dir, "--force"); err != nil {
		t.Errorf("install --force: %v", err)
	}
	if to, err := os.Readlink(link); err != nil || to != self {
		t.Errorf("after --force %s links to %q (%v)", link, to, err)
	}
}

// TestKubectlPlugin: through the real kubectl, kubectl tare measure --help is tare's help under kubectl's
// name, kubectl plugin list finds it, and kubectl's --kubeconfig, --context and -n reach tare's verbs.
func TestKubectlPlugin(t *testing.T) {
	t.Parallel()
	kubectlPath := needKubectl(t)
	bin := t.TempDir()
	if _, errOut, err := run(context.Background(), "plugin", "install", "--dir", bin); err != nil {
		t.Fatalf("plugin install: %v\n%s", err, errOut)
	}
	kubectl := func(args ...string) (string, string, error) {
		cmd := exec.Command(kubectlPath, args...)
		cmd.Env = pluginEnv(bin)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	out, errOut, err := kubectl("tare", "measure", "--help")
	if err != nil {
		t.Fatalf("kubectl tare measure --help: %v\n%s", err, errOut)
	}
	for _, want := range []string{"Usage:\n  kubectl tare measure [flags]", "--kubeconfig string", "--context string", "--duration"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl tare measure --help lacks %q:\n%s", want, out)
		}
	}
	if out, _, err := kubectl("plugin", "list"); err != nil || !strings.Contains(out, filepath.Join(bin, PluginName)) {
		t.Errorf("kubectl plugin list: %v\n%s", err, out)
	}
	if _, errOut, err = kubectl("tare", "measure", "--no-such-flag"); err == nil || !strings.Contains(errOut, "Run 'kubectl tare measure --help' for usage.") {
		t.Errorf("a bad flag: %v, stderr %q", err, errOut)
	}
	// kubectl's flags as a plugin gets them: --context naming a context the kubeconfig lacks is refused by
	// tare, with the context named; -n is density's --namespace.
	kc := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kc, []byte(oneContextKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err = kubectl("tare", "density", "--kubeconfig", kc, "--context", "two", "-n", "x"); err == nil || !strings.Contains(errOut, `has no context "two"`) {
		t.Errorf("kubectl tare density --context two: %v, stderr %q", err, errOut)
	}
	if _, errOut, err = kubectl("tare", "density", "--kubeconfig", kc, "-n", ""); err == nil || !strings.Contains(errOut, "--namespace") {
		t.Errorf("kubectl tare density -n '': %v, stderr %q", err, errOut)
	}
}

// TestKrewManifest: make krew builds the archive and the manifest krew installs from; the manifest has
// krew's plugin schema, names the archive's SHA-256 and files, and the archive's tare, linked as krew
// links it (kubectl-tare in krew's bin), runs as kubectl tare through the real kubectl.
func TestKrewManifest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds tare")
	}
	kubectlPath := needKubectl(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make krew needs make")
	}
	dist := t.TempDir()
	cmd := exec.Command("make", "-s", "-C", "../..", "krew", "VERSION=v0.0.1", "KREW_ARCHES=amd64", "KREW_DIST="+dist)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make krew: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dist, "tare.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct{ Name string }
		Spec       struct {
			Version, Homepage, ShortDescription, Description, Caveats string
			Platforms                                                 []struct {
				Selector struct{ MatchLabels map[string]string } `json:"selector"`
				URI      string                                  `json:"uri"`
				SHA256   string                                  `json:"sha256"`
				Bin      string                                  `json:"bin"`
				Files    []struct{ From, To string }             `json:"files"`
			}
		}
	}
	if err := yaml.UnmarshalStrict(b, &m); err != nil {
		t.Fatalf("the manifest is not krew's schema: %v", err)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "tare" ||
		m.Spec.Version != "v0.0.1" || m.Spec.ShortDescription == "" || len(m.Spec.ShortDescription) > 50 || !strings.HasPrefix(m.Spec.Homepage, "https://") {
		t.Errorf("manifest header: %+v", m)
	}
	var amd64 bool
	for _, p := range m.Spec.Platforms {
		if p.Selector.MatchLabels["os"] != "linux" || p.Bin != "tare" || !strings.HasSuffix(p.URI, "/v0.0.1/tare_linux_"+p.Selector.MatchLabels["arch"]+".tar.gz") {
			t.Errorf("platform %+v", p)
		}
		if p.Selector.MatchLabels["arch"] != "amd64" {
			continue
		}
		amd64 = true
		archive := filepath.Join(dist, "tare_linux_amd64.tar.gz")
		ab, err := os.ReadFile(archive)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(ab)
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(p.SHA256) || p.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("sha256 %s is not the archive's %x", p.SHA256, sum)
		}
		// What krew does: unpack the files, link kubectl-tare in its bin to the plugin's bin.
		store, krewBin := t.TempDir(), t.TempDir()
		untar(t, archive, store)
		for _, f := range p.Files {
			if _, err := os.Stat(filepath.Join(store, f.From)); err != nil {
				t.Errorf("the archive lacks %s: %v", f.From, err)
			}
		}
		if err := os.Symlink(filepath.Join(store, p.Bin), filepath.Join(krewBin, PluginName)); err != nil {
			t.Fatal(err)
		}
		c := exec.Command(kubectlPath, "tare", "measure", "--help")
		c.Env = append(os.Environ(), "PATH="+krewBin+string(filepath.ListSeparator)+os.Getenv("PATH"))
		out, err := c.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "kubectl tare measure [flags]") {
			t.Errorf("kubectl tare measure --help with the archive's tare: %v\n%s", err, out)
		}
	}
	if !amd64 {
		t.Error("no linux/amd64 platform")
	}
}

// untar unpacks a .tar.gz of plain files into dir.
func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.OpenFile(filepath.Join(dir, filepath.Base(h.Name)), os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, tr); err != nil { //nolint:gosec // the test's own archive
			t.Fatal(err)
		}
		out.Close()
	}
}
