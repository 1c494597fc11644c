package lab

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/testenv"
)

// TestUpAPIServerOnly starts the real etcd and kube-apiserver through Up's API-server-only option, checks
// that nothing else runs and the API answers, and that Down leaves nothing behind.
func TestUpAPIServerOnly(t *testing.T) {
	ctx, st := upLab(t, UpOptions{APIServerOnly: true}, 20*time.Minute)
	dir := st.Dir
	var names []string
	for _, p := range st.Processes {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{component.Etcd, component.APIServer}) || !st.Ready || !st.ControlOnly || st.KwokNodes != 0 {
		t.Errorf("API-server-only lab runs %v (ready %v, control only %v, kwok nodes %d), want etcd and kube-apiserver only",
			names, st.Ready, st.ControlOnly, st.KwokNodes)
	}
	ts, err := at(dir).PprofTargets()
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, tg := range ts {
		targets = append(targets, tg.Component)
	}
	if !slices.Equal(targets, []string{component.Etcd, component.APIServer}) {
		t.Errorf("pprof targets of an API-server-only lab: %v, want etcd and kube-apiserver", targets)
	}
	c, err := Client(st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if body, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil || string(body) != "ok" {
		t.Errorf("/readyz = %q, %v", body, err)
	}
	r, err := Down(ctx, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Stopped) != 2 || len(r.Strays) != 0 || r.Kept {
		t.Errorf("down stopped %d processes and %d strays (kept %v), want 2, 0 and the directory removed", len(r.Stopped), len(r.Strays), r.Kept)
	}
	for _, p := range st.Processes {
		if alive(p) {
			t.Errorf("%s (pid %d) still runs after down", p.Name, p.PID)
		}
	}
	if left := Leftovers(dir, true); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the lab directory is still there: %v", err)
	}
}

// TestComponentArgsExist checks every flag the lab gives a component against that component's --help, so
// that a misspelt or removed flag fails here rather than in a lab that does not start.
func TestComponentArgsExist(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every installed component's --help")
	}
	b, err := findBinaries("", component.Names(component.Entry.InLab))
	if err != nil {
		testenv.Unavailable(t, "the lab is not installed (tare lab install): %v", err)
	}
	p := paths{"/lab"}
	pki := &PKI{Dir: "/lab/pki"}
	helps := map[string]string{}
	for _, c := range []struct {
		name string
		args []string
	}{
		{component.Etcd, etcdArgs(p, portSet{})},
		{component.APIServer, slices.Concat(apiserverArgs(pki, "192.0.2.10", portSet{}), auditArgs("/lab/audit/policy.yaml", "/lab/audit/audit.log"))},
		{component.ControllerManager, controllerManagerArgs(p, pki, portSet{})},
		{component.Scheduler, schedulerArgs(p, portSet{})},
		{component.Containerd, containerdArgs(p)},
		{component.Kubelet, kubeletArgs(p, "node", "192.0.2.10")},
		{component.KubeProxy, kubeProxyArgs(p, "node")},
		{component.Kwok, kwokArgs("/lab/kubeconfig", "/lab/stages.yaml")},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		help, _ := exec.CommandContext(ctx, b.path(c.name), "--help").CombinedOutput() // exits 0 or 2
		cancel()
		helps[c.name] = string(help)
		for _, a := range c.args {
			if !strings.HasPrefix(a, "--") {
				continue
			}
			flag, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if !hasFlag(string(help), flag) {
				t.Errorf("%s has no flag --%s (in its --help: %.200q)", c.name, flag, help)
			}
		}
	}
	// Every flag the tuned profile sets is one its component has (a flag the component does not know
	// would stop it at start, or, for a removed one, do nothing the profile claims).
	tuned, err := ProfileTunings(ProfileTuned)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range tuned {
		help, ok := helps[x.Component]
		if !ok || !hasFlag(help, x.Flag) {
			t.Errorf("tuned profile: %s has no flag --%s", x.Component, x.Flag)
		}
	}
}
