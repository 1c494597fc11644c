package kernel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseKernelConfig(t *testing.T) {
	t.Parallel()
	seed, err := os.ReadFile("testdata/seeds/config")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, in string
		want     BuildConfig
	}{
		{"this machine", string(seed), BuildConfig{HZ: 250, TicklessIdle: true}},
		{"irq time accounting", "CONFIG_HZ_1000=y\nCONFIG_HZ=1000\nCONFIG_IRQ_TIME_ACCOUNTING=y\n", BuildConfig{HZ: 1000, IRQTimeAccounting: true}},
		{"first line", "CONFIG_IRQ_TIME_ACCOUNTING=y", BuildConfig{IRQTimeAccounting: true}},
		{"not set", "# CONFIG_IRQ_TIME_ACCOUNTING is not set\nCONFIG_HAVE_IRQ_TIME_ACCOUNTING=y\n", BuildConfig{}},
		{"no HZ", "CONFIG_HZ_250=y\n", BuildConfig{}},
		{"tickless idle", "CONFIG_NO_HZ_COMMON=y\nCONFIG_NO_HZ_IDLE=y\n", BuildConfig{TicklessIdle: true}},
		{"full dynticks", "CONFIG_NO_HZ_FULL=y\n", BuildConfig{TicklessIdle: true}},
		{"periodic tick", "CONFIG_HZ_PERIODIC=y\n# CONFIG_NO_HZ_IDLE is not set\nCONFIG_NO_HZ_COMMON=y\n", BuildConfig{}},
		{"bad HZ", "CONFIG_HZ=fast\n", BuildConfig{}},
	} {
		if diff := cmp.Diff(tc.want, parseKernelConfig([]byte(tc.in))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestReadKernelConfigFixtures: the build configuration comes from /proc/config.gz, else
// /boot/config-RELEASE under the host root, else the error wraps os.ErrNotExist and names both.
func TestReadKernelConfigFixtures(t *testing.T) {
	t.Parallel()
	release := "6.18.44-fc-v595"
	for _, tc := range []struct {
		root, source string
		hz           int
	}{
		{"testdata/v2host", "testdata/v2host/proc/config.gz", 250},
		{"testdata/hosts/bootconfig", "testdata/hosts/bootconfig/boot/config-" + release, 250},
	} {
		kc, err := ReadKernelConfig(filepath.Join(tc.root, "proc"), tc.root, release)
		if err != nil || kc.Source != tc.source || kc.HZ != tc.hz || kc.IRQTimeAccounting {
			t.Errorf("%s: %+v (%v), want %d Hz from %s", tc.root, kc, err, tc.hz, tc.source)
		}
	}
	_, err := ReadKernelConfig("testdata/hosts/noconfig/proc", "testdata/hosts/noconfig", release)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "testdata/hosts/noconfig/proc/config.gz") {
		t.Errorf("no configuration: %v, want an error wrapping os.ErrNotExist that names both files", err)
	}
}

// TestHostIdentityFixtures: the host name and release come from the measured root's /proc/sys/kernel (a
// UTS namespace's "worker-1", not this machine's name).
func TestHostIdentityFixtures(t *testing.T) {
	t.Parallel()
	for root, want := range map[string]string{"testdata/v2host/proc": "vm", "testdata/hosts/bootconfig/proc": "worker-1", t.TempDir(): ""} {
		host, release := HostIdentity(root)
		if host != want || (want != "") != (release == "6.18.44-fc-v595") {
			t.Errorf("%s: host %q release %q, want host %q", root, host, release, want)
		}
	}
}
