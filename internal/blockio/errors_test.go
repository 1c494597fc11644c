package blockio

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/kernel"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	btf := filepath.Join(t.TempDir(), "vmlinux")
	for _, tc := range []struct {
		name       string
		privileged bool
		btfPath    string
		want       string // in the message; "" for no error
	}{
		{"unprivileged", false, kernel.KernelBTF, "needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN: run as root"},
		{"no BTF", true, btf, "needs a kernel built with CONFIG_DEBUG_INFO_BTF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := check(tc.privileged, tc.btfPath)
			if !errors.Is(err, ErrNotSupported) {
				t.Fatalf("check: %v, want an error matching ErrNotSupported", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("check: %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestLoadError checks what the user reads when the kernel refuses the programs, for the errors the loader
// returns: EPERM without privileges, ErrNotSupported without BTF or the tracepoint, a verifier's refusal.
func TestLoadError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		err   error
		wants []string
	}{
		{"EPERM", fmt.Errorf("load program: %w", unix.EPERM), []string{"run as root", "operation not permitted"}},
		{"EACCES", fmt.Errorf("attach: %w", unix.EACCES), []string{"run as root"}},
		{"not supported", fmt.Errorf("attach tp_btf: %w", ebpf.ErrNotSupported), []string{"Linux 6.5 or later", "CONFIG_DEBUG_INFO_BTF"}},
		{"verifier", &ebpf.VerifierError{}, []string{"verifier refused"}},
		{"other", errors.New("no space left"), []string{"no space left"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := loadError("loading the block I/O programs", tc.err)
			if !errors.Is(err, ErrNotSupported) {
				t.Fatalf("%v does not match ErrNotSupported", err)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("%v does not wrap %v", err, tc.err)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}
