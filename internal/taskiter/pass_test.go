package taskiter

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/kernel"
)

// TestPassFromEnv: the variable names a pass or is unset; anything else is an error naming the choices.
func TestPassFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want Pass
		err  string
	}{
		{"", PassAuto, ""},
		{"open-coded", PassOpenCoded, ""},
		{"bpf-iter", PassBPFIter, ""},
		{"proc", PassProc, ""},
		{"bpf_iter", PassAuto, `TARE_TASK_PASS="bpf_iter": want open-coded, bpf-iter or proc`},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(PassEnv, tc.env)
			got, err := PassFromEnv()
			if got != tc.want || fmt.Sprint(err) != map[bool]string{true: "<nil>", false: tc.err}[tc.err == ""] {
				t.Errorf("%s=%q: got %q, %v; want %q, %q", PassEnv, tc.env, got, err, tc.want, tc.err)
			}
		})
	}
}

// fakeIter stands for a loaded pass.
func fakeIter(p Pass) func() (*Iter, error) {
	return func() (*Iter, error) { return &Iter{pass: p}, nil }
}

func refused(p Pass) func() (*Iter, error) {
	return func() (*Iter, error) {
		return nil, loadError(p, fmt.Errorf("load program: %w", errors.New("invalid argument")))
	}
}

// TestChainChoice: the chain takes the first pass that loads and says why it skipped the others; without
// privileges or kernel BTF no pass is tried and the error says what is missing; a forced pass that cannot
// load is an error naming it, never another pass.
func TestChainChoice(t *testing.T) {
	t.Parallel()
	both := map[Pass]func() (*Iter, error){PassOpenCoded: fakeIter(PassOpenCoded), PassBPFIter: fakeIter(PassBPFIter)}
	old := map[Pass]func() (*Iter, error){PassOpenCoded: refused(PassOpenCoded), PassBPFIter: fakeIter(PassBPFIter)}
	none := map[Pass]func() (*Iter, error){PassOpenCoded: refused(PassOpenCoded), PassBPFIter: refused(PassBPFIter)}
	for _, tc := range []struct {
		name       string
		l          loader
		pass       Pass
		want       Pass     // "" for an error
		skipped    []string // substrings of Skipped, in order
		errParts   []string // substrings of the error
		notSupport bool
	}{
		{"6.7", loader{true, kernel.KernelBTF, both}, PassAuto, PassOpenCoded, nil, nil, false},
		{"6.6", loader{true, kernel.KernelBTF, old}, PassAuto, PassBPFIter, []string{"task pass open-coded: ", "needs Linux 6.7 or later"}, nil, false},
		{"5.4", loader{true, kernel.KernelBTF, none}, PassAuto, "", nil, []string{"task pass open-coded: ", "task pass bpf-iter: ", "needs Linux 5.8 or later"}, true},
		{"no BTF", loader{true, "/nonexistent/vmlinux", both}, PassAuto, "", nil, []string{"no kernel BTF", "CONFIG_DEBUG_INFO_BTF"}, true},
		{"no capability", loader{false, kernel.KernelBTF, both}, PassAuto, "", nil, []string{"needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN: run as root"}, true},
		{"forced bpf-iter", loader{true, kernel.KernelBTF, both}, PassBPFIter, PassBPFIter, nil, nil, false},
		{"forced open-coded on 6.6", loader{true, kernel.KernelBTF, old}, PassOpenCoded, "", nil, []string{"task pass open-coded, forced by TARE_TASK_PASS: ", "needs Linux 6.7 or later"}, true},
		{"forced bpf-iter without BTF", loader{true, "/nonexistent/vmlinux", both}, PassBPFIter, "", nil, []string{"task pass bpf-iter, forced by TARE_TASK_PASS: ", "no kernel BTF"}, true},
		{"forced proc", loader{true, kernel.KernelBTF, both}, PassProc, "", nil, []string{"TARE_TASK_PASS=proc: every process is read"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it, err := tc.l.open(tc.pass)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("got pass %s, want an error", it.Pass())
				}
				if errors.Is(err, ErrNotSupported) != tc.notSupport {
					t.Errorf("error %q: matches ErrNotSupported %v, want %v", err, !tc.notSupport, tc.notSupport)
				}
				for _, part := range tc.errParts {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error %q does not say %q", err, part)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if it.Pass() != tc.want {
				t.Errorf("chose %s, want %s", it.Pass(), tc.want)
			}
			got := strings.Join(it.Skipped(), "\n")
			if len(tc.skipped) == 0 && got != "" {
				t.Errorf("skipped %q, want nothing", got)
			}
			for _, part := range tc.skipped {
				if !strings.Contains(got, part) {
					t.Errorf("skipped %q does not say %q", got, part)
				}
			}
		})
	}
}
