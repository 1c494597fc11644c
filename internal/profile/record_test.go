package profile

import (
	"bufio"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tare-dev/tare/internal/classify"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// BuildBurner compiles testdata/burner.c with frame pointers into dir and returns the binary.
func buildBurner(t *testing.T) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		testenv.Unavailable(t, "gcc is needed to build the test burner: apt-get install gcc")
	}
	src, err := filepath.Abs(filepath.Join("testdata", "burner.c"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "tare-burner")
	if out, err := exec.Command(gcc, "-O1", "-fno-omit-frame-pointer", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// startBurner runs the burner (100% of one CPU) and returns its PID; it is killed when the test ends.
func startBurner(t *testing.T, bin string) int {
	t.Helper()
	cmd := exec.Command(bin)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the burner's PID: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// cpuTicks is a process's utime+stime in clock ticks, read straight from /proc/PID/stat: the ground truth,
// a counter apart from the perf samples under test.
func cpuTicks(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseUint(f[11], 10, 64)
	s, _ := strconv.ParseUint(f[12], 10, 64)
	return u + s
}

func record(t *testing.T, ctx context.Context, d time.Duration) (*Raw, *Symbolizer) {
	t.Helper()
	k, err := ReadKallsyms("/proc")
	if err != nil {
		t.Fatal(err)
	}
	sym := NewSymbolizer("/proc", k)
	raw, err := Record(ctx, Options{Frequency: 99, Duration: d, OnSample: sym.Prepare})
	if err != nil {
		t.Fatal(err)
	}
	if n := testload.PerfFDs(t); n != 0 {
		t.Errorf("%d perf event descriptors left open after Record", n)
	}
	return raw, sym
}

// startKernelWork runs dd copying /dev/zero to /dev/null (nearly all of its time in the kernel) until the
// test ends: on a quiet node a 5 s profile may hold no kernel sample at all (CI saw none), and the kernel
// frames' symbolization is under test.
func startKernelWork(t *testing.T) {
	t.Helper()
	dd, err := exec.LookPath("dd")
	if err != nil {
		testenv.Unavailable(t, "dd (coreutils) is needed for the kernel's share of the profile")
	}
	cmd := exec.Command(dd, "if=/dev/zero", "of=/dev/null", "bs=1M")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
}

// TestRecordBurner samples the node while a C program with a known hot function burns one CPU: its
// samples name tare_hot_spin, their share of the node matches the burner's own CPU time, kernel frames
// (dd's copies beside it) are named, and go tool pprof reads the profile.
func TestRecordBurner(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the burner's share against its own CPU time runs in the pass without the race detector, one package at a time")
	}
	testenv.NeedRoot(t, "sampling every CPU needs CAP_PERFMON")
	pid := startBurner(t, buildBurner(t))
	startKernelWork(t)
	before := cpuTicks(t, pid)
	raw, sym := record(t, context.Background(), 5*time.Second)
	after := cpuTicks(t, pid)
	p := Build(raw, sym, BuildOptions{SelfPID: os.Getpid()})

	var burnerNs, hot, burnerSamples int64
	kernelFrames := map[string]int{}
	for _, s := range p.Sample {
		for _, l := range s.Location {
			if l.Mapping.File == "[kernel.kallsyms]" && l.Line[0].Function.Name != "[kernel]" {
				kernelFrames[l.Line[0].Function.Name]++
			}
		}
		if s.NumLabel[LabelPID][0] != int64(pid) {
			continue
		}
		burnerSamples++
		burnerNs += s.Value[1]
		if s.Location[0].Line[0].Function.Name == "tare_hot_spin" {
			hot++
		}
	}
	capacity := float64(raw.CPUs) * raw.Elapsed.Seconds()
	profiled := float64(burnerNs) / 1e9 / capacity
	truth := float64(after-before) / 100 / capacity // USER_HZ is 100 on Linux
	t.Logf("burner: %d samples, %.1f%% of the node in the profile, %.1f%% by /proc/PID/stat; %d of its samples in tare_hot_spin; %d samples in all, %d lost, %d distinct kernel functions",
		burnerSamples, 100*profiled, 100*truth, hot, len(p.Sample), raw.Lost, len(kernelFrames))
	if math.Abs(profiled-truth) > 0.03 {
		t.Errorf("burner's share of the node: %.1f%% in the profile, %.1f%% by its CPU time: more than 3 points apart", 100*profiled, 100*truth)
	}
	if burnerSamples == 0 || float64(hot) < 0.9*float64(burnerSamples) {
		t.Errorf("%d of the burner's %d samples in tare_hot_spin, want at least 90%%", hot, burnerSamples)
	}
	if len(kernelFrames) == 0 {
		t.Error("no named kernel frames in the whole node's profile")
	}
	l := p.Sample[0].Label
	if l[LabelGroup] == nil || l[LabelCommand] == nil {
		t.Errorf("sample labels %v lack group or command", l)
	}
	top, n := "", 0
	for name, c := range kernelFrames {
		if c > n || c == n && name < top {
			top, n = name, c
		}
	}
	checkPprofTop(t, p, pid, top)
}

// checkPprofTop writes the profile and reads it back with go tool pprof -top: the burner's hot function
// and the commonest kernel function are listed.
func checkPprofTop(t *testing.T, p *profile.Profile, pid int, kernelFunc string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "node.pb.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Unavailable(t, "go is needed to run go tool pprof")
	}
	// Every node: on a quiet machine the burner holds 99% of the samples, and pprof's default node fraction
	// (0.5%) would drop the kernel's functions.
	out, err := exec.Command(goBin, "tool", "pprof", "-top", "-nodecount", "1000", "-nodefraction", "0", path).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "tare_hot_spin") {
		t.Errorf("go tool pprof -top lacks tare_hot_spin:\n%s", out)
	}
	if !strings.Contains(string(out), " "+kernelFunc+"\n") {
		t.Errorf("go tool pprof -top lacks the profile's commonest kernel function %s:\n%s", kernelFunc, out)
	}
	out, err = exec.Command(goBin, "tool", "pprof", "-top", "-tagfocus", "pid="+strconv.Itoa(pid), path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tare_hot_spin") {
		t.Errorf("go tool pprof -tagfocus pid=%d: %v\n%s", pid, err, out)
	}
}

