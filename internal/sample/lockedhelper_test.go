package sample

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/testenv"
)

// A process whose memory-map lock is really held, for the tests of reads that can hang.
//
// The test serves a FUSE file system of one file whose reads wait until the test answers them. The helper
// process maps one page of that file and populates it (madvise MADV_POPULATE_READ, which faults the page in
// with the lock held for reading). When the test asks, another thread of the helper calls mmap, which needs
// the lock for writing and queues behind the populating thread; from then on every new reader of the lock,
// /proc/PID/cmdline and smaps_rollup included, queues behind that writer, as `ps` does on a node with a hung
// NFS mount.
//
// On Linux 6.18 the first attempts of the fault wait for the FUSE read without the lock and retry once it
// answers; only a retry (FAULT_FLAG_TRIED) keeps the lock across the read. So the test fails reads with EIO
// until one arrives while the lock is held, which it recognises by an mmap of the helper that does not return,
// and confirms by a read of /proc/PID/cmdline that does not return either.

// envLockedHelper makes the test binary run the helper on the file it names instead of the tests.
const envLockedHelper = "TARE_LOCKED_HELPER"

// lockedHelperArg is the helper's command-line argument, for the tests to recognise its command line.
const lockedHelperArg = "locked-helper"

// lockedHelperMain runs the helper when $TARE_LOCKED_HELPER is set, and returns at once otherwise.
func lockedHelperMain() {
	path := os.Getenv(envLockedHelper)
	if path == "" {
		return
	}
	if err := lockedHelper(path, os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// lockedHelper maps one page of path and populates it until that succeeds, printing "populated" and the
// error after each attempt. Each line on stdin starts an mmap on another thread, which prints "mapped" when
// it returns. It returns when stdin closes.
func lockedHelper(path string, stdin io.Reader) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	page := os.Getpagesize()
	mem, err := unix.Mmap(fd, 0, page, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping %s: %w", path, err)
	}
	go func() {
		for {
			err := unix.Madvise(mem, unix.MADV_POPULATE_READ)
			fmt.Println("populated", err)
			if err == nil {
				return
			}
		}
	}()
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		go func() {
			if m, err := unix.Mmap(-1, 0, page, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANON); err == nil {
				_ = unix.Munmap(m)
			}
			fmt.Println("mapped")
		}()
	}
	return sc.Err()
}

// stallFile is the one file of the stall file system: every read waits until the test answers it.
type stallFile struct {
	fs.Inode
	reads    chan *stalledRead
	free     chan struct{} // closed: reads are answered at once, with data
	freeOnce sync.Once
}

// stalledRead is a read of the stall file waiting for its answer: 0 for the data, or an errno.
type stalledRead struct{ answer chan syscall.Errno }

var (
	_ fs.NodeGetattrer = (*stallFile)(nil)
	_ fs.NodeOpener    = (*stallFile)(nil)
	_ fs.NodeReader    = (*stallFile)(nil)
)

// Getattr describes a read-only file of one page.
func (f *stallFile) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o444
	out.Size = uint64(os.Getpagesize())
	return 0
}

func (f *stallFile) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, 0, 0
}

// Read waits for the test's answer. It ignores the kernel's interrupts, as a hung server would: the faulting
// thread's wait ends only with the answer, or SIGKILL.
func (f *stallFile) Read(_ context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	rd := &stalledRead{answer: make(chan syscall.Errno, 1)}
	select {
	case f.reads <- rd:
		select {
		case errno := <-rd.answer:
			if errno != 0 {
				return nil, errno
			}
		case <-f.free:
		}
	case <-f.free:
	}
	n := max(0, min(int64(len(dest)), int64(os.Getpagesize())-off))
	return fuse.ReadResultData(make([]byte, n)), 0
}

// release answers every read, now and from now on.
func (f *stallFile) release() { f.freeOnce.Do(func() { close(f.free) }) }

// stallRoot is the root directory of the stall file system, holding "data".
type stallRoot struct {
	fs.Inode
	file *stallFile
}

var _ fs.NodeOnAdder = (*stallRoot)(nil)

func (r *stallRoot) OnAdd(ctx context.Context) {
	attr := fs.StableAttr{Mode: syscall.S_IFREG}
	r.AddChild("data", r.NewPersistentInode(ctx, r.file, attr), false)
}

