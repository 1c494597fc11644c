package sample

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/classify"
	"github.com/tare-dev/tare/internal/kernel"
)

// TestIdentityClassifiedFixture: what the kernel package reads of a process is enough to classify it: a
// pod's container by its cgroup, a kernel thread by its flags, anything else as other.
func TestIdentityClassifiedFixture(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pid       int
		cmdline   string
		kernel    bool
		kind      string
		podUID    string
		container string
	}{
		{10101, "sleep 300", false, classify.KindPod, "0f6d8b8e-1111-4c3a-9d2e-5a7c3f0e9b21", strings.Repeat("a", 64)},
		{2, "[kthreadd]", true, classify.KindKernel, "", ""},
		{1405, "bash /dev/fd/3", false, classify.KindOther, "", ""},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.pid), func(t *testing.T) {
			t.Parallel()
			id, err := kernel.ReadIdentity(fixtureProc, tt.pid)
			if err != nil {
				t.Fatal(err)
			}
			if id.Cmdline != tt.cmdline || id.Kernel != tt.kernel {
				t.Errorf("cmdline %q kernel %v, want %q %v", id.Cmdline, id.Kernel, tt.cmdline, tt.kernel)
			}
			c := classify.Process(id.Exe, id.Stat.Comm, id.Cmdline, id.Cgroup, id.Kernel, false)
			if c.Kind != tt.kind || c.Pod.UID != tt.podUID || c.Pod.Container != tt.container {
				t.Errorf("classified %+v, want kind %s pod %s container %s", c, tt.kind, tt.podUID, tt.container)
			}
		})
	}
}
