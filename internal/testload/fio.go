package testload

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/testenv"
)

// FioPod is fio reading a 64 MiB file at random with direct I/O (4 KiB reads, one at a time, in fio's own
// process), in a pod cgroup of the test's (KubepodsCgroup): the block I/O of a pod whose ground truth is
// fio's own report. fio is started by a shell that waits in the cgroup until Run and then becomes fio, so
// a sampler started in between knows the process as the pod's from its first sample, and fio keeps the
// shell's PID.
type FioPod struct {
	Pid   int
	sh    *exec.Cmd
	stdin io.WriteCloser
	out   bytes.Buffer
}

// FioReads are fio's own counts of the reads it completed, from its JSON report.
type FioReads struct {
	Bytes    uint64 `json:"io_bytes"`
	Requests uint64 `json:"total_ios"`
}

// StartFioPod lays out the file in a temporary directory on a disk (skipping the test when there is none,
// or when fio is not installed), brings fio's own pages into the page cache with a run of a second
// so that the measured run reads only the file, and starts the shell that is to run fio for runtime in the
// pod cgroup uid/container (runtime in whole seconds). Needs root, for the cgroup; the shell is killed when
// the test ends.
func StartFioPod(t testing.TB, uid, container string, runtime time.Duration) *FioPod {
	t.Helper()
	fio, err := exec.LookPath("fio")
	if err != nil {
		testenv.Unavailable(t, "fio not installed (Debian: apt-get install fio): %v", err)
	}
	dir := DiskDir(t)
	args := []string{"--name=tare", "--filename=" + filepath.Join(dir, "fio.dat"), "--size=64m", "--rw=randread", "--bs=4k",
		"--direct=1", "--ioengine=psync", "--thread", "--output-format=json", "--time_based"}
	if out, err := exec.Command(fio, append(args, "--runtime=1")...).CombinedOutput(); err != nil {
		t.Fatalf("fio (laying out the file): %v: %s", err, out)
	}
	f := &FioPod{}
	args = append(args, "--runtime="+strconv.Itoa(int(runtime.Seconds())))
	f.sh = exec.Command("/bin/sh", "-c", "read go && exec "+fio+" "+strings.Join(args, " "))
	if f.stdin, err = f.sh.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	f.sh.Stdout = &f.out
	if err := f.sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.sh.Process.Kill(); _ = f.sh.Wait() })
	f.Pid = f.sh.Process.Pid
	KubepodsCgroup(t, uid, container, f.Pid)
	return f
}

// Run starts fio, waits for it to end and returns its reads.
func (f *FioPod) Run(t testing.TB) FioReads {
	t.Helper()
	if _, err := io.WriteString(f.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.sh.Wait(); err != nil {
		t.Fatalf("fio: %v\n%s", err, f.out.String())
	}
	out := f.out.Bytes()
	if i := bytes.IndexByte(out, '{'); i > 0 { // after any warnings fio printed
		out = out[i:]
	}
	var rep struct {
		Jobs []struct {
			Read FioReads `json:"read"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out, &rep); err != nil || len(rep.Jobs) != 1 {
		t.Fatalf("fio's report: %v, %d jobs\n%.2000s", err, len(rep.Jobs), f.out.String())
	}
	return rep.Jobs[0].Read
}

// DiskDir is a temporary directory on a disk, where direct I/O reaches a block device: the test's, or one
// in /var/tmp when that is in memory (tmpfs). It is removed when the test ends.
func DiskDir(t testing.TB) string {
	t.Helper()
	onDisk := func(dir string) bool {
		var fs unix.Statfs_t
		return unix.Statfs(dir, &fs) == nil && fs.Type != unix.TMPFS_MAGIC
	}
	if dir := t.TempDir(); onDisk(dir) {
		return dir
	}
	dir, err := os.MkdirTemp("/var/tmp", "tare-fio-")
	if err == nil {
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
	}
	if err != nil || !onDisk(dir) {
		testenv.Unavailable(t, "neither the test's temporary directory nor /var/tmp is on a block device (direct I/O needs one): %v", err)
	}
	return dir
}
