package sample

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/taskiter"
	"github.com/tare-dev/tare/internal/testenv"
)

// TestBaselineIdentityFromPass: with a task pass, the baseline takes each process's stat, owner and (one
// thread) I/O counters from the pass's description instead of /proc, and they are what /proc says, on
// every pass. The helpers make the fields tell: a shell that reaped a child which burned CPU (cutime), wrote
// 256 KiB through the page cache itself (write_bytes) and then became a sleeper under exec, and a sleeper
// of UID 65534. The peers are /proc/PID/stat, the owner of /proc/PID and /proc/PID/io, read by the test
// after the sample, and the 256 KiB the shell wrote; every other process of the node is held to /proc too.
func TestBaselineIdentityFromPass(t *testing.T) {
	testenv.NeedRoot(t, "taskstats, the BPF task iterator and another user's process need root")
	dir := t.TempDir()
	const wrote = 256 << 10
	// dash's printf is a builtin: the shell writes the file itself, and exec keeps its I/O counters and
	// its reaped child's time.
	script := fmt.Sprintf(`(i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done); printf '%%0%dd' 0 > %s/written; exec sleep 600`, wrote, dir)
	worker := exec.Command("sh", "-c", script)
	other := exec.Command("sleep", "600")
	other.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	for _, c := range []*exec.Cmd{worker, other} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	waitComm(t, worker.Process.Pid, "sleep")
	waitComm(t, other.Process.Pid, "sleep")
	for _, pass := range []string{"open-coded", "bpf-iter"} {
		t.Run(pass, func(t *testing.T) {
			t.Setenv(taskiter.PassEnv, pass)
			s, err := New(context.Background(), Options{Interval: time.Second, Detail: time.Second}, nil)
			if errors.Is(err, taskiter.ErrNotSupported) {
				testenv.Unavailable(t, "%v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			smp, err := s.Sample()
			if err != nil {
				t.Fatal(err)
			}
			described, user, mismatched := 0, 0, 0
			for _, info := range smp.New {
				pid := info.Key.PID
				if _, ok := s.act.described(pid); ok {
					described++
				}
				if !info.Kernel {
					user++
				}
				helper := pid == worker.Process.Pid || pid == other.Process.Pid
				st, err := kernel.ReadProcStat(kernel.HostProc, pid)
				if err != nil || st.Starttime != info.Key.Start || info.Kernel {
					continue // ended or reused since; kernel threads are read from /proc
				}
				var owner syscall.Stat_t
				if syscall.Stat(filepath.Join(kernel.HostProc, fmt.Sprint(pid)), &owner) != nil {
					continue
				}
				ps := s.procs[pid]
				if ps == nil {
					continue
				}
				if info.Comm != st.Comm || info.PPID != st.PPID || info.UID != int(owner.Uid) || ps.lastCut != st.ChildTimeNs() {
					mismatched++
					msg := fmt.Sprintf("process %d: %q parent %d owner %d children %v; /proc says %q %d %d %v", pid, info.Comm, info.PPID,
						info.UID, time.Duration(ps.lastCut), st.Comm, st.PPID, owner.Uid, time.Duration(st.ChildTimeNs()))
					if helper {
						t.Error(msg)
					} else {
						t.Log(msg) // a process of the node may exec, or reap a child, between the sample and the read
					}
				}
			}
			if described < user*9/10 {
				t.Errorf("%d of %d processes (not kernel threads) described by the pass", described, user)
			}
			if mismatched > len(smp.New)/50 {
				t.Errorf("%d of %d processes differ from /proc", mismatched, len(smp.New))
			}
			w := s.procs[worker.Process.Pid]
			if w == nil || w.detail == nil {
				t.Fatalf("no detail for the worker")
			}
			if _, ok := s.act.described(worker.Process.Pid); !ok {
				t.Errorf("the pass did not describe the worker")
			}
			read, write, err := kernel.ReadIO(kernel.HostProc, worker.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			if w.detail.IOErr != nil || w.detail.WriteBytes < wrote || w.detail.WriteBytes != write || w.detail.ReadBytes != read {
				t.Errorf("worker's I/O: read %d, wrote %d (%v); /proc/%d/io says %d and %d, and it wrote %d bytes", w.detail.ReadBytes,
					w.detail.WriteBytes, w.detail.IOErr, worker.Process.Pid, read, write, wrote)
			}
			if w.lastCut == 0 {
				t.Errorf("the worker's reaped child ran for no time")
			}
			if o := s.procs[other.Process.Pid]; o == nil || o.info.UID != 65534 || !strings.HasPrefix(o.info.Cmdline, "sleep 600") {
				t.Errorf("the other user's sleeper: %+v", o)
			}
		})
	}
}

// waitComm waits until process pid is named comm (a shell that has exec'd).
func waitComm(t *testing.T, pid int, comm string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, err := kernel.ReadProcStat(kernel.HostProc, pid); err == nil && st.Comm == comm && st.State == 'S' {
			return
		}
	}
	t.Fatalf("process %d did not become %s", pid, comm)
}
