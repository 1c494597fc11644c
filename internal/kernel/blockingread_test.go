package kernel

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fifoRoot is a fake /proc whose PID/cmdline files are FIFOs: opening one for reading blocks in the kernel
// until a writer opens it, as a read of a locked process's cmdline does.
type fifoRoot struct {
	t    *testing.T
	root string
}

func newFIFORoot(t *testing.T) *fifoRoot {
	return &fifoRoot{t: t, root: t.TempDir()}
}

// stall makes PID/name a FIFO nobody writes to.
func (f *fifoRoot) stall(pid int, name string) {
	f.t.Helper()
	dir := filepath.Join(f.root, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// release opens PID/name for writing and closes it at once: a reader blocked in open returns, and reads end
// of file. It reports whether a reader was waiting.
func (f *fifoRoot) release(pid int, name string) bool {
	fd, err := unix.Open(filepath.Join(f.root, strconv.Itoa(pid), name), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false // ENXIO: no reader
	}
	unix.Close(fd)
	return true
}

// write makes PID/name a regular file holding b.
func (f *fifoRoot) write(pid int, name, b string) {
	f.t.Helper()
	dir := filepath.Join(f.root, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	_ = os.Remove(path)
	if err := os.WriteFile(path, []byte(b), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// waitAnswered polls until the reader has no more than n reads waiting.
func waitAnswered(t *testing.T, r *BlockingReader, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for r.Waiting() > n {
		if time.Now().After(deadline) {
			t.Fatalf("%d reads still waiting after %v, want at most %d", r.Waiting(), within, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBlockingReaderFIFO: a read that blocks in the kernel costs its caller the timeout once; the process is
// then skipped at once until the read answers, other processes are read as usual, no more than the limit of
// reads are left waiting, and every stuck read is reported.
func TestBlockingReaderFIFO(t *testing.T) {
	t.Parallel()
	const timeout = 150 * time.Millisecond
	f := newFIFORoot(t)
	r := newBlockingReader(f.root, timeout, 2)
	view := r.View()
	t.Cleanup(func() {
		for _, pid := range []int{10, 12} {
			f.release(pid, "cmdline")
		}
		waitAnswered(t, r, 0, 5*time.Second)
	})

	f.stall(10, "cmdline")
	start := time.Now()
	_, err := r.read(10, "stalled", "cmdline")
	if took := time.Since(start); took < timeout || took > timeout+time.Second {
		t.Errorf("a read that cannot answer returned after %v, want %v", took, timeout)
	}
	if !errors.Is(err, ErrStuck) || !strings.Contains(err.Error(), "no answer within 150ms") {
		t.Fatalf("read of a blocked FIFO: %v, want a no-answer error matching ErrStuck", err)
	}

	start = time.Now()
	_, err = r.read(10, "stalled", "smaps_rollup")
	if took := time.Since(start); took > timeout/2 {
		t.Errorf("a process whose read is stuck was read again, waiting %v", took)
	}
	if !errors.Is(err, ErrStuck) || !strings.Contains(err.Error(), "cmdline has not answered") {
		t.Errorf("second read of a stuck process: %v, want it skipped", err)
	}

	f.write(11, "cmdline", "sleep\x0030\x00")
	if b, err := r.read(11, "sleep", "cmdline"); err != nil || string(b) != "sleep\x0030\x00" {
		t.Errorf("read of another process: %q, %v", b, err)
	}

	f.stall(12, "cmdline")
	if _, err := r.read(12, "stalled2", "cmdline"); !errors.Is(err, ErrStuck) {
		t.Fatalf("second blocked FIFO: %v, want ErrStuck", err)
	}
	f.write(13, "cmdline", "true\x00")
	start = time.Now()
	_, err = r.read(13, "true", "cmdline")
	if took := time.Since(start); took > timeout/2 || !errors.Is(err, ErrStuck) || !strings.Contains(err.Error(), "2 reads of other processes") {
		t.Errorf("with the limit of reads stuck, a read returned %v after %v; want it skipped at once", err, took)
	}

	if !f.release(10, "cmdline") {
		t.Fatal("the stuck read of pid 10 was not waiting on its FIFO")
	}
	waitAnswered(t, r, 1, 5*time.Second)
	f.write(10, "cmdline", "back\x00")
	if b, err := r.read(10, "stalled", "cmdline"); err != nil || string(b) != "back\x00" {
		t.Errorf("read after the stuck one answered: %q, %v; want it read again", b, err)
	}

	got := view.Limitations()
	want := []string{
		"reading " + f.root + "/10/cmdline (stalled): no answer within 150ms: " + lockedWhy + "; its command line is shown as [stalled]; it answered after ",
		"reading " + f.root + "/10/smaps_rollup (stalled): skipped while an earlier read of the process had not answered: " + lockedWhy +
			"; while it stays locked its RSS comes from statm, and its PSS and private memory are those of its last reading (0 if none); it answered after ",
		"reading " + f.root + "/12/cmdline (stalled2): no answer within 150ms: " + lockedWhy + "; its command line is shown as [stalled2]; no answer yet",
		"1 reads of command lines and smaps_rollup were skipped because 2 earlier reads",
	}
	if len(got) != len(want) {
		t.Fatalf("limitations:\n%s\nwant %d lines", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("limitation %d:\n%s\nwant it to start with\n%s", i, got[i], want[i])
		}
	}
	if later := r.View(); len(later.Limitations()) != 0 {
		t.Errorf("a view taken now reports %q, want nothing", later.Limitations())
	}
}

// TestReadBlockingMatchesBounded: the blocking reader returns what the raw one does, on real /proc files that
// change rarely, and says which file it could not open.
func TestReadBlockingMatchesBounded(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"cmdline", "comm"} {
		path := "/proc/self/" + name
		a, err := readBlocking(path, oneRecordFiles[name])
		if err != nil {
			t.Fatal(err)
		}
		b, err := ReadBounded(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("%s: readBlocking %q, ReadBounded %q", path, a, b)
		}
	}
	if _, err := readBlocking("/proc/self/no-such-file", true); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "no-such-file") {
		t.Errorf("missing file: %v", err)
	}
}

// BenchmarkBlockingRead compares a raw read of cmdline and smaps_rollup with a read through the blocking
// reader (a goroutine, a timer and ordinary system calls per read).
func BenchmarkBlockingRead(b *testing.B) {
	for _, name := range []string{"cmdline", "smaps_rollup"} {
		b.Run(name, func(b *testing.B) { benchmarkBlockingRead(b, name) })
	}
}

func benchmarkBlockingRead(b *testing.B, name string) {
	pid := os.Getpid()
	path := "/proc/" + strconv.Itoa(pid) + "/" + name
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			if _, err := ReadBounded(path); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("deadline", func(b *testing.B) {
		r := newBlockingReader("/proc", BlockingReadTimeout, maxStuckReads)
		for b.Loop() {
			if _, err := r.read(pid, "", name); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestReadQuiet: a read of a Quiet process is read in the caller's goroutine and gives what read gives; a
// process with a read still stuck is skipped at once even when the caller says it is quiet; a read that is
// not quiet keeps the deadline. The peers of Quiet are real processes: sleep(1), one thread asleep, is
// quiet; this test's own process, many threads, is not.
func TestReadQuiet(t *testing.T) {
	t.Parallel()
	const timeout = 150 * time.Millisecond
	f := newFIFORoot(t)
	r := newBlockingReader(f.root, timeout, 2)
	t.Cleanup(func() {
		f.release(20, "cmdline")
		waitAnswered(t, r, 0, 5*time.Second)
	})
	f.write(21, "smaps_rollup", "Rss: 4 kB\n")
	a, errA := r.read(21, "x", "smaps_rollup")
	b, errB := r.readQuiet(21, "x", "smaps_rollup", true)
	if errA != nil || errB != nil || string(a) != string(b) {
		t.Errorf("quiet read %q (%v), read %q (%v): want the same", b, errB, a, errA)
	}
	f.stall(20, "cmdline")
	start := time.Now()
	if _, err := r.readQuiet(20, "stalled", "cmdline", false); !errors.Is(err, ErrStuck) || time.Since(start) < timeout {
		t.Fatalf("a read that is not quiet of a blocked file: %v after %v, want ErrStuck after %v", err, time.Since(start), timeout)
	}
	start = time.Now()
	if _, err := r.readQuiet(20, "stalled", "cmdline", true); !errors.Is(err, ErrStuck) || time.Since(start) > timeout/2 {
		t.Errorf("a quiet read of a process whose read is stuck: %v after %v, want it skipped at once", err, time.Since(start))
	}

	c := exec.Command("sleep", "30")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := ReadProcStat("/proc", c.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if st.Quiet() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep(1) not quiet after 5 s: state %c, %d threads", st.State, st.NumThreads)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st, err := ReadProcStat("/proc", os.Getpid()); err != nil || st.Quiet() {
		t.Errorf("the test process (%d threads, %v) is quiet", st.NumThreads, err)
	}
}