// mountStall mounts the stall file system on a temporary directory and returns its file; it is unmounted
// when the test ends.
func mountStall(t *testing.T) (*stallFile, string) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testenv.Unavailable(t, "FUSE is not available (%v): load the fuse module", err)
	}
	dir := t.TempDir()
	file := &stallFile{reads: make(chan *stalledRead), free: make(chan struct{})}
	root := &stallRoot{file: file}
	srv, err := fs.Mount(dir, root, &fs.Options{
		MountOptions: fuse.MountOptions{DirectMountStrict: true, FsName: "tarestall", Name: "tarestall"},
	})
	if err != nil {
		testenv.Unavailable(t, "mounting a FUSE file system on %s: %v", dir, err)
	}
	// go-fuse opens /dev/fuse without O_CLOEXEC when it mounts by itself. A helper that inherited it would
	// keep the connection alive if the test died, and hang for good in its own exit, flushing its file.
	for _, fd := range fdsOf(t, os.Getpid(), "/dev/fuse") {
		unix.CloseOnExec(fd)
	}
	t.Cleanup(func() {
		file.release()
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
			_ = unix.Unmount(dir, unix.MNT_DETACH)
		}
	})
	return file, dir + "/data"
}

// fdsOf lists the file descriptors of process pid open on path.
func fdsOf(t *testing.T, pid int, path string) []int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var fds []int
	for _, e := range ents {
		if target, err := os.Readlink(dir + "/" + e.Name()); err == nil && target == path {
			if fd, err := strconv.Atoi(e.Name()); err == nil {
				fds = append(fds, fd)
			}
		}
	}
	return fds
}

// lockedProcess is the helper process, with its memory-map lock held until release.
type lockedProcess struct {
	pid    int
	comm   string
	file   *stallFile
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	done   chan struct{}  // closed by stop: nobody reads lines any more
	probes sync.WaitGroup // reads of the helper's files the test left waiting
}

// startLockedProcess starts the helper and returns once its memory-map lock is held with a writer queued,
// verified by a read of its cmdline that does not return. When the test ends, every read is answered and
// the helper is ended and reaped, whatever happened.
func startLockedProcess(t *testing.T) *lockedProcess {
	t.Helper()
	file, path := mountStall(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &lockedProcess{file: file, cmd: exec.Command(self, lockedHelperArg), lines: make(chan string, 64), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), envLockedHelper+"="+path)
	p.cmd.Stderr = os.Stderr
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting the locked helper: %v", err)
	}
	p.pid = p.cmd.Process.Pid
	t.Cleanup(p.stop)
	if fds := fdsOf(t, p.pid, "/dev/fuse"); len(fds) > 0 {
		t.Fatalf("the locked helper inherited /dev/fuse (fds %v): it could never exit if the test died", fds)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		defer close(p.lines)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			case <-p.done:
				return
			}
		}
	}()
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.pid)); err == nil { // comm needs no lock
		p.comm = strings.TrimSpace(string(b))
	}
	const tries = 8
	for try := 1; try <= tries; try++ {
		var rd *stalledRead
		select {
		case rd = <-file.reads:
		case <-time.After(10 * time.Second):
			t.Fatalf("the helper's page fault reached the FUSE server %d times, then no more within 10s", try-1)
		}
		if p.lockHeld(t) {
			return p
		}
		rd.answer <- syscall.EIO // fault again: a retry keeps the lock
	}
	testenv.Unavailable(t, "this kernel never held the memory-map lock across a FUSE read in %d page faults", tries)
	return nil
}

// lockHeld reports whether the helper's populating thread holds the lock: an mmap, which needs it for
// writing, does not return, and then a read of cmdline, which needs it for reading, does not either.
func (p *lockedProcess) lockHeld(t *testing.T) bool {
	t.Helper()
	if _, err := fmt.Fprintln(p.stdin, "mmap"); err != nil {
		t.Fatalf("asking the helper to mmap: %v", err)
	}
	if p.waitLine(t, "mapped", time.Second) {
		return false
	}
	if p.readBlocks("cmdline", 500*time.Millisecond) {
		return true
	}
	if !p.waitLine(t, "mapped", 10*time.Second) { // only slow: let it finish
		t.Fatal("the helper's mmap neither blocked its cmdline nor returned within 10s")
	}
	return false
}

// waitLine reads the helper's output until a line equal to want, for at most d.
func (p *lockedProcess) waitLine(t *testing.T, want string, d time.Duration) bool {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("the locked helper exited while the test waited for %q", want)
			}
			if line == want {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

// readBlocks reports whether reading /proc/PID/name takes longer than d. A read that does not return is
// left waiting until the helper is released, then collected.
func (p *lockedProcess) readBlocks(name string, d time.Duration) bool {
	done := make(chan struct{})
	p.probes.Add(1)
	go func() {
		defer p.probes.Done()
		_, _ = os.ReadFile(fmt.Sprintf("/proc/%d/%s", p.pid, name))
		close(done)
	}()
	select {
	case <-done:
		return false
	case <-time.After(d):
		return true
	}
}

// release answers the helper's reads: its lock is let go, and every read waiting on it returns.
func (p *lockedProcess) release() { p.file.release() }

// stop releases the helper, ends it and reaps it, and waits for the test's own reads of its files.
func (p *lockedProcess) stop() {
	close(p.done)
	p.release()
	_ = p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill() // the lock's waits all end with SIGKILL
		<-done
	}
	p.probes.Wait()
}
