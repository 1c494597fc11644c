package sample

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/taskiter"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestBaselineIdentityFromPass: with a task pass, the baseline takes each process's stat, owner and (one
// thread) I/O counters from the pass's description instead of /proc, and they are what /proc says, on
// every pass. The helpers make the fields tell: a shell that reaped a child which burned CPU (cutime), wrote
// 256 KiB through the page cache itself (write_bytes, on a disk: tmpfs pages are not counted) and then
// became a sleeper under exec, leaving an unreaped child (a zombie, which the baseline books as ended
// before the window), and a sleeper of UID 65534. The peers are /proc/PID/stat, the owner of /proc/PID and
// /proc/PID/io, read by the test after the sample, and the 256 KiB the shell wrote; every other process of
// the node is held to /proc too.
func TestBaselineIdentityFromPass(t *testing.T) {
	testenv.NeedRoot(t, "taskstats, the BPF task iterator and another user's process need root")
	dir := testload.DiskDir(t)
	const wrote = 256 << 10
	// dash's printf is a builtin: the shell writes the file itself, and exec keeps its I/O counters and
	// its reaped child's time.
	script := fmt.Sprintf(`(i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done); printf '%%0%dd' 0 > %s/written; sleep 0 & exec sleep 600`, wrote, dir)
	worker := exec.Command("sh", "-c", script)
	other := exec.Command("sleep", "600")
	other.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	for _, c := range []*exec.Cmd{worker, other} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	waitComm(t, worker.Process.Pid, "sleep", 'S')
	waitComm(t, other.Process.Pid, "sleep", 'S')
	zombie := childOf(t, worker.Process.Pid)
	waitComm(t, zombie, "sleep", 'Z')
	for _, pass := range []string{"open-coded", "bpf-iter"} {
		t.Run(pass, func(t *testing.T) {
			t.Setenv(taskiter.PassEnv, pass)
			s := newFilteredSampler(t, Options{Interval: time.Second, Detail: time.Second})
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
			if g, ok := s.act.described(worker.Process.Pid); !ok || g.Desc.State != 'S' {
				t.Errorf("the pass described the sleeping worker as %+v (%v)", g.Desc, ok)
			}
			booked := s.baseDone[zombie] // baselineExits booked it as ended before the window
			if g, ok := s.act.described(zombie); !ok || g.Desc.State != 'Z' || !booked || s.procs[zombie] != nil {
				t.Errorf("the worker's zombie child %d: described %v as %c, booked as ended %v, kept as live %v", zombie, ok, g.Desc.State,
					booked, s.procs[zombie] != nil)
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

// waitComm waits until process pid is named comm (a shell that has exec'd) and in state.
func waitComm(t *testing.T, pid int, comm string, state byte) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, err := kernel.ReadProcStat(kernel.HostProc, pid); err == nil && st.Comm == comm && st.State == state {
			return
		}
	}
	t.Fatalf("process %d did not become %s in state %c", pid, comm, state)
}

// childOf returns the one child of process pid (/proc/PID/task/PID/children).
func childOf(t *testing.T, pid int) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("%s/%d/task/%d/children", kernel.HostProc, pid, pid))
		var child int
		if err == nil {
			if _, err := fmt.Sscan(string(b), &child); err == nil {
				return child
			}
		}
	}
	t.Fatalf("process %d has no child", pid)
	return 0
}

// TestIdentityExecedSincePass: a process the exec watcher saw exec after the task pass began is read from
// /proc whole, since the pass's name is the one before the exec; one that exec'd before the pass takes the
// pass's description.
func TestIdentityExecedSincePass(t *testing.T) {
	testenv.NeedRoot(t, "taskstats and the BPF task iterator need root")
	t.Setenv(taskiter.PassEnv, string(taskiter.PassBPFIter))
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	pid := sleeper.Process.Pid
	waitComm(t, pid, "sleep", 'S')
	s := newFilteredSampler(t, Options{Interval: time.Second, Detail: time.Second})
	if _, err := s.Sample(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		execAt time.Duration // after the pass began
		want   bool
	}{{-time.Millisecond, true}, {time.Millisecond, false}} {
		s.execed = map[int]time.Time{pid: s.act.passAt.Add(tc.execAt)}
		id, _, described, err := s.identity(pid)
		if err != nil || described != tc.want || id.Stat.Comm != "sleep" {
			t.Errorf("exec %v after the pass: described %v (want %v), %q, %v", tc.execAt, described, tc.want, id.Stat.Comm, err)
		}
	}
}
