package lab

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
)

// leaderExitsEnv makes the test binary a process whose thread-group leader exits while another thread
// still runs and holds a listening socket: what a killed API server looked like when Down called it
// stopped and the next lab found its port taken.
const leaderExitsEnv = "TARE_LAB_TEST_LEADER_EXITS"

func init() {
	if os.Getenv(leaderExitsEnv) != "" {
		runtime.LockOSThread() // TestMain then runs on the leader thread
	}
}

func TestMain(m *testing.M) {
	if code, asked := Reap(os.Stdin, os.Stdout, os.Stderr); asked {
		os.Exit(code)
	}
	if lock := os.Getenv(reaperHelperEnv); lock != "" {
		reaperHelper(lock, os.Getenv(reaperHelperLabEnv))
	}
	if os.Getenv(leaderExitsEnv) != "" {
		leaderExits()
	}
	if dir := os.Getenv(upRetuneEnv); dir != "" {
		upRetuneHelper(dir)
	}
	code := m.Run()
	ReleaseProcessReaper() // the tests' labs are down
	os.Exit(code)
}

// leaderExits listens on a loopback port, prints it, and ends the leader thread alone (exit, not
// exit_group); the process ends from another thread when its standard input closes, or after a minute.
func leaderExits() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Exit(3)
	}
	_, _ = os.Stdout.WriteString(l.Addr().String() + "\n")
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	go func() {
		time.Sleep(time.Minute)
		os.Exit(0)
	}()
	_, _, _ = syscall.Syscall(syscall.SYS_EXIT, 0, 0, 0)
	runtime.KeepAlive(l)
}

// TestAliveUntilLastThread: a process whose leader thread has exited is a zombie in /proc/PID/stat while
// its other threads run and its sockets stay open; alive must say it runs until the last thread ends.
// Ground truth: the port it listens on, which the kernel frees only with the last thread.
func TestAliveUntilLastThread(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), leaderExitsEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe() // open until stopProcess: the helper lives until then
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the helper printed no address: %v", err)
	}
	addr = strings.TrimSpace(addr)
	st, err := kernel.ReadProcStat("/proc", cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	p := Process{Name: "helper", PID: cmd.Process.Pid, StartTicks: st.Starttime}
	deadline := time.Now().Add(time.Second)
	for st.State != 'Z' && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		if st, err = kernel.ReadProcStat("/proc", p.PID); err != nil {
			t.Fatal(err)
		}
	}
	if st.State != 'Z' {
		t.Fatalf("the helper's leader did not exit alone (state %c)", st.State)
	}
	if c, err := net.Dial("tcp", addr); err != nil {
		t.Fatalf("the helper's port closed with its leader thread: %v", err)
	} else {
		c.Close()
	}
	if !alive(p) {
		t.Errorf("alive: false for a zombie leader with %d threads still holding %s", st.NumThreads, addr)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	stopProcess(p, 10*time.Second) // SIGTERM on a zombie leader reaches the thread group
	if alive(p) {
		t.Error("alive after stopProcess")
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("%s still answers once stopProcess returned", addr)
	}
	<-waitErr
}
