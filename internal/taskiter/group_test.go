package taskiter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/kernel"
)

var capture = flag.Bool("capture", false, "rewrite testdata/all_pass.bin from a real pass of the iterator on this machine (root)")

// TestCaptureFixture records the raw output of one pass (every thread group) for the parser's fixture test.
func TestCaptureFixture(t *testing.T) {
	if !*capture {
		t.Skip("run with -capture to rewrite the fixture")
	}
	it, err := OpenPass(PassBPFIter) // the pass whose read returns the records
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
	// The peer, read right after the pass: each group's /proc/PID/stat as "pid ppid starttime num_threads
	// state cutime cstime", the owner of /proc/PID, read_bytes and write_bytes of /proc/PID/io (- - when
	// unreadable), then comm, which may hold spaces.
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
		var owner syscall.Stat_t
		if syscall.Stat(fmt.Sprintf("/proc/%d", g.TGID), &owner) != nil {
			continue
		}
		io := "- -"
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", g.TGID)); err == nil {
			var rb, wb string
			for _, line := range strings.Split(string(b), "\n") {
				k, v, _ := strings.Cut(line, ": ")
				switch k {
				case "read_bytes":
					rb = v
				case "write_bytes":
					wb = v
				}
			}
			io = rb + " " + wb
		}
		end := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[end+1:]))
		fmt.Fprintf(&peer, "%d %s %s %s %s %s %s %d %s %s\n", g.TGID, f[1], f[19], f[17], f[0], f[13], f[14], owner.Uid, io,
			stat[bytes.IndexByte(stat, '(')+1:end])
	}
	if err := os.WriteFile("testdata/all_pass.proc", []byte(peer.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// peerStat is what /proc said of a group right after the captured pass.
type peerStat struct {
	stat       kernel.ProcStat
	uid        uint32
	hasIO      bool
	read, writ uint64
}

// procPeer reads testdata/all_pass.proc: what /proc said of each group right after the captured pass, by
// PID.
func procPeer(t *testing.T) map[int]peerStat {
	t.Helper()
	b, err := os.ReadFile("testdata/all_pass.proc")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]peerStat{}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var p peerStat
		var pid int
		var state, rb, wb string
		f := strings.SplitN(line, " ", 11)
		if len(f) != 11 {
			t.Fatalf("%q: %d fields", line, len(f))
		}
		if _, err := fmt.Sscan(strings.Join(f[:10], " "), &pid, &p.stat.PPID, &p.stat.Starttime, &p.stat.NumThreads, &state,
			&p.stat.CUTime, &p.stat.CSTime, &p.uid, &rb, &wb); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		p.stat.State, p.stat.Comm = state[0], f[10]
		if rb != "-" {
			p.hasIO = true
			p.read, _ = strconv.ParseUint(rb, 10, 64)
			p.writ, _ = strconv.ParseUint(wb, 10, 64)
		}
		out[pid] = p
	}
	return out
}

