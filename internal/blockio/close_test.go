package blockio

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/tare-dev/tare/internal/testenv"
)

// ids returns the kernel IDs of a Tracer's programs and links.
func (t *Tracer) ids(tb testing.TB) (progs []ebpf.ProgramID, links []link.ID) {
	tb.Helper()
	for _, p := range []*ebpf.Program{t.objs.IoStart, t.objs.RqInsert, t.objs.RqIssue, t.objs.RqComplete} {
		info, err := p.Info()
		if err != nil {
			tb.Fatal(err)
		}
		id, ok := info.ID()
		if !ok {
			tb.Fatal("the kernel does not report program IDs")
		}
		progs = append(progs, id)
	}
	for _, l := range t.links {
		info, err := l.Info()
		if err != nil {
			tb.Fatal(err)
		}
		links = append(links, info.ID)
	}
	return progs, links
}

// waitGone polls until none of the programs and links exists, or fails t after a deadline: the kernel
// frees a program once its last reference goes, after an RCU grace period.
func waitGone(t *testing.T, progs []ebpf.ProgramID, links []link.ID) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []string
		for _, id := range progs {
			if p, err := ebpf.NewProgramFromID(id); err == nil {
				left = append(left, fmt.Sprintf("program %d", id))
				_ = p.Close()
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("looking up program %d: %v", id, err)
			}
		}
		for _, id := range links {
			if l, err := link.NewFromID(id); err == nil {
				left = append(left, fmt.Sprintf("link %d", id))
				_ = l.Close()
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("looking up link %d: %v", id, err)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still in the kernel 10s after the tracer went: %s", strings.Join(left, ", "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCloseDetaches(t *testing.T) {
	testenv.NeedRoot(t, "loading BPF programs needs CAP_BPF and CAP_PERFMON")
	tr, err := Open(Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	progs, links := tr.ids(t)
	if len(progs) != 4 || len(links) != 4 {
		t.Fatalf("%d programs and %d links, want 4 of each", len(progs), len(links))
	}
	if err := tr.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := tr.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	waitGone(t, progs, links)
}

// childEnv makes the test binary, run by TestInterruptDetaches, open a tracer, print its IDs and wait to
// be killed.
const childEnv = "TARE_BLOCKIO_CHILD"

func TestInterruptDetaches(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		tracerChild(t)
		return
	}
	testenv.NeedRoot(t, "loading BPF programs needs CAP_BPF and CAP_PERFMON")
	cmd := exec.Command(os.Args[0], "-test.run=^TestInterruptDetaches$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var progs []ebpf.ProgramID
	var links []link.ID
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		kind, id, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			continue
		}
		switch kind {
		case "prog":
			progs = append(progs, ebpf.ProgramID(n))
		case "link":
			links = append(links, link.ID(n))
		}
		if kind == "ready" {
			break
		}
	}
	if len(progs) != 4 || len(links) != 4 {
		t.Fatalf("the child reported %d programs and %d links, want 4 of each", len(progs), len(links))
	}
	// SIGINT, as Ctrl-C sends: the child does not handle it, so it dies without calling Close.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, progs, links)
}

// tracerChild is the child's side of TestInterruptDetaches.
func tracerChild(t *testing.T) {
	tr, err := Open(Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	progs, links := tr.ids(t)
	for _, id := range progs {
		fmt.Printf("prog %d\n", id)
	}
	for _, id := range links {
		fmt.Printf("link %d\n", id)
	}
	fmt.Println("ready 0")
	time.Sleep(time.Minute) // killed long before
}
