package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestProfileBadInput: each bad flag or file is refused with a message that says what to do.
func TestProfileBadInput(t *testing.T) {
	dir := t.TempDir()
	notProfile := filepath.Join(dir, "not.pb.gz")
	if err := os.WriteFile(notProfile, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"profile", "--frequency", "0"}, "--frequency 0: want 1 to 10000"},
		{[]string{"profile", "--duration", "0s"}, "--duration must be positive"},
		{[]string{"profile", "--pod", "a/b/c"}, `--pod "a/b/c": want NAMESPACE/NAME`},
		{[]string{"profile", "--html", "/nonexistent/x.html"}, "directory /nonexistent does not exist"},
		{[]string{"profile", "diff", "a.pb.gz"}, "accepts 2 arg(s)"},
		{[]string{"profile", "diff", filepath.Join(dir, "missing.pb.gz"), notProfile}, "no such file"},
		{[]string{"profile", "diff", notProfile, notProfile}, "is it a pprof profile (tare profile --pprof)?"},
	} {
		_, stderr, err := run(context.Background(), c.args...)
		if err == nil || !strings.Contains(stderr, c.want) {
			t.Errorf("tare %s: err %v, stderr %q; want it to say %q", strings.Join(c.args, " "), err, stderr, c.want)
		}
	}
}

