package sample

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestDescribeHostFixtures: the host name and release come from the measured root's /proc/sys/kernel (a
// UTS namespace's "worker-1", not this machine's name), the build configuration from /proc/config.gz, else
// /boot/config-RELEASE under the host root, else it is said to be assumed.
// kernelTestdata holds the host fixtures, which the kernel package tests too.
const kernelTestdata = "../kernel/testdata/"

func TestDescribeHostFixtures(t *testing.T) {
	t.Parallel()
	release := "6.18.44-fc-v595"
	for _, tc := range []struct {
		root        string
		host        string
		config      string
		hz          int
		limitations []string
	}{
		{kernelTestdata + "v2host", "vm", kernelTestdata + "v2host/proc/config.gz", 250, nil},
		{kernelTestdata + "hosts/bootconfig", "worker-1", kernelTestdata + "hosts/bootconfig/boot/config-" + release, 250, nil},
		{kernelTestdata + "hosts/noconfig", "worker-1", KernelConfigAssumed, 0, []string{"kernel configuration: neither " + kernelTestdata + "hosts/noconfig/proc/config.gz nor " + kernelTestdata + "hosts/noconfig/boot/config-" + release +
			" exists (pass --host-root where the host's / is mounted): open " + kernelTestdata + "hosts/noconfig/boot/config-" + release +
			": no such file or directory; the tick rate is assumed to be 250 Hz and IRQ time accounting off"}},
	} {
		var m Meta
		kc := m.describeHost(filepath.Join(tc.root, "proc"), tc.root, "tare's own name")
		if m.Host != tc.host || m.Kernel != release || m.KernelConfig != tc.config || kc.HZ != tc.hz || kc.IRQTimeAccounting {
			t.Errorf("%s: host %q kernel %q config %q (%+v)", tc.root, m.Host, m.Kernel, m.KernelConfig, kc)
		}
		if diff := cmp.Diff(tc.limitations, m.Limitations); diff != "" {
			t.Errorf("%s: limitations (-want +got):\n%s", tc.root, diff)
		}
		m.KernelHZ, m.IRQTime = kc.HZ, kc.IRQTimeAccounting
		if hz, assumed := m.TickHZ(); hz != 250 || assumed != (tc.hz == 0) || m.IRQTimeKnown() == (tc.hz == 0) {
			t.Errorf("%s: tick %d Hz assumed %v, IRQ time known %v", tc.root, hz, assumed, m.IRQTimeKnown())
		}
	}
}

// TestDescribeHostLive reads this machine: its name as its kernel has it, and a configuration from a file.
func TestDescribeHostLive(t *testing.T) {
	t.Parallel()
	var m Meta
	kc := m.describeHost("/proc", "/", "")
	want, err := os.ReadFile("/proc/sys/kernel/hostname")
	if err != nil {
		t.Fatal(err)
	}
	// The release as uname(2) tells it, a peer of the /proc file tare reads.
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	if release := unix.ByteSliceToString(uts.Release[:]); m.Host != strings.TrimSpace(string(want)) || m.Kernel != release {
		t.Errorf("host %q kernel %q, want %q and uname's %q", m.Host, m.Kernel, strings.TrimSpace(string(want)), release)
	}
	if m.KernelConfig == KernelConfigAssumed {
		t.Logf("no kernel configuration on this machine: %q", m.Limitations)
		return
	}
	if _, err := os.Stat(m.KernelConfig); err != nil || kc.HZ == 0 {
		t.Errorf("configuration %q: %v, HZ %d", m.KernelConfig, err, kc.HZ)
	}
}
