package taskiter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var capture = flag.Bool("capture", false, "rewrite testdata/all_pass.bin from a real pass of the iterator on this machine (root)")

// TestCaptureFixture records the raw output of one pass (every thread group) for the parser's fixture test.
func TestCaptureFixture(t *testing.T) {
	if !*capture {
		t.Skip("run with -capture to rewrite the fixture")
	}
	it, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = it.Close() }()
	if err := it.emitAll.Set(uint32(1)); err != nil {
		t.Fatal(err)
	}
	f, err := it.link.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("testdata/all_pass.bin", b, 0o644); err != nil {
		t.Fatal(err)
	}
	// The peer: each group's /proc/PID/stat, read right after the pass, as "pid ppid starttime num_threads".
	gs, _, err := parseGroups(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	var peer strings.Builder
	for _, g := range gs {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", g.TGID))
		if err != nil {
			continue // exited since the pass
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		fmt.Fprintf(&peer, "%d %s %s %s\n", g.TGID, f[1], f[19], f[17])
	}
	if err := os.WriteFile("testdata/all_pass.proc", []byte(peer.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// procPeer reads testdata/all_pass.proc: what /proc/PID/stat said of each group right after the captured
// pass, by PID.
func procPeer(t *testing.T) map[int]Group {
	t.Helper()
	b, err := os.ReadFile("testdata/all_pass.proc")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]Group{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var pid, ppid, threads int
		var start uint64

		if _, err := fmt.Sscan(line, &pid, &ppid, &start, &threads); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out[pid] = Group{TGID: pid, PPID: ppid, StartNs: start, Threads: threads}
	}
	return out
}

// TestParseCapturedPass decodes a pass captured on this machine (a 2-CPU VM, Linux 6.18): every record
// decodes, the first ones are the kernel threads that start every Linux system, in PID order, and each
// group agrees with what /proc/PID/stat said of it right after the pass (testdata/all_pass.proc): the same
// parent, the same start time in USER_HZ ticks (starttime is the start in ns cut to 10 ms), and for kernel
// threads, which never grow threads, the same thread count.
func TestParseCapturedPass(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/all_pass.bin")
	if err != nil {
		t.Fatal(err)
	}
	gs, rest, err := parseGroups(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 0 || len(gs) != len(b)/recordSize {
		t.Fatalf("%d bytes: %d groups and %d bytes left over", len(b), len(gs), len(rest))
	}
	peer := procPeer(t)
	checked := 0
	kthreadd := gs[0]
	if kthreadd.TGID != 2 || kthreadd.PPID != 0 || !kthreadd.Kernel || kthreadd.Threads != 1 {
		t.Errorf("first group %+v, want kthreadd (pid 2, a kernel thread)", kthreadd)
	}
	for i, g := range gs {
		if i > 0 && g.TGID <= gs[i-1].TGID {
			t.Errorf("group %d (pid %d) after pid %d: the iterator walks PIDs in order", i, g.TGID, gs[i-1].TGID)
		}
		p, ok := peer[g.TGID]
		if !ok {
			continue // exited between the pass and the read of /proc
		}
		checked++
		if g.PPID != p.PPID || g.StartNs/1e7 != p.StartNs || g.Kernel && g.Threads != p.Threads {
			t.Errorf("group %+v; /proc/%d/stat: parent %d, start %d ticks, %d threads", g, g.TGID, p.PPID, p.StartNs, p.Threads)
		}
		if g.Kernel && g.TGID != 2 && g.PPID != 2 {
			t.Errorf("kernel thread %+v not a child of kthreadd", g)
		}
	}
	if checked < len(gs)*9/10 {
		t.Errorf("only %d of %d groups had a /proc peer: recapture with -capture", checked, len(gs))
	}
}

func record(tgid, ppid uint32, cpu, start uint64, threads, flags uint32) []byte {
	b := make([]byte, recordSize)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], tgid)
	ne.PutUint32(b[4:], ppid)
	ne.PutUint64(b[8:], cpu)
	ne.PutUint64(b[16:], start)
	ne.PutUint32(b[24:], threads)
	ne.PutUint32(b[28:], flags)
	return b
}

func TestParseGroups(t *testing.T) {
	t.Parallel()
	two := append(record(1, 0, 5, 6, 1, 0), record(4242, 1, 1e9, 7, 3, flagKernel|flagInexact)...)
	tests := []struct {
		name     string
		in       []byte
		want     []Group
		wantRest int
		wantErr  error
	}{
		{name: "empty", in: nil},
		{name: "two records", in: two, want: []Group{
			{TGID: 1, CPUNs: 5, StartNs: 6, Threads: 1},
			{TGID: 4242, PPID: 1, CPUNs: 1e9, StartNs: 7, Threads: 3, Kernel: true, Inexact: true},
		}},
		{name: "record split across reads", in: two[:recordSize+5], want: []Group{{TGID: 1, CPUNs: 5, StartNs: 6, Threads: 1}}, wantRest: 5},
		{name: "pid 0", in: record(0, 0, 1, 1, 1, 0), wantErr: ErrMalformed},
		{name: "pid beyond PID_MAX_LIMIT", in: record(maxPID+1, 0, 1, 1, 1, 0), wantErr: ErrMalformed},
		{name: "parent beyond PID_MAX_LIMIT is clamped", in: record(7, 1<<31, 1, 1, 1, 0), want: []Group{{TGID: 7, PPID: maxPID, CPUNs: 1, StartNs: 1, Threads: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, rest, err := parseGroups(tt.in, nil)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
			if len(rest) != tt.wantRest {
				t.Errorf("%d bytes left, want %d", len(rest), tt.wantRest)
			}
		})
	}
}

func FuzzParseGroups(f *testing.F) {
	if b, err := os.ReadFile("testdata/all_pass.bin"); err == nil {
		f.Add(b[:min(len(b), 4*recordSize+3)])
	}
	f.Add(record(1, 0, 5, 6, 1, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		gs, rest, err := parseGroups(b, nil)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not match ErrMalformed", err)
			}
			return
		}
		if len(rest) >= recordSize || len(gs)*recordSize+len(rest) != len(b) {
			t.Fatalf("%d bytes: %d groups, %d left", len(b), len(gs), len(rest))
		}
		for _, g := range gs {
			if g.TGID <= 0 || g.TGID > maxPID || g.PPID < 0 || g.PPID > maxPID {
				t.Fatalf("out of range: %+v", g)
			}
		}
	})
}

// TestOpenGroup: a group left open by its pass is reported from its state as described at its first visit,
// with the pass's sums and the inexact flag; one written since, or of another pass, is not.
func TestOpenGroup(t *testing.T) {
	state := func(session uint64, dead, live uint64, threads uint32) []byte {
		b := make([]byte, stateSize)
		ne := binary.NativeEndian
		ne.PutUint64(b[stateSession:], session)
		ne.PutUint64(b[stateDead:], dead)
		ne.PutUint64(b[stateLive:], live)
		ne.PutUint32(b[stateThreads:], threads)
		copy(b[stateOpenAs:], record(77, 1, 0, 900, 0, flagKernel))
		return b
	}
	got, err := openGroup(state(5, 300, 40, 2), 5, nil)
	want := []Group{{TGID: 77, PPID: 1, CPUNs: 340, StartNs: 900, Threads: 2, Kernel: true, Inexact: true}}
	if err != nil || len(got) != 1 || got[0] != want[0] {
		t.Errorf("open group: %+v, %v; want %+v", got, err, want)
	}
	for name, val := range map[string][]byte{"written": state(5, 300, 40, 0), "another pass": state(4, 300, 40, 2)} {
		if got, err := openGroup(val, 5, nil); err != nil || len(got) != 0 {
			t.Errorf("%s: %+v, %v; want nothing", name, got, err)
		}
	}
	bad := state(5, 1, 1, 1)
	copy(bad[stateOpenAs:], record(0, 0, 0, 0, 0, 0))
	if _, err := openGroup(bad, 5, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("a state with thread group 0: %v, want ErrMalformed", err)
	}
}
