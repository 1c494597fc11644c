package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/sample"
)

// Two intervals of one second: the node busy 500m then 300m, etcd 200m and 100m, kubelet 50m twice. The
// line shows their means over the trailing span, the busiest group first, with elapsed and remaining.
func TestLineFigures(t *testing.T) {
	var out bytes.Buffer
	l := New(&out)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	l.Start("measuring", time.Minute)
	procs := []sample.ProcInfo{{ID: 1, Group: "etcd"}, {ID: 2, Group: "kubelet"}}
	busy := 10.0 // seconds of CPU, cumulative
	l.Observe(sample.Sample{New: procs, Node: sample.Node{CPU: sample.NodeCPU{User: busy}}})
	for _, x := range []struct{ node, etcd float64 }{{0.5, 0.2}, {0.3, 0.1}} {
		now = now.Add(time.Second)
		busy += x.node
		l.Observe(sample.Sample{Elapsed: time.Second, Node: sample.Node{CPU: sample.NodeCPU{User: busy}},
			Procs: []sample.ProcSample{{ID: 1, CPUNs: uint64(x.etcd * 1e9)}, {ID: 2, CPUNs: 5e7}}})
	}
	got := out.String()
	last := got[strings.LastIndex(got, "\r\x1b[2K")+len("\r\x1b[2K"):]
	if want := "measuring 0:02 / 1:00 (0:58 left) · node 400m · etcd 150m, kubelet 50m"; last != want {
		t.Errorf("line %q, want %q", last, want)
	}
	l.Printf("warning: %s", "x")
	l.Done()
	got = out.String()
	if !strings.Contains(got, "\r\x1b[2Kwarning: x\n") || !strings.HasSuffix(got, "\r\x1b[2K") {
		t.Errorf("printf above the line and done: %q", got[max(0, len(got)-120):])
	}
	var nilLine *Line
	nilLine.Start("x", 0)
	nilLine.Observe(sample.Sample{})
	nilLine.Printf("x")
	nilLine.Done()
}

// The trailing span keeps the last 3 seconds, and a long label is cut to the terminal's width.
func TestLineTrailingAndWidth(t *testing.T) {
	var out bytes.Buffer
	l := New(&out)
	l.width = func() int { return 30 }
	defer l.Done()
	now := time.Unix(0, 0)
	l.now = func() time.Time { return now }
	l.Start(strings.Repeat("é", 40), 0)
	for i := 0; i < 10; i++ {
		now = now.Add(time.Second)
		l.Observe(sample.Sample{Elapsed: time.Second, Node: sample.Node{CPU: sample.NodeCPU{User: float64(i)}}})
	}
	if n := len(l.window); n != 4 {
		t.Errorf("%d intervals kept, want 4 (the last 3 s and the one crossing it)", n)
	}
	got := out.String()
	last := got[strings.LastIndex(got, "\r\x1b[2K")+len("\r\x1b[2K"):]
	// The label alone is longer than the 29 columns left of 30: the line is its first 29 runes, each whole.
	if want := strings.Repeat("é", 29); last != want {
		t.Errorf("line %q (%d runes), want %q: the label's first 29 runes", last, len([]rune(last)), want)
	}
}
