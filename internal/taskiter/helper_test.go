package taskiter_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/taskiter"
	"github.com/tare-dev/tare/internal/testload"
)

// helperEnv re-executes the test binary as a CPU reporter: a process that burns on demand and tells its
// own CPU time, the ground truth the iterator is checked against.
const helperEnv = "TASKITER_TEST_HELPER"

func TestMain(m *testing.M) {
	testload.Main()
	switch os.Getenv(helperEnv) {
	case "reporter":
		reporter()
		os.Exit(0)
	case "pidns":
		// Alone in a new PID namespace: the iterator must see this process only, as PID 1.
		it, err := openFromEnv()
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(0)
		}
		gs, err := it.All(nil)
		for try := 0; errors.Is(err, taskiter.ErrIncomplete) && try < 20; try++ {
			gs, err = it.All(nil)
		}
		if err != nil {
			fmt.Println("pass:", err)
			os.Exit(0)
		}
		for _, g := range gs {
			fmt.Printf("%d %d %d\n", g.TGID, g.PPID, g.Threads)
		}
		os.Exit(0)
	case "open":
		_, err := openFromEnv()
		fmt.Printf("%v\n%v\n", errors.Is(err, taskiter.ErrNotSupported), err)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// openFromEnv opens the pass the helper's parent chose in taskiter.PassEnv.
func openFromEnv() (*taskiter.Iter, error) {
	p, err := taskiter.PassFromEnv()
	if err != nil {
		return nil, err
	}
	return taskiter.OpenPass(p)
}

func ownCPU() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts)
	return ts.Nano()
}

func threadCPU() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}

func spinFor(d time.Duration) {
	end := threadCPU() + d.Nanoseconds()
	x := 1.0
	for threadCPU() < end {
		for range 1000 {
			x = x*1.0000001 + 1e-9
		}
	}
	_ = x
}

// reporter answers one line per command on stdin:
//
//	burn N D   N threads each burn D of CPU, then park; answers with the process's CPU time (ns)
//	thread D   a new OS thread burns D of CPU and exits; answers once the thread is gone
//	side D     a new OS thread, not the leader, burns D of CPU and stays, parked; answers once it is parked
//	storm      from now on, OS threads are born and end back to back, one at a time, until the process ends
//	cpu        answers with the process's CPU time (ns), read with CLOCK_PROCESS_CPUTIME_ID
func reporter() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "burn":
			n, _ := strconv.Atoi(f[1])
			d, _ := time.ParseDuration(f[2])
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					spinFor(d)
				})
			}
			wg.Wait()
		case "thread":
			d, _ := time.ParseDuration(f[1])
			burnInThreadThatExits(d)
		case "storm":
			go threadStorm()
		case "side":
			d, _ := time.ParseDuration(f[1])
			burnInSideThread(d)
		}
		fmt.Println(ownCPU())
	}
}

// burnInThreadThatExits burns d on an OS thread that then ends, and returns once the kernel no longer
// lists it. A goroutine that exits while locked to its thread takes the thread with it, except the main
// thread, which the runtime parks instead: that one is skipped (and stays parked, so the next try gets
// another thread).
func burnInThreadThatExits(d time.Duration) {
	for range 5 {
		tids := make(chan int)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			tid := unix.Gettid()
			if tid != os.Getpid() {
				spinFor(d)
			}
			tids <- tid
		}()
		tid := <-tids
		if tid == os.Getpid() {
			continue
		}
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid)); err != nil {
				return
			}
		}
		return
	}
}

// burnInSideThread burns d on an OS thread other than the main one, which then stays parked for good.
func burnInSideThread(d time.Duration) {
	burnt := make(chan bool)
	for {
		go func() {
			runtime.LockOSThread() // never unlocked, and the goroutine never ends: the thread stays
			if unix.Gettid() == os.Getpid() {
				burnt <- false
				return // the main thread: the runtime parks it; try another
			}
			spinFor(d)
			burnt <- true
			select {}
		}()
		if <-burnt {
			return
		}
	}
}

// threadStorm starts OS threads that end at once, one after the other, for good: a goroutine that returns
// while locked to its thread takes the thread with it, and the next one locked needs a new thread.
func threadStorm() {
	for {
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(done)
		}()
		<-done
	}
}

// reporterProc is a running reporter.
type reporterProc struct {
	cmd *exec.Cmd
	in  *bufio.Writer
	out *bufio.Scanner
}

func startReporter(t testing.TB) *reporterProc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), helperEnv+"=reporter", "GOMAXPROCS=4")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return &reporterProc{cmd: cmd, in: bufio.NewWriter(stdin), out: bufio.NewScanner(stdout)}
}

// do sends one command and returns the reporter's CPU time once it is done.
func (r *reporterProc) do(t testing.TB, cmd string) uint64 {
	t.Helper()
	if _, err := r.in.WriteString(cmd + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := r.in.Flush(); err != nil {
		t.Fatal(err)
	}
	if !r.out.Scan() {
		t.Fatalf("reporter %d ended before answering %q", r.cmd.Process.Pid, cmd)
	}
	v, err := strconv.ParseUint(r.out.Text(), 10, 64)
	if err != nil {
		t.Fatalf("reporter answered %q: %v", r.out.Text(), err)
	}
	return v
}

// stat is what the tests compare from /proc/PID/stat.
type stat struct {
	comm   string
	ppid   int
	start  uint64 // clock ticks since boot
	kernel bool
}

func readStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return stat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[closing+2:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return stat{}, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ppid, _ := strconv.Atoi(f[1])
	flags, _ := strconv.ParseUint(f[6], 10, 64)
	start, _ := strconv.ParseUint(f[19], 10, 64)
	const pfKthread = 0x00200000
	return stat{comm: s[open+1 : closing], ppid: ppid, start: start, kernel: flags&pfKthread != 0}, nil
}

// bootNs is CLOCK_BOOTTIME, the clock of start times, in ns.
func bootNs() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return uint64(ts.Nano())
}
