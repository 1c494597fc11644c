package sample

import (
	"time"

	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/kernel"
)

// The fixtures are the kernel package's, captured from this machine (see ../kernel/testdata/README.md).
const fixtureProc, fixtureSys = "../kernel/testdata/root/proc", "../kernel/testdata/root/sys"

func TestNodeReaderFixture(t *testing.T) {
	t.Parallel()
	r, err := NewNodeReader(fixtureProc, fixtureSys)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before := time.Now()
	n, at, err := r.Read(true, Node{})
	if err != nil {
		t.Fatal(err)
	}
	if at.Before(before) || at.After(time.Now()) {
		t.Errorf("read at %v, outside the call (%v on)", at, before)
	}
	// kernel's TestNodeReaderFixture checks the figures against the captured files; here they must come
	// through unchanged, and the pressure only from a full reading.
	kr, err := kernel.NewNodeReader(fixtureProc)
	if err != nil {
		t.Fatal(err)
	}
	defer kr.Close()
	k, err := kr.ReadStat()
	if err != nil {
		t.Fatal(err)
	}
	kr.ReadSlow(&k)
	want := Node{CPU: NodeCPU(k.CPU), Running: k.Running, Load1: k.Load1, Load5: k.Load5, Load15: k.Load15, Pressure: k.Pressure, TasksCPUNs: r.TasksCPU()}
	if diff := cmp.Diff(want, n); diff != "" {
		t.Errorf("node reading (-kernel's +got):\n%s", diff)
	}
	quick, _, err := r.Read(false, Node{Load1: 9})
	if err != nil {
		t.Fatal(err)
	}
	if quick.CPU != want.CPU || quick.Load1 != 9 || quick.Pressure != nil {
		t.Errorf("a quick reading %+v: want the CPU read and the rest carried over from the previous one", quick)
	}
	usage, _ := os.ReadFile(filepath.Join(fixtureSys, "fs/cgroup/cpuacct/cpuacct.usage"))
	if got := r.TasksCPU(); strconv.FormatUint(got, 10) != strings.TrimSpace(string(usage)) {
		t.Errorf("tasks CPU %d, want %s", got, usage)
	}
}
