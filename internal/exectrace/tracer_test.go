package exectrace

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/testenv"
)

// open opens a tracer recording into a table of its own.
func open(t *testing.T, opts Options) (*Tracer, *kernel.ExecTable) {
	t.Helper()
	testenv.NeedRoot(t, "loading BPF programs needs CAP_BPF and CAP_PERFMON")
	table := kernel.NewExecTable()
	tr, err := Open(table, opts)
	if errors.Is(err, ErrNotSupported) {
		testenv.Unavailable(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Error(err)
		}
	})
	return tr, table
}

// TestTracerNamesShortProcesses: a shell living 50 ms (a command after the sleep, so that no shell execs
// the sleep in its own place, as busybox sh does with a lone command) is named with the arguments the test
// gave it (its secret redacted), the test as its parent, and a start between the test's clock readings around it; the
// proc connector watcher, run beside it on the same process, agrees on the command line and the parent.
func TestTracerNamesShortProcesses(t *testing.T) {
	tr, table := open(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	connTable := kernel.NewExecTable()
	conn, err := kernel.WatchExecs(ctx, kernel.CmdlineReader("/proc"), connTable)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	before := time.Now()
	sh := exec.Command("sh", "-c", "sleep 0.05; :", "probe", "--password=hunter2")
	if err := sh.Run(); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	pid := sh.Process.Pid
	tr.Sync()
	born := table.TakeBorn()
	got, ok := table.Lookup(pid)
	if !ok {
		t.Fatalf("the tracer has no record of the shell %d", pid)
	}
	if !strings.HasPrefix(got.Cmdline, "sh -c sleep 0.05; : probe --password=") || strings.Contains(got.Cmdline, "hunter2") {
		t.Errorf("command line %q: want the shell's arguments with the password redacted", got.Cmdline)
	}
	if got.PPID != os.Getpid() {
		t.Errorf("parent %d, want the test %d", got.PPID, os.Getpid())
	}
	// The boot-time clock and the wall clock are read a few microseconds apart at Sync: 5 ms of slack.
	if got.Started.Before(before.Add(-5*time.Millisecond)) || got.Started.After(after.Add(5*time.Millisecond)) {
		t.Errorf("started %v, want between %v and %v", got.Started, before, after)
	}
	if !contains(born, pid) {
		t.Errorf("the shell %d is not among the processes born since Open (%d of them)", pid, len(born))
	}
	conn.Sync()
	if peer, ok := connTable.Lookup(pid); !ok || peer.Cmdline != got.Cmdline || peer.PPID != got.PPID {
		t.Errorf("proc connector has %+v (found %v), tracer %+v", peer, ok, got)
	}
	if n := tr.Lost(); n != 0 {
		t.Errorf("%d records lost", n)
	}
}

// TestTracerCutsLongCommandLines: a command line longer than the copy keeps its whole arguments within the
// first 1,024 bytes and says it was cut; the argument the cut falls in is left out, so that a URL whose
// password the cut separates from its "@" does not show the password's start.
func TestTracerCutsLongCommandLines(t *testing.T) {
	tr, table := open(t, Options{})
	head := "sh\x00-c\x00exit 0\x00"
	pad := strings.Repeat("x", argsMax-len(head)-len("\x00https://admin:S3cr")-1) // the cut falls after "S3cr"
	url := "https://admin:S3cretPassw0rd@example.invalid/x"
	sh := exec.Command("sh", "-c", "exit 0", pad, url, strings.Repeat("y", 2000))
	if err := sh.Run(); err != nil {
		t.Fatal(err)
	}
	tr.Sync()
	got, ok := table.Lookup(sh.Process.Pid)
	if !ok {
		t.Fatalf("no record of %d", sh.Process.Pid)
	}
	if want := "sh -c exit 0 " + pad + " …"; got.Cmdline != want {
		t.Errorf("command line of %d bytes ending %q, want %d bytes ending %q", len(got.Cmdline), tail(got.Cmdline), len(want), tail(want))
	}
	if strings.Contains(got.Cmdline, "S3cr") {
		t.Errorf("the cut password shows: %q", tail(got.Cmdline))
	}
}

func tail(s string) string { return s[max(0, len(s)-40):] }

// TestTracerBufferFull: records that do not fit the ring buffer are counted, not silently lost. A one-page
// buffer holds three records; the test starts ten processes before reading it.
func TestTracerBufferFull(t *testing.T) {
	tr, _ := open(t, Options{BufferBytes: uint32(os.Getpagesize())})
	for range 10 {
		if err := exec.Command("true").Run(); err != nil {
			t.Fatal(err)
		}
	}
	tr.Sync()
	// Each run is a fork and an exec: at least 20 records, of which a 4 KiB buffer holds 3.
	if n := tr.Lost(); n < 20-3 {
		t.Errorf("%d records counted lost, want at least 17", n)
	}
}

func contains(pids []int, pid int) bool {
	for _, p := range pids {
		if p == pid {
			return true
		}
	}
	return false
}

// TestParseEvent decodes a record laid out as struct event of exectrace.bpf.c, and refuses a short one.
func TestParseEvent(t *testing.T) {
	b := make([]byte, eventSize)
	ne := binary.NativeEndian
	ne.PutUint64(b[0:], 123)
	ne.PutUint32(b[8:], kindExec)
	ne.PutUint32(b[12:], 42)
	ne.PutUint32(b[16:], 7)
	args := "kubectl\x00apply\x00-f\x00x.yaml\x00--token=abc\x00"
	ne.PutUint32(b[20:], uint32(len(args)))
	ne.PutUint64(b[24:], uint64(len(args)))
	copy(b[32:], args)
	ev, ok := parseEvent(b)
	if !ok || ev.bootNs != 123 || ev.kind != kindExec || ev.tgid != 42 || ev.ppid != 7 {
		t.Fatalf("parsed %+v, %v", ev, ok)
	}
	if got := ev.cmdline(); got != "kubectl apply -f x.yaml --token=***" {
		t.Errorf("cmdline %q", got)
	}
	if _, ok := parseEvent(b[:eventSize-1]); ok {
		t.Error("a short record parsed")
	}
}

func FuzzParseEvent(f *testing.F) {
	f.Add(make([]byte, eventSize))
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if ev, ok := parseEvent(b); ok {
			_ = ev.cmdline()
		}
	})
}

// TestEventLayout holds parseEvent's offsets to the layout clang gave struct event, as bpf2go's Go type of
// it (generated from the compiled object's BTF) has it.
func TestEventLayout(t *testing.T) {
	var ev exectraceEvent
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"boot_ns", unsafe.Offsetof(ev.BootNs), offBootNs},
		{"kind", unsafe.Offsetof(ev.Kind), offKind},
		{"tgid", unsafe.Offsetof(ev.Tgid), offTGID},
		{"ppid", unsafe.Offsetof(ev.Ppid), offPPID},
		{"args_len", unsafe.Offsetof(ev.ArgsLen), offArgsLen},
		{"args_full", unsafe.Offsetof(ev.ArgsFull), offArgsFull},
		{"args", unsafe.Offsetof(ev.Args), offArgs},
		{"size", unsafe.Sizeof(ev), eventSize},
		{"args size", uintptr(len(ev.Args)), argsMax},
	} {
		if f.got != f.want {
			t.Errorf("struct event's %s at %d in the compiled object, parseEvent reads %d", f.name, f.got, f.want)
		}
	}
}