// TestRecordPodGroup moves the burner into a cgroup laid out as kubelet's cgroupfs driver does
// (kubepods/burstable/pod<uid>/<container>, v1 cpu hierarchy here): its samples carry that pod's group,
// pod and container labels.
func TestRecordPodGroup(t *testing.T) {
	testenv.NeedRoot(t, "sampling every CPU and making cgroups need root")
	uid, ctr := testload.PodUID(0x7a1c0e52), "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12"
	pid := startBurner(t, buildBurner(t))
	testload.KubepodsCgroup(t, uid, ctr, pid)
	raw, sym := record(t, context.Background(), 2*time.Second)
	p := Build(raw, sym, BuildOptions{SelfPID: os.Getpid(), Filter: Filter{Pod: uid}})
	if len(p.Sample) == 0 {
		t.Fatalf("no samples of pod %s (%d in the recording)", uid, len(raw.Samples))
	}
	for _, s := range p.Sample {
		want := map[string][]string{LabelGroup: {"pod " + uid}, LabelKind: {classify.KindPod}, LabelPod: {uid}, LabelContainer: {ctr}, LabelCommand: {"tare-burner"}}
		for k, v := range want {
			if got := s.Label[k]; len(got) != 1 || got[0] != v[0] {
				t.Fatalf("label %s = %v, want %v (sample of pid %v)", k, got, v, s.NumLabel[LabelPID])
			}
		}
	}
	// The flame graph's first level is the group; the rest of each stack is unchanged.
	g := GroupedByGroup(p)
	for i, s := range g.Sample {
		if root := s.Location[len(s.Location)-1].Line[0].Function.Name; root != "pod "+uid {
			t.Fatalf("grouped profile's root frame %q, want the group", root)
		}
		if len(s.Location) != len(p.Sample[i].Location)+1 || s.Location[0].Line[0].Function.Name != p.Sample[i].Location[0].Line[0].Function.Name {
			t.Fatalf("grouped sample %d's stack differs from the profile's beyond its root", i)
		}
	}
}

// TestRecordCancel ends a recording early, as Ctrl-C does: Record returns at once, with what it has, and
// leaves no perf event open.
func TestRecordCancel(t *testing.T) {
	testenv.NeedRoot(t, "sampling every CPU needs CAP_PERFMON")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	raw, _ := record(t, ctx, time.Minute)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Record took %s after its context was cancelled at 300ms", d)
	}
	if raw.Elapsed > time.Second {
		t.Errorf("elapsed %s, want about 300ms", raw.Elapsed)
	}
}
