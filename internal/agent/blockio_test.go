package agent

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestAgentBlockIO: fio reads a file at random with direct I/O, in a pod cgroup of its own, while the agent
// counts block I/O. Between a scrape before fio starts and one after it ends, the pod's read bytes and
// requests in /metrics are fio's own (its JSON report) within 2%, its device-time histogram counts as
// many requests, and the requests the tracer could not charge are exported.
func TestAgentBlockIO(t *testing.T) {
	requireTiming(t)
	testenv.NeedRoot(t, "loading BPF programs needs CAP_BPF and CAP_PERFMON")
	fio, err := exec.LookPath("fio")
	if err != nil {
		testenv.Unavailable(t, "fio not installed (Debian: apt-get install fio): %v", err)
	}
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil || fs.Type == unix.TMPFS_MAGIC {
		testenv.Unavailable(t, "%s is not on a block device (direct I/O needs one)", dir)
	}
	file := filepath.Join(dir, "fio.dat")
	args := []string{"--name=agent", "--filename=" + file, "--size=64m", "--rw=randread", "--bs=4k", "--direct=1",
		"--ioengine=psync", "--thread", "--output-format=json"}
	// Lays the file out and brings fio's own pages into the page cache, so that the measured run reads
	// only the file.
	if out, err := exec.Command(fio, append(args, "--time_based", "--runtime=1")...).CombinedOutput(); err != nil {
		t.Fatalf("fio (laying out the file): %v: %s", err, out)
	}
	// A shell that waits for a line and then becomes fio: moved into the pod cgroup before the agent starts,
	// so the agent knows it as the pod's from its first sample, and fio keeps its PID.
	sh := exec.Command("/bin/sh", "-c", "read go && exec "+fio+" "+strings.Join(append(args, "--time_based", "--runtime=2"), " "))
	stdin, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sh.Stdout = &out
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sh.Process.Kill(); _ = sh.Wait() })
	const uid = "b10c1010-0000-4000-8000-000000000001"
	testload.KubepodsCgroup(t, uid, "ctr0b10c1010", sh.Process.Pid)
	r := startAgent(t, Options{Interval: 100 * time.Millisecond, Window: 10 * time.Second, BlockIO: true})
	pod := `pod="` + uid + `"`
	before := r.scrape(t)
	if _, n := before.sum("tare_block_io_uncounted_requests_total"); n != 2 {
		t.Fatalf("no tare_block_io_uncounted_requests_total: is the tracer on?\n%.3000s", before.text)
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	if err := sh.Wait(); err != nil {
		t.Fatalf("fio: %v\n%s", err, out.String())
	}
	r.nextSample(t)
	r.nextSample(t)
	after := r.scrape(t)
	var rep struct {
		Jobs []struct {
			Read struct {
				IOBytes  float64 `json:"io_bytes"`
				TotalIOs float64 `json:"total_ios"`
			} `json:"read"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil || len(rep.Jobs) != 1 {
		t.Fatalf("fio's report: %v\n%s", err, out.String())
	}
	want := rep.Jobs[0].Read
	delta := func(metric string, match ...string) float64 {
		b, _ := before.sum(metric, match...)
		a, _ := after.sum(metric, match...)
		return a - b
	}
	bytes := delta("tare_group_block_io_bytes_total", pod, `direction="read"`)
	reqs := delta("tare_group_block_io_requests_total", pod, `direction="read"`)
	all := delta("tare_group_block_io_requests_total", pod)
	hist := delta("tare_group_block_io_device_seconds_count", pod)
	t.Logf("fio: %.0f reads, %.0f bytes; the agent: %.0f reads, %.0f bytes, %.0f requests in the device histogram", want.TotalIOs, want.IOBytes, reqs, bytes, hist)
	for _, c := range []struct {
		what      string
		got, want float64
	}{{"read bytes", bytes, want.IOBytes}, {"read requests", reqs, want.TotalIOs}} {
		if math.Abs(c.got-c.want) > 0.02*c.want {
			t.Errorf("%s: the agent %.0f, fio %.0f: more than 2%% apart", c.what, c.got, c.want)
		}
	}
	if hist != all || all == 0 {
		t.Errorf("the device histogram counts %.0f requests, the requests counters %.0f", hist, all)
	}
	if inf := delta("tare_group_block_io_device_seconds_bucket", pod, `le="+Inf"`); inf != hist {
		t.Errorf("the +Inf bucket rose by %.0f, the histogram's count by %.0f", inf, hist)
	}
	_ = os.Remove(file)
}
