package agent

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// churnProcesses is how many short-lived processes come and go in TestAgentChurnMemory.
const churnProcesses = 5000

// TestAgentChurnMemory runs 5,000 short-lived processes (/bin/true from a shell loop) past an agent with a
// short window: the Go heap stays under the stated bound (MemoryBound) during and after the churn, falls
// back once the churn has left the window, and the number of lines in /metrics stays bounded.
func TestAgentChurnMemory(t *testing.T) {
	requireTiming(t)
	const interval, window, top = 100 * time.Millisecond, 3 * time.Second, 20
	r := startAgent(t, Options{Interval: interval, Window: window, TopProcesses: top})
	time.Sleep(window + time.Second) // the ring full of an idle node
	before := heapInUse()
	lines0 := r.scrape(t).lines
	live := liveProcesses(t)
	bound := MemoryBound(window, interval, max(live, churnProcesses))
	t.Logf("before the churn: heap %.1f MiB, %d lines of /metrics, %d processes; bound %.1f MiB", mib(before), lines0, live, mib(bound))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	loop := exec.CommandContext(ctx, "sh", "-c", "i=0; while [ $i -lt "+strconv.Itoa(churnProcesses)+" ]; do /bin/true; i=$((i+1)); done")
	if err := loop.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- loop.Wait() }()
	var peakHeap uint64
	peakLines := 0
	churn := time.Now()
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the churn loop: %v", err)
			}
			finished = true
		case <-time.After(500 * time.Millisecond):
		}
		peakHeap = max(peakHeap, heapInUse())
		peakLines = max(peakLines, r.scrape(t).lines)
	}
	t.Logf("%d processes in %s: peak heap %.1f MiB, peak %d lines of /metrics", churnProcesses, time.Since(churn).Round(time.Millisecond), mib(peakHeap), peakLines)

	time.Sleep(window + time.Second) // the churn has left the window
	after := heapInUse()
	lines1 := r.scrape(t).lines
	t.Logf("after the churn left the window: heap %.1f MiB, %d lines of /metrics", mib(after), lines1)
	if peakHeap > bound || after > bound {
		t.Errorf("heap in use peaked at %.1f MiB and ended at %.1f MiB, over the stated bound %.1f MiB", mib(peakHeap), mib(after), mib(bound))
	}
	if after > before+4<<20 {
		t.Errorf("heap in use grew from %.1f MiB to %.1f MiB with churn that has left the window", mib(before), mib(after))
	}
	// Each top process has one CPU and three memory series (plus none of HELP/TYPE); a few groups at most
	// come and go.
	if limit := lines0 + 4*top + 40; peakLines > limit {
		t.Errorf("/metrics grew to %d lines during the churn, over %d", peakLines, limit)
	}
	if lines1 > lines0+4*top {
		t.Errorf("/metrics has %d lines after the churn, %d before", lines1, lines0)
	}
}

// heapInUse is the Go heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func liveProcesses(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			n++
		}
	}
	return n
}

// TestAgentPodSeriesExpire runs a burner in a pod's cgroup: its pod's series appear with the pod label,
// and once the burner has ended and a window has passed they are gone.
func TestAgentPodSeriesExpire(t *testing.T) {
	testenv.NeedRoot(t, "a pod cgroup needs root")
	uid := testload.PodUID(0x0d6f2c1e)
	burner := testload.Launch(t, "burn", "100")
	if line := burner.Line(t, 10*time.Second); line != "ready" {
		t.Fatalf("the burner printed %q", line)
	}
	testload.KubepodsCgroup(t, uid, "ctr0123456789abcdef", burner.Pid())
	const window = 2 * time.Second
	r := startAgent(t, Options{Interval: 100 * time.Millisecond, Window: window})
	pod := `pod="` + uid + `"`
	waitSeries := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(3*window + 5*time.Second)
		for {
			m := r.scrape(t)
			v, n := m.sum("tare_group_cpu_seconds_total", pod, `group_kind="pod"`)
			if want && n > 0 && v > 0 || !want && !strings.Contains(m.text, uid) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the pod's CPU series: %d, want present=%v; any series naming it: %v", n, want, strings.Contains(m.text, uid))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitSeries(true)
	// The peer: the pod cgroup's own CPU account, read at each scrape. Between two scrapes 1.5 s apart the
	// pod's counter must rise by what the cgroup used, within one sample interval of the burner at each
	// end (the scrape shows the last sample) and 10%.
	root := "/sys/fs/cgroup/cpuacct"
	if _, err := os.Stat(filepath.Join(root, "cpuacct.usage")); err != nil {
		root = "/sys/fs/cgroup"
	}
	usage := testload.CgroupUsage(t, filepath.Join(root, "kubepods", "burstable", "pod"+uid))
	m0, u0 := r.scrape(t), usage()
	time.Sleep(1500 * time.Millisecond)
	m, u1 := r.scrape(t), usage()
	v0, _ := m0.sum("tare_group_cpu_seconds_total", pod)
	v, n := m.sum("tare_group_cpu_seconds_total", pod)
	want := (u1 - u0).Seconds()
	t.Logf("between two scrapes: the pod's counter rose %.3f s, its cgroup %.3f s", v-v0, want)
	if n != 1 || math.Abs((v-v0)-want) > 2*0.1*0.1+0.1*want {
		t.Errorf("the pod's CPU rose %.3f s in %d series between two scrapes; its cgroup used %.3f s", v-v0, n, want)
	}
	if _, n := m.sum("tare_group_memory_bytes", pod, `memory="rss"`); n != 1 {
		t.Errorf("the pod's rss: %d series, want 1", n)
	}
	burner.Stop()
	gone := time.Now()
	waitSeries(false) // no series names the pod: neither its group's nor its process's
	if d := time.Since(gone); d < window {
		t.Errorf("the pod's series went %s after it ended, before the %s window passed", d, window)
	}
}
