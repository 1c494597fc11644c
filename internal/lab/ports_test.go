package lab

import (
	"context"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tare-dev/tare/internal/component"
)

// TestPortOffsets: labs whose offsets differ by a multiple of 100 never share a port, and an offset out of
// range or on a lab with nodes is refused.
func TestPortOffsets(t *testing.T) {
	t.Parallel()
	all := component.Names(component.Entry.InLab)
	seen := map[int]string{}
	for off := 0; off <= 5000; off += 100 {
		for _, p := range (portSet{off}).of(all) {
			if p.Port > 65535 {
				t.Fatalf("offset %d moves %s to %d", off, p, p.Port)
			}
			if o := seen[p.Port]; o != "" {
				t.Errorf("port %d: %s at offset %d and %s", p.Port, p, off, o)
			}
			seen[p.Port] = p.String() + " at offset " + strconv.Itoa(off)
		}
	}
	for _, tc := range []struct {
		opts UpOptions
		want string
	}{
		{UpOptions{ControlPlaneOnly: true, PortOffset: -1}, "want 0 to"},
		{UpOptions{ControlPlaneOnly: true, PortOffset: maxPortOffset + 1}, "want 0 to"},
		{UpOptions{PortOffset: 100}, "only a control-plane-only lab"},
		{UpOptions{ControlPlaneOnly: true, PortOffset: maxPortOffset}, ""},
		{UpOptions{}, ""},
	} {
		err := tc.opts.CheckPortOffset()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("offset %d (control plane only %v): %v, want %q", tc.opts.PortOffset, tc.opts.ControlPlaneOnly, err, tc.want)
		}
	}
}

// TestLabsSideBySide runs a second control-plane-only lab, its ports moved by 100, beside a first one (a
// lab with a node as root): each has its own etcd and API server (a ConfigMap made in one is not in the
// other), the second's components listen where its state says, a retune of the second restarts only its
// own scheduler, one paused lab keeps the other from pausing (the paused cgroup is the machine's), and the
// second's down leaves the first whole, with its bridge. Started again warm with another offset, the
// second serves on the new port with its kubeconfig rewritten and its etcd data kept.
func TestLabsSideBySide(t *testing.T) {
	node := os.Geteuid() == 0
	ctx, first := upLab(t, UpOptions{ControlPlaneOnly: !node}, 5*time.Minute)
	opts := UpOptions{ControlPlaneOnly: true, PortOffset: 100, StopWithCaller: true}
	if err := WaitPortsFree(ctx, opts); err != nil {
		t.Fatal(err)
	}
	opts.Dir = tempLabDir(t)
	second, err := Up(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := url.Parse(second.Server); err != nil || u.Port() != strconv.Itoa(apiserverPort+100) || second.PortOffset != 100 {
		t.Errorf("the second lab serves at %s (offset %d), want port %d", second.Server, second.PortOffset, apiserverPort+100)
	}
	for _, p := range second.Processes {
		args := strings.Join(p.Args, " ")
		switch p.Name {
		case component.Etcd, component.APIServer:
			if !strings.Contains(args, "127.0.0.1:"+strconv.Itoa(etcdClientPort+100)) {
				t.Errorf("%s of the second lab does not use etcd at %d: %s", p.Name, etcdClientPort+100, args)
			}
		case component.ControllerManager, component.Scheduler:
			want := map[string]int{component.ControllerManager: kcmPort + 100, component.Scheduler: schedulerPort + 100}[p.Name]
			if !slices.Contains(p.Args, strconv.Itoa(want)) {
				t.Errorf("%s of the second lab does not listen on %d: %s", p.Name, want, args)
			}
		}
	}
	c1, err := Client(first.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := Client(second.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "first-only"}}
	if _, err := c1.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, cm.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the second lab sees the first one's ConfigMap: %v", err)
	}
	ts, err := at(second.Dir).PprofTargets()
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range ts {
		if tg.Component == component.Scheduler && !strings.HasSuffix(tg.Base, ":"+strconv.Itoa(schedulerPort+100)) {
			t.Errorf("the second lab's scheduler profiles at %s, want port %d", tg.Base, schedulerPort+100)
		}
	}
	firstPIDs := labPIDs(t, first.Dir)
	r, err := at(second.Dir).Retune(ctx, []Tuning{{Component: component.Scheduler, Flag: "v", Value: "2"}}, nil)
	if err != nil || !slices.Equal(r.Restarted, []string{component.Scheduler}) {
		t.Fatalf("retune of the second lab's scheduler: %+v, %v", r, err)
	}
	if node {
		if _, err := at(second.Dir).Pause(ctx, PauseOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := at(first.Dir).Pause(ctx, PauseOptions{}); err == nil || !strings.Contains(err.Error(), "another lab is paused") {
			t.Errorf("pausing the first lab while the second is paused: %v, want a refusal", err)
			_, _ = at(first.Dir).Unpause(context.WithoutCancel(ctx))
		}
		if _, err := at(second.Dir).Unpause(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cm2 := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "second-only"}}
	if _, err := c2.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, cm2, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Down(context.WithoutCancel(ctx), second.Dir, true); err != nil {
		t.Fatal(err)
	}
	if !maps(firstPIDs, labPIDs(t, first.Dir)) {
		t.Errorf("the first lab's processes changed: %v -> %v", firstPIDs, labPIDs(t, first.Dir))
	}
	if err := first.Whole(first.Dir); err != nil {
		t.Errorf("the first lab after the second's retune and down: %v", err)
	}
	if body, err := c1.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil || string(body) != "ok" {
		t.Errorf("the first lab's /readyz = %q, %v", body, err)
	}
	if _, err := os.Stat("/sys/class/net/" + bridgeName); node && err != nil {
		t.Errorf("the first lab's bridge is gone after the second's down: %v", err)
	}

	opts.PortOffset = 200
	again, err := Up(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := url.Parse(again.Server); err != nil || u.Port() != strconv.Itoa(apiserverPort+200) {
		t.Errorf("warm with offset 200 the second lab serves at %s", again.Server)
	}
	c3, err := Client(again.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c3.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, cm2.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the second lab's ConfigMap after its warm start on other ports: %v", err)
	}
	if _, err := Down(context.WithoutCancel(ctx), again.Dir, false); err != nil {
		t.Fatal(err)
	}
	if err := first.Whole(first.Dir); err != nil {
		t.Errorf("the first lab after the second's second down: %v", err)
	}
}