// TestProfileNode profiles the node for a few seconds: the table shows groups and tare's own cost, the
// pprof file holds labelled samples, the HTML report is written, tare profile diff compares two runs, and
// no perf event is left open.
func TestProfileNode(t *testing.T) {
	testenv.NeedRoot(t, "sampling every CPU needs CAP_PERFMON")
	burnInTare(t) // every check below looks for tare (self)
	dir := t.TempDir()
	a, b, page := filepath.Join(dir, "a.pb.gz"), filepath.Join(dir, "b.pb.gz"), filepath.Join(dir, "p.html")
	stdout, stderr, err := run(context.Background(), "profile", "--duration", "3s", "--pprof", a, "--html", page)
	if err != nil {
		t.Fatalf("tare profile: %v\nstderr: %s", err, stderr)
	}
	t.Logf("stdout:\n%s", stdout)
	for _, want := range []string{"samples of cpu-clock at 99 Hz on", "tare's own cost: ", "tare (self): ", "own %", "with callees %"} {
		if !strings.Contains(stdout, want) && !strings.Contains(stdout, strings.Replace(want, "cpu-clock", "cycles", 1)) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if !strings.Contains(stderr, "pprof profile: "+a) || !strings.Contains(stderr, "HTML report: "+page) {
		t.Errorf("stderr: %s", stderr)
	}
	html, err := os.ReadFile(page)
	if err != nil || !bytes.Contains(html, []byte(`"kind":"flame"`)) || !bytes.Contains(html, []byte("tare (self)")) {
		t.Errorf("HTML report lacks the flame graph of groups (err %v)", err)
	}
	_, stderr, err = run(context.Background(), "profile", "--duration", "1s", "--pprof", b, "--group", "tare (self)")
	if err != nil {
		t.Fatalf("tare profile --group: %v\n%s", err, stderr)
	}
	diff, stderr, err := run(context.Background(), "profile", "diff", a, b)
	if err != nil || !strings.Contains(diff, "tare (self)") || !strings.Contains(diff, "function (own CPU)") {
		t.Errorf("tare profile diff: %v\n%s\n%s", err, diff, stderr)
	}
	if goBin, err := exec.LookPath("go"); err == nil {
		out, err := exec.Command(goBin, "tool", "pprof", "-top", "-tagfocus", `group=tare \(self\)`, a).CombinedOutput()
		// The burner's frame, named from this (stripped) test binary's Go table: tare's own work is now too
		// little for its runtime's frames to pass pprof's cut.
		if err != nil || !strings.Contains(string(out), "burnInTare") {
			t.Errorf("go tool pprof -tagfocus group=tare (self): %v\n%s", err, out)
		}
	}
	if n := testload.PerfFDs(t); n != 0 {
		t.Errorf("%d perf event descriptors left open", n)
	}
}

// TestProfileInterrupt cancels a profile as Ctrl-C does: tare stops at once, prints what it has, and
// leaves no perf event open.
func TestProfileInterrupt(t *testing.T) {
	testenv.NeedRoot(t, "sampling every CPU needs CAP_PERFMON")
	burnInTare(t)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	stdout, stderr, err := run(ctx, "profile", "--duration", "1m")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("tare profile took %s after Ctrl-C at 1.5s", d)
	}
	if err != nil || !strings.Contains(stdout, "samples of") {
		t.Errorf("interrupted profile: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
	}
	if n := testload.PerfFDs(t); n != 0 {
		t.Errorf("%d perf event descriptors left open after Ctrl-C", n)
	}
}

// TestProfileNoPermission runs tare profile as the user nobody, who may not sample other processes
// (perf_event_paranoid above -1, no CAP_PERFMON): the error names the sysctl and the capability.
func TestProfileNoPermission(t *testing.T) {
	testenv.NeedRoot(t, "to switch to another user")
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil || strings.TrimSpace(string(b)) == "-1" {
		testenv.Unavailable(t, "perf_event_paranoid is -1 (or unreadable): every user may sample every CPU")
	}
	out, errOut, err := runAsNobody(t, "profile", "--duration", "1s")
	if err == nil {
		t.Fatalf("tare profile as nobody succeeded:\n%s", out)
	}
	for _, want := range []string{"perf events not permitted", "CAP_PERFMON", "kernel.perf_event_paranoid=-1", "(now " + strings.TrimSpace(string(b)) + ")"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// checkProfileOfLabPod moves a burner into every cgroup of pod ns/name's processes on the running lab (a
// burner moved into a lab pod) and profiles the node: the burner's samples carry that pod's group, named
// through the API, and hold about one CPU's worth. TestDensityOnLab calls it while its pods run, so that
// one lab serves both.
func checkProfileOfLabPod(ctx context.Context, t *testing.T, kc string, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cgroups := podCgroups(t, string(pod.UID))
	burner := exec.Command("sh", "-c", "while :; do :; done")
	if err := burner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = burner.Process.Kill(); _ = burner.Wait() }()
	for _, dir := range cgroups {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(burner.Process.Pid)), 0o644); err != nil {
			t.Fatalf("moving the burner into %s: %v", dir, err)
		}
	}
	const seconds = 3
	out, errOut, err := run(ctx, "profile", "--duration", strconv.Itoa(seconds)+"s", "--kubeconfig", kc, "-o", "json")
	if err != nil {
		t.Fatalf("tare profile: %v\n%s", err, errOut)
	}
	var sum struct {
		Frequency int `json:"frequency_hz"`
		Groups    []struct {
			Name    string `json:"group"`
			Samples int    `json:"samples"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("tare profile -o json: %v\n%s", err, out)
	}
	want := "pod " + ns + "/" + name
	for _, g := range sum.Groups {
		if g.Name != want {
			continue
		}
		// One busy CPU for 3 s at 99 Hz is 297 samples; the burner shares 2 CPUs with the lab.
		t.Logf("%s: %d samples in %d s at %d Hz", want, g.Samples, seconds, sum.Frequency)
		if full := seconds * sum.Frequency; g.Samples < full/2 || g.Samples > full*11/10 {
			t.Errorf("%s: %d samples, want about one CPU's %d", want, g.Samples, full)
		}
		return
	}
	t.Errorf("no group %q in the profile: %s", want, out)
}

// podCgroups is every cgroup directory (v1 hierarchies, or the v2 tree) that a process of the pod with
// this UID is in, from /proc/PID/cgroup: where the kubelet put the pod's pause container.
func podCgroups(t *testing.T, uid string) []string {
	t.Helper()
	marks := []string{"pod" + uid, "pod" + strings.ReplaceAll(uid, "-", "_")}
	pids, err := kernel.ListPIDs("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
		if err != nil || !strings.Contains(string(b), marks[0]) && !strings.Contains(string(b), marks[1]) {
			continue
		}
		var dirs []string
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.SplitN(line, ":", 3)
			if len(f) != 3 || !strings.Contains(f[2], marks[0]) && !strings.Contains(f[2], marks[1]) {
				continue
			}
			root := "/sys/fs/cgroup/unified"
			if f[1] != "" {
				root = "/sys/fs/cgroup/" + strings.TrimPrefix(f[1], "name=")
			}
			if _, err := os.Stat(filepath.Join(root, f[2], "cgroup.procs")); err == nil {
				dirs = append(dirs, filepath.Join(root, f[2]))
			}
		}
		if len(dirs) > 0 {
			return dirs
		}
	}
	t.Fatalf("no process of pod %s found in /proc", uid)
	return nil
}

// burnInTare keeps one CPU busy in this test process, which is tare (self) to tare profile run in it, until
// the test ends: on a quiet machine a profile of a second or two can otherwise hold no sample of tare, or
// none at all.
func burnInTare(t *testing.T) {
	var stop atomic.Bool
	t.Cleanup(func() { stop.Store(true) })
	go func() {
		for !stop.Load() {
		}
	}()
}
