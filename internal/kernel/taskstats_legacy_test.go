package kernel

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/testload"
)

// The three kinds of exit notification, captured from this kernel by TestCaptureTaskstatsExits.
const (
	fixtureThreadExit  = "taskstats_exit_thread.bin"  // one thread of a process that runs on: AGGR_PID alone
	fixtureGroupExit   = "taskstats_exit_group.bin"   // the last thread of a multi-threaded process: AGGR_PID and AGGR_TGID
	fixtureProcessExit = "taskstats_exit_process.bin" // a single-threaded process: AGGR_PID alone
)

// TestCaptureTaskstatsExits records a real exit notification of each kind: a thread of this test process
// that ends (a goroutine returning while locked to its thread), the end of a multi-threaded helper (the
// churn helper of testload), and the end of a single-threaded process (true).
// Run: go test ./internal/kernel -run TestCaptureTaskstatsExits -capture (as root)
func TestCaptureTaskstatsExits(t *testing.T) {
	if !*capture {
		t.Skip("run with -capture to refresh the netlink fixtures")
	}
	l, err := ListenExits("/sys")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var wg sync.WaitGroup
	for range 4 { // one may run on the main thread, which the Go runtime keeps
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		}()
	}
	wg.Wait()
	helper := testload.Command("churn", "100")
	in, err := helper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	_ = in.Close()
	_ = helper.Wait()
	tru := exec.Command("true")
	if err := tru.Run(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	want := map[string]func(TaskstatsReply) bool{
		fixtureThreadExit: func(r TaskstatsReply) bool {
			return r.TGIDStats == nil && r.PIDStats.TGID == os.Getpid() && r.PID != os.Getpid()
		},
		fixtureGroupExit: func(r TaskstatsReply) bool { return r.TGIDStats != nil && r.TGID == helper.Process.Pid },
		fixtureProcessExit: func(r TaskstatsReply) bool {
			return r.TGIDStats == nil && r.PID == tru.Process.Pid
		},
	}
	for len(want) > 0 {
		n, _, err := unix.Recvfrom(l.sock.fd, l.sock.buf, unix.MSG_DONTWAIT)
		if err != nil {
			t.Fatalf("%v; not captured: %d kinds", err, len(want))
		}
		b := l.sock.buf[:n]
		_ = parseNetlinkMessages(b, func(_ uint16, p []byte) error {
			r, err := parseTaskstatsPayload(p)
			if err != nil || r.PIDStats == nil {
				return err
			}
			for name, match := range want {
				if match(r) {
					write(t, name, b)
					delete(want, name)
				}
			}
			return nil
		})
	}
}

