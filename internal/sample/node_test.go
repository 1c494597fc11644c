package sample

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The fixtures are the kernel package's, captured from this machine (see ../kernel/testdata/README.md).
const fixtureProc, fixtureSys = "../kernel/testdata/root/proc", "../kernel/testdata/root/sys"

func TestNodeReaderFixture(t *testing.T) {
	t.Parallel()
	r, err := NewNodeReader(fixtureProc, fixtureSys)
	if err != nil {
		t.Fatal(err)
	}
	n, err := r.Read(true, Node{})
	if err != nil {
		t.Fatal(err)
	}
	// The first line of the captured /proc/stat, in USER_HZ ticks.
	b, _ := os.ReadFile(filepath.Join(fixtureProc, "stat"))
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	tick := func(i int) float64 { v, _ := strconv.ParseFloat(f[i], 64); return v / 100 }
	want := NodeCPU{tick(1), tick(2), tick(3), tick(4), tick(5), tick(6), tick(7), tick(8), tick(9), tick(10)}
	if diff := cmp.Diff(want, n.CPU); diff != "" {
		t.Errorf("node CPU (-want +got):\n%s", diff)
	}
	if got, want := n.CPU.Busy(), want.User+want.Nice+want.System+want.IRQ+want.SoftIRQ+want.Steal; got != want {
		t.Errorf("Busy() = %v, want %v", got, want)
	}
	if len(n.Pressure) != 3 {
		t.Errorf("pressure for %d resources, want cpu, memory, io", len(n.Pressure))
	}
	usage, _ := os.ReadFile(filepath.Join(fixtureSys, "fs/cgroup/cpuacct/cpuacct.usage"))
	if got := r.TasksCPU(); strconv.FormatUint(got, 10) != strings.TrimSpace(string(usage)) {
		t.Errorf("tasks CPU %d, want %s", got, usage)
	}
}
