package cli

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestMeasureBusyNode measures a node that is really busy: a parallel C build (make -j4: make, sh, gcc,
// cc1, as, collect2 and ld forking, exec'ing and reaping in depth, more runnable threads than CPUs) runs
// beside two calibrated burners. Every window must reconcile within its stated resolution, and each burner
// must read within ±3% of its own cgroup's CPU account (the scheduler's total for the burner, which is not
// the per-process counter tare reads).
func TestMeasureBusyNode(t *testing.T) {
	requireTiming(t)
	testenv.NeedRoot(t, "taskstats, the proc connector and cgroups need root")
	if _, err := exec.LookPath("gcc"); err != nil {
		testenv.Unavailable(t, "gcc not installed (apt-get install gcc make)")
	}
	if _, err := exec.LookPath("make"); err != nil {
		testenv.Unavailable(t, "make not installed (apt-get install make)")
	}
	build := startBuildLoop(t, 40*time.Second)
	type burner struct {
		mc    int
		h     *helper
		usage func() time.Duration
	}
	var burners []burner
	for i, mc := range []int{150, 250} {
		h := startHelper(t, "burn", strconv.Itoa(mc))
		usage := testload.CPUCgroup(t, fmt.Sprintf("tare-test-busy-%d-%d", os.Getpid(), i), h.pid())
		burners = append(burners, burner{mc, h, usage})
	}
	time.Sleep(time.Second) // let the build get going and the burners settle
	for window := range 2 {
		traces := make([]*testload.UsageTrace, len(burners))
		for i, b := range burners {
			traces[i] = testload.TraceUsage(b.usage)
		}
		rec := filepath.Join(t.TempDir(), "window.db")
		s := measureJSON(t, "--duration", "6s", "--interval", "500ms", "--record", rec)
		for _, tr := range traces {
			tr.Stop()
		}
		r := s.Reconcile
		t.Logf("window %d: %s", window, r.Explanation)
		if !r.WithinTolerance {
			t.Errorf("window %d does not reconcile: %s\nwarnings: %+v\nlimitations: %q\n%s", window, r.Explanation, r.Warnings, s.Meta.Limitations, offBySample(t, rec))
		}
		for i, b := range burners {
			truth, ok := traces[i].Between(s.Window.Start, s.Window.End)
			if !ok {
				t.Fatalf("window %d: the cgroup trace does not cover the window %s–%s", window, s.Window.Start, s.Window.End)
			}
			p, ok := findProcess(s, b.h.pid())
			if !ok {
				t.Errorf("window %d: burner %d (pid %d) not found", window, b.mc, b.h.pid())
				continue
			}
			got := p.CPU.Mean
			t.Logf("window %d: burner %dm: tare %.1fm, its cgroup %.1fm", window, b.mc, got, truth)
			if d := (got - truth) / truth; d < -0.03 || d > 0.03 {
				t.Errorf("window %d: burner %dm read %.1fm, its cgroup says %.1fm (%+.1f%%, want within ±3%%)", window, b.mc, got, truth, 100*d)
			}
		}
		if window == 0 && build() < 1 {
			t.Fatal("the build loop has not completed one build: the node was not busy the way the test means")
		}
	}
}

// offBySample says, from a window's recording, how far each sample's process credits fall from the node's
// task time over the same interval, and which processes were credited most in the sample furthest off:
// where a window that does not reconcile went wrong.
func offBySample(t *testing.T, path string) string {
	t.Helper()
	r, err := record.Read(context.Background(), path)
	if err != nil {
		return err.Error()
	}
	infos := map[int64]sample.ProcInfo{}
	var b strings.Builder
	worst, worstOff := -1, 0.0
	for i, smp := range r.Samples {
		for _, p := range smp.New {
			infos[p.ID] = p
		}
		if i == 0 {
			continue
		}
		var procs uint64
		for _, p := range smp.Procs {
			procs += p.CPUNs
		}
		off := float64(smp.Node.TasksCPUNs-r.Samples[i-1].Node.TasksCPUNs)/1e6 - float64(procs)/1e6
		fmt.Fprintf(&b, "sample %d: node - processes %+.1f ms\n", smp.Seq, off)
		if math.Abs(off) > math.Abs(worstOff) {
			worst, worstOff = i, off
		}
	}
	if worst < 0 {
		return b.String()
	}
	ps := slices.Clone(r.Samples[worst].Procs)
	slices.SortFunc(ps, func(a, b sample.ProcSample) int { return cmp.Compare(b.CPUNs, a.CPUNs) })
	for _, p := range ps[:min(12, len(ps))] {
		in := infos[p.ID]
		fmt.Fprintf(&b, "  sample %d: %.1f ms to %d %s (ppid %d, born %d, exited %d, seen %v)\n", r.Samples[worst].Seq, float64(p.CPUNs)/1e6,
			in.Key.PID, in.Cmdline, in.PPID, in.BornSeq, in.ExitSeq, in.Seen)
	}
	return b.String()
}

// startBuildLoop writes a small C project and rebuilds it with make -j4 in a loop until the test ends (or
// limit passes). It returns the number of builds completed so far.
func startBuildLoop(t *testing.T, limit time.Duration) func() int {
	t.Helper()
	dir := t.TempDir()
	var objs string
	for i := range 24 {
		src := fmt.Sprintf(`#include <stdio.h>
#include <string.h>
static int table_%[1]d[256];
int work_%[1]d(const char *s) {
	int h = %[1]d;
	for (size_t i = 0; i < strlen(s); i++) { h = h * 31 + s[i]; table_%[1]d[h & 255]++; }
	for (int i = 0; i < 256; i++) h ^= table_%[1]d[i] << (i %% 13);
	return h;
}
`, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.c", i)), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		objs += fmt.Sprintf(" f%d.o", i)
	}
	main := "int main(void) { return 0; }\n"
	mk := "all: prog\nprog: main.o" + objs + "\n\tgcc -o $@ $^\n%.o: %.c\n\tgcc -O2 -c -o $@ $<\nclean:\n\trm -f *.o prog builds\n"
	for name, body := range map[string]string{"main.c": main, "Makefile": mk} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf(`end=$((SECONDS+%d)); n=0
while [ $SECONDS -lt $end ]; do { make -s clean && make -s -j4 all; } >/dev/null 2>&1 || exit 1; n=$((n+1)); echo $n > count; done`, int(limit.Seconds()))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	return func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "count"))
		var n int
		_, _ = fmt.Sscan(string(b), &n)
		return n
	}
}
