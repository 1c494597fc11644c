package sample

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/taskiter"
	"github.com/tare-dev/tare/internal/testenv"
)

// TestTaskPassForced: taskiter.PassEnv forces the sampler's task pass, loaded at once and named in its CPU
// source; proc forces none, and says so; a pass the sampler cannot use, or a name it does not know, is an
// error of New, never another pass.
func TestTaskPassForced(t *testing.T) {
	testenv.NeedRoot(t, "taskstats and the BPF task iterator need root")
	opts := Options{Interval: time.Second, Detail: time.Hour}
	for _, tc := range []struct {
		pass         string
		unprivileged bool
		source, err  string // substrings of the CPU source, or of New's error
		limitation   string
	}{
		{pass: "proc", source: "schedstat+taskstats", limitation: "no task pass (TARE_TASK_PASS=proc)"},
		{pass: "open-coded", source: "bpf task iterator (open-coded pass)"},
		{pass: "bpf-iter", source: "bpf task iterator (bpf-iter pass)"},
		{pass: "bpf-iter", unprivileged: true, err: "task pass bpf-iter, forced by TARE_TASK_PASS: the sampler cannot use a task pass here: unprivileged sources forced"},
		{pass: "ebpf", err: `TARE_TASK_PASS="ebpf": want open-coded, bpf-iter or proc`},
	} {
		t.Run(tc.pass, func(t *testing.T) {
			t.Setenv(taskiter.PassEnv, tc.pass)
			o := opts
			o.Unprivileged = tc.unprivileged
			s, err := New(context.Background(), o, nil)
			if tc.err != "" {
				if err == nil {
					s.Close()
					t.Fatalf("New succeeded, want an error saying %q", tc.err)
				}
				if !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %q does not say %q", err, tc.err)
				}
				return
			}
			if errors.Is(err, taskiter.ErrNotSupported) {
				testenv.Unavailable(t, "%v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			m := s.Meta()
			if !strings.Contains(m.CPUSource, tc.source) || (tc.pass == "proc" && strings.Contains(m.CPUSource, "bpf")) {
				t.Errorf("cpu source %q, want %q", m.CPUSource, tc.source)
			}
			if tc.limitation != "" && !strings.Contains(strings.Join(m.Limitations, "\n"), tc.limitation) {
				t.Errorf("limitations %q do not say %q", m.Limitations, tc.limitation)
			}
			if (s.act != nil && s.act.it != nil) != (tc.pass != "proc") {
				t.Errorf("pass %s: iterator loaded %v", tc.pass, s.act != nil && s.act.it != nil)
			}
		})
	}
}