// TestParseCapturedPass decodes a pass captured on this machine (a 2-CPU VM, Linux 6.18): every record
// decodes, the first ones are the kernel threads that start every Linux system, in PID order, and each
// group agrees with what /proc said of it right after the pass (testdata/all_pass.proc): the same parent,
// the same start time in USER_HZ ticks (starttime is the start in ns cut to 10 ms), and for kernel
// threads, which never grow threads, the same thread count. Every group is described: the same name,
// owner and reaped children's times as /proc/PID/stat and the owner of /proc/PID (a kernel thread's state
// too: idle), I/O counters for the groups of one thread, none beyond what /proc/PID/io said after.
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
	checked, described := 0, 0
	kthreadd := gs[0]
	if kthreadd.TGID != 2 || kthreadd.PPID != 0 || !kthreadd.Kernel || kthreadd.Threads != 1 {
		t.Errorf("first group %+v, want kthreadd (pid 2, a kernel thread)", kthreadd)
	}
	for i, g := range gs {
		// The walk goes by thread ID, and a group is written at its last thread: a group of one thread comes
		// after every group written before it (a group of more, whose threads came after other processes'
		// PIDs, may come later than they).
		if i > 0 && g.TGID <= gs[i-1].TGID && g.Threads == 1 {
			t.Errorf("group %d (pid %d, one thread) after pid %d: the iterator walks thread IDs in order", i, g.TGID, gs[i-1].TGID)
		}
		p, ok := peer[g.TGID]
		if !ok {
			continue // exited between the pass and the read of /proc
		}
		checked++
		if g.PPID != p.stat.PPID || g.StartNs/1e7 != p.stat.Starttime || g.Kernel && g.Threads != p.stat.NumThreads {
			t.Errorf("group %+v; /proc/%d/stat: parent %d, start %d ticks, %d threads", g, g.TGID, p.stat.PPID, p.stat.Starttime, p.stat.NumThreads)
		}
		// The description: a kernel thread's state (idle, I) does not change, and every process's owner and
		// reaped children's times did not move in the moment between the pass and the read. A kernel thread's
		// name in /proc is the kernel's fuller one, so it has no ProcStat.
		d := g.Desc
		if !d.Valid {
			t.Errorf("group %d has no description", g.TGID)
			continue
		}
		described++
		tick := uint64(1e9 / kernel.UserHZ)
		if d.EUID != p.uid || int64(d.CUTimeNs/tick) != p.stat.CUTime || int64(d.CSTimeNs/tick) != p.stat.CSTime || g.Kernel && d.State != p.stat.State {
			t.Errorf("group %d described as state %c owner %d children %d+%d ns; /proc says %c %d %d+%d ticks", g.TGID,
				d.State, d.EUID, d.CUTimeNs, d.CSTimeNs, p.stat.State, p.uid, p.stat.CUTime, p.stat.CSTime)
		}
		if st, ok := g.ProcStat(); ok == g.Kernel || ok && st.Comm != p.stat.Comm {
			t.Errorf("group %d (kernel %v) has ProcStat %v, name %q; /proc says %q", g.TGID, g.Kernel, ok, st.Comm, p.stat.Comm)
		}
		if g.Desc.HasIO != (g.Threads == 1) {
			t.Errorf("group %d of %d threads (kernel %v): I/O counters %v", g.TGID, g.Threads, g.Kernel, g.Desc.HasIO)
		}
		if g.Desc.HasIO && p.hasIO && (g.Desc.ReadBytes > p.read || g.Desc.WriteBytes > p.writ) {
			t.Errorf("group %d: read %d and wrote %d bytes in the pass, more than /proc/%d/io said after it (%d, %d)", g.TGID,
				g.Desc.ReadBytes, g.Desc.WriteBytes, g.TGID, p.read, p.writ)
		}
		if g.Kernel && g.TGID != 2 && g.PPID != 2 {
			t.Errorf("kernel thread %+v not a child of kthreadd", g)
		}
	}
	if described != checked {
		t.Errorf("%d of %d groups described", described, checked)
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

// describedRecord is a record with its leader's description: a sleeping process "sh" of UID 1000 whose
// reaped children ran 1.5 s and 0.25 s, in cgroups 7, 8 and 9, with I/O counters when io.
func describedRecord(tgid uint32, io bool) []byte {
	flags := uint32(flagDescribed)
	if io {
		flags |= flagIO
	}
	b := record(tgid, 1, 2e9, 8, 1, flags)
	ne := binary.NativeEndian
	copy(b[groupSize:], "sh")
	ne.PutUint32(b[groupSize+16:], 1) // TASK_INTERRUPTIBLE
	ne.PutUint32(b[groupSize+24:], 1000)
	ne.PutUint64(b[groupSize+32:], 1_500_000_000)
	ne.PutUint64(b[groupSize+40:], 250_000_000)
	ne.PutUint64(b[groupSize+48:], 4096)
	ne.PutUint64(b[groupSize+56:], 8192)
	for i, id := range []uint64{7, 8, 9} { // its cgroups: unified, cpu, memory
		ne.PutUint64(b[groupSize+64+8*i:], id)
	}
	return b
}

func TestParseGroups(t *testing.T) {
	t.Parallel()
	two := append(record(1, 0, 5, 6, 1, 0), record(4242, 1, 1e9, 7, 3, flagKernel|flagInexact)...)
	sh := Group{TGID: 9, PPID: 1, CPUNs: 2e9, StartNs: 8, Threads: 1,
		Desc: Description{Valid: true, Comm: "sh", State: 'S', EUID: 1000, CUTimeNs: 1.5e9, CSTimeNs: 0.25e9, CgroupKey: kernel.CgroupIDs{7, 8, 9}}}
	shIO := sh
	shIO.Desc.HasIO, shIO.Desc.ReadBytes, shIO.Desc.WriteBytes = true, 4096, 8192
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
		{name: "described", in: describedRecord(9, false), want: []Group{sh}},
		{name: "described with I/O", in: describedRecord(9, true), want: []Group{shIO}},
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

// TestStateLetter: the letters /proc/PID/stat shows for the states include/linux/sched.h defines (the
// captured pass checks them against /proc itself).
func TestStateLetter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		state, exit uint32
		want        byte
	}{
		{0, 0, 'R'}, {0x1, 0, 'S'}, {0x2, 0, 'D'}, {0x402, 0, 'I'}, {0x104, 0, 'T'}, {0x108, 0, 't'},
		{0, 0x20, 'Z'}, {0x80, 0x10, 'X'}, {0x40, 0, 'P'}, {0x8002, 0, 'D'}, {0x1000, 0, 'D'}, {0x2001, 0, 'S'},
	} {
		if got := stateLetter(tt.state, tt.exit); got != tt.want {
			t.Errorf("stateLetter(%#x, %#x) = %c, want %c", tt.state, tt.exit, got, tt.want)
		}
	}
}

func FuzzParseGroups(f *testing.F) {
	if b, err := os.ReadFile("testdata/all_pass.bin"); err == nil {
		f.Add(b[:min(len(b), 4*recordSize+3)])
	}
	f.Add(record(1, 0, 5, 6, 1, 0))
	f.Add(describedRecord(9, true))
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

// TestRecordSize: the open-coded program's struct record (record.h, which bpf-iter's program includes too,
// as its BTF has it) is the size parseGroups reads, and checkRecord, which its load runs, says so; a size
// apart is ErrMalformed.
func TestRecordSize(t *testing.T) {
	t.Parallel()
	for name, load := range map[string]func() (*ebpf.CollectionSpec, error){"open-coded": loadTaskiter} {
		spec, err := load()
		if err != nil {
			t.Fatal(err)
		}
		if err := checkRecord(spec); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		var rec *btf.Struct
		if err := spec.Types.TypeByName("record", &rec); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rec.Size += 8
		if err := checkRecord(spec); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: a record 8 bytes larger: %v, want ErrMalformed", name, err)
		}
	}
}
