package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/lab/labtest"
	"github.com/tare-dev/tare/internal/summary"
)

// TestLabContext: the lab as kind and minikube users use kubectl. The user has a kubeconfig of their own
// (made with kubectl, a context current); tare lab up adds the lab's context and makes it current; a new
// shell with no KUBECONFIG then runs kubectl get nodes, tare measure (the pods named), tare density, tare
// datapath net and kubectl tare with no cluster flags; a shell with no kubeconfig at all gets the lab,
// said on stderr; and after lab down the user's kubeconfig is as it was, byte for byte. $HOME is the
// test's own: the real ~/.kube/config is never touched.
func TestLabContext(t *testing.T) {
	requireLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if _, errOut, err := run(ctx, "lab", "install", "--datapath"); err != nil {
		t.Fatalf("lab install --datapath: %v\n%s", err, errOut)
	}
	cache, err := lab.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	home, bare := t.TempDir(), t.TempDir() // bare: a user with no kubeconfig
	// What lives under the real $HOME stays there: the lab's components, and Go's caches (lab up builds
	// tare's image).
	t.Setenv("TARE_CACHE_DIR", cache)
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		b, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", v, err)
		}
		t.Setenv(v, strings.TrimSpace(string(b)))
	}
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	userKubeconfig := filepath.Join(home, ".kube", "config")
	for _, args := range [][]string{
		{"config", "set-cluster", "prod", "--server", "https://192.0.2.1:6443"},
		{"config", "set-credentials", "me", "--token", "t0k"},
		{"config", "set-context", "prod", "--cluster", "prod", "--user", "me"},
		{"config", "use-context", "prod"},
	} {
		kubectl(t, userKubeconfig, args...)
	}
	before, err := os.ReadFile(userKubeconfig)
	if err != nil {
		t.Fatal(err)
	}

	// The default lab directory is $TARE_LAB_DIR: the lab is the user's one lab, context tare-lab.
	dir := labtest.TempDir(t)
	t.Setenv("TARE_LAB_DIR", dir)
	labtest.WaitForPorts(ctx, t)
	out, errOut, err := run(ctx, "lab", "up")
	if err != nil {
		t.Fatalf("lab up: %v\n%s", err, errOut)
	}
	if want := "kubeconfig " + userKubeconfig + ": context tare-lab added and made current (was prod)"; !strings.Contains(out, want) {
		t.Errorf("lab up does not say %q:\n%s\n%s", want, out, errOut)
	}

	// A new shell: HOME, no KUBECONFIG, tare and kubectl-tare on the PATH (this test binary, as tare).
	bin := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tare", PluginName} {
		if err := os.Symlink(self, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	shell := func(home, script string) (string, string, error) {
		t.Helper()
		cmd := exec.CommandContext(ctx, "sh", "-c", script)
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); k != "KUBECONFIG" && k != "HOME" && k != "PATH" {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "HOME="+home, "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"), envRunCLI+"=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		t.Logf("$ %s\n%s", script, stderr.String())
		return stdout.String(), stderr.String(), err
	}
	must := func(home, script string) (string, string) {
		t.Helper()
		out, errOut, err := shell(home, script)
		if err != nil {
			t.Fatalf("%s: %v\n%s\n%s", script, err, out, errOut)
		}
		return out, errOut
	}

	want := kubectl(t, filepath.Join(dir, "kubeconfig"), "get", "nodes", "-o", "name") // through the lab's own kubeconfig
	if got, _ := must(home, "kubectl config current-context && kubectl get nodes -o name"); got != "tare-lab\n"+want+"\n" {
		t.Errorf("kubectl in a new shell: %q, want the context tare-lab and the lab's nodes %q", got, want)
	}
	must(home, "kubectl run web --image tare.lab/web:v1 --image-pull-policy Never --restart Never && kubectl wait --for=condition=Ready pod/web --timeout 90s")

	podGroups := func(out string) []string {
		t.Helper()
		var s summary.Summary
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("measure -o json: %v\n%s", err, out)
		}
		var pods []string
		for _, g := range s.Groups {
			if strings.HasPrefix(g.Name, "pod ") {
				pods = append(pods, g.Name)
			}
		}
		return pods
	}
	t.Run("measure names the pods", func(t *testing.T) {
		out, errOut := must(home, "tare measure --duration 3s -o json")
		if pods := podGroups(out); !strings.Contains(strings.Join(pods, ","), "pod default/web") {
			t.Errorf("measure's pod groups %v lack the pod kubectl made, default/web", pods)
		}
		if strings.Contains(errOut, "using the lab") {
			t.Errorf("measure fell back to the lab with a kubeconfig to use: %s", errOut)
		}
	})
	t.Run("density", func(t *testing.T) {
		out, _ := must(home, "tare density --pods 0,1 --trials 1 --window 2s --settle 0s -o json")
		var r struct{ Steps []struct{ Pods int } }
		if err := json.Unmarshal([]byte(out), &r); err != nil || !slices.ContainsFunc(r.Steps, func(s struct{ Pods int }) bool { return s.Pods == 1 }) {
			t.Errorf("density: %v, steps %+v\n%s", err, r.Steps, out)
		}
	})
	t.Run("datapath net", func(t *testing.T) {
		out, _ := must(home, "tare datapath net --paths host,pod-same-node --modes tcp-rr --sizes 1k --trials 1 --duration 1s -o json")
		r := decodeDatapath(t, out)
		if len(r.Trials) != 2 || len(r.Skipped) != 0 {
			t.Errorf("datapath net: %d trials, skipped %v, want both paths measured", len(r.Trials), r.Skipped)
		}
	})
	t.Run("kubectl tare", func(t *testing.T) {
		out, _ := must(home, "kubectl tare measure --duration 2s -o json")
		if pods := podGroups(out); !strings.Contains(strings.Join(pods, ","), "pod default/web") {
			t.Errorf("kubectl tare measure's pod groups %v lack default/web", pods)
		}
	})
	t.Run("no kubeconfig: the lab, said", func(t *testing.T) {
		out, errOut := must(bare, "tare measure --duration 2s -o json")
		if !strings.Contains(errOut, "no kubeconfig found") || !strings.Contains(errOut, "using the lab in "+dir) {
			t.Errorf("measure with no kubeconfig does not say it uses the lab: %s", errOut)
		}
		if pods := podGroups(out); !strings.Contains(strings.Join(pods, ","), "pod default/web") {
			t.Errorf("measure through the lab's kubeconfig: pod groups %v lack default/web", pods)
		}
		if _, err := os.Stat(filepath.Join(bare, ".kube", "config")); !os.IsNotExist(err) {
			t.Errorf("a verb wrote a kubeconfig: %v", err)
		}
	})

	out, errOut, err = run(ctx, "lab", "down")
	if err != nil {
		t.Fatalf("lab down: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out, "put back as it was before up (current context prod)") {
		t.Errorf("lab down does not say it put the kubeconfig back:\n%s", out)
	}
	after, err := os.ReadFile(userKubeconfig)
	if err != nil || !bytes.Equal(after, before) {
		t.Errorf("the user's kubeconfig after down is not as before (%v):\n%s\nwant:\n%s", err, after, before)
	}
	if got := kubectl(t, userKubeconfig, "config", "current-context"); got != "prod" {
		t.Errorf("current context after down: %q, want prod", got)
	}
}
