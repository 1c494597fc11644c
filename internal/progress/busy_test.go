package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/sample"
)

// TestLineNodeBusyFromReference: told what it measures, the line's node busy is the reference the report
// uses (here task time, which /proc/stat's ticks overstate), not /proc/stat busy.
func TestLineNodeBusyFromReference(t *testing.T) {
	var out bytes.Buffer
	l := New(&out)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	l.Measuring(sample.Meta{CPUs: 2, KernelHZ: 250, NodeReference: sample.RefCgroupV1})
	l.Start("measuring", 0)
	defer l.Done()
	node := sample.Node{TasksCPUNs: 1e12, CPU: sample.NodeCPU{User: 10}}
	l.Observe(sample.Sample{Node: node})
	for range 2 {
		now = now.Add(time.Second)
		node.TasksCPUNs += 250e6 // 250m of task time
		node.CPU.User += 0.3     // 300m of ticks
		l.Observe(sample.Sample{Elapsed: time.Second, Node: node})
	}
	got := out.String()
	if last := got[strings.LastIndex(got, "\r\x1b[2K")+len("\r\x1b[2K"):]; !strings.HasSuffix(last, "· node 250m") {
		t.Errorf("line %q, want node 250m", last)
	}
}