// readExitFixture decodes a captured exit notification as Drain does, its records read as version v (0:
// as captured). With setVersion, the version field of every struct taskstats in the bytes is rewritten
// first, as an older kernel would have sent it.
func readExitFixture(t *testing.T, name string, v uint16, setVersion bool) []ExitRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if setVersion {
		forEachStats(t, b, func(s []byte) { binary.LittleEndian.PutUint16(s[tsOffVersion:], v) })
	}
	var out []ExitRecord
	err = parseNetlinkMessages(b, func(_ uint16, p []byte) error {
		r, err := parseTaskstatsPayload(p)
		if err != nil {
			return err
		}
		if !setVersion {
			readAsVersion(&r, v)
		}
		if rec, ok := exitFromReply(r); ok {
			out = append(out, rec)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// forEachStats calls fn with the bytes of every struct taskstats in datagram b, which it may change.
func forEachStats(t *testing.T, b []byte, fn func([]byte)) {
	t.Helper()
	err := parseNetlinkMessages(b, func(_ uint16, p []byte) error {
		return walkAttrs(p[genlHdrLen:], func(_ uint16, val []byte) error {
			return walkAttrs(val, func(inner uint16, v []byte) error {
				if inner == tsTypeStats {
					fn(v)
				}
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestExitFixturesAsOldVersion: the real notifications of each kind, read as this kernel sent them and as a
// kernel before 5.19 (struct taskstats version 11, no ac_tgid) would have. A thread's end is skipped, or,
// without ac_tgid, returned with MaybeThread; a group's end is its total either way; a single-threaded
// process's end is the same record, with MaybeThread set only when old.
func TestExitFixturesAsOldVersion(t *testing.T) {
	t.Parallel()
	for _, name := range []string{fixtureThreadExit, fixtureGroupExit, fixtureProcessExit} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var stats []TaskStats
			b, _ := os.ReadFile(filepath.Join("testdata", name))
			forEachStats(t, b, func(s []byte) {
				ts, err := parseTaskStats(s)
				if err != nil {
					t.Fatal(err)
				}
				stats = append(stats, ts)
			})
			if len(stats) == 0 || stats[0].Version < tsVersionTGID {
				t.Fatalf("%s: want records of version %d or later, captured on Linux 5.19 or later: %+v", name, tsVersionTGID, stats)
			}
			ps := stats[0]
			now := readExitFixture(t, name, 0, false)
			var want []ExitRecord // as the kernel tells it now, from the fields decoded above
			switch name {
			case fixtureThreadExit:
				if ps.TGID == ps.PID || len(stats) != 1 {
					t.Fatalf("thread fixture: pid %d tgid %d, %d structs", ps.PID, ps.TGID, len(stats))
				}
			case fixtureGroupExit:
				if len(stats) != 2 {
					t.Fatalf("group fixture: %d structs, want 2", len(stats))
				}
				want = []ExitRecord{{PID: ps.TGID, PPID: ps.PPID, Comm: ps.Comm, CPUNs: stats[1].CPUNs}}
			case fixtureProcessExit:
				want = []ExitRecord{{PID: ps.PID, PPID: ps.PPID, Comm: ps.Comm, CPUNs: ps.CPUNs}}
			}
			if diff := cmp.Diff(want, now); diff != "" {
				t.Errorf("as captured (-want +got):\n%s", diff)
			}
			// An old kernel: a lone record may be a thread's.
			wantOld := append([]ExitRecord(nil), want...)
			switch name {
			case fixtureThreadExit:
				wantOld = []ExitRecord{{PID: ps.PID, PPID: ps.PPID, Comm: ps.Comm, CPUNs: ps.CPUNs, MaybeThread: true}}
			case fixtureProcessExit:
				wantOld[0].MaybeThread = true
			}
			for _, setVersion := range []bool{true, false} {
				if diff := cmp.Diff(wantOld, readExitFixture(t, name, 11, setVersion)); diff != "" {
					t.Errorf("as version 11 (version field rewritten: %v) (-want +got):\n%s", setVersion, diff)
				}
			}
		})
	}
}

// TestCheckCPUFilled: the TGID reply captured from this kernel carries CPU time; the same reply with its
// cpu_run_virtual_total zeroed, as a kernel without CONFIG_TASK_DELAY_ACCT sends it, is refused with
// ErrNotSupported and a message naming what is missing.
func TestCheckCPUFilled(t *testing.T) {
	t.Parallel()
	read := func(zero bool) TaskStats {
		b, err := os.ReadFile("testdata/taskstats_tgid_reply.bin")
		if err != nil {
			t.Fatal(err)
		}
		if zero {
			forEachStats(t, b, func(s []byte) { binary.LittleEndian.PutUint64(s[tsOffVirtTotal:], 0) })
		}
		var out TaskStats
		err = parseNetlinkMessages(b, func(_ uint16, p []byte) error {
			r, err := parseTaskstatsPayload(p)
			if r.TGIDStats != nil {
				out = *r.TGIDStats
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if err := checkCPUFilled(read(false)); err != nil {
		t.Errorf("captured reply: %v", err)
	}
	err := checkCPUFilled(read(true))
	if !errors.Is(err, ErrNotSupported) {
		t.Fatalf("reply without CPU time: %v, want ErrNotSupported", err)
	}
	t.Log(err)
}
