package record

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/summary"
	"github.com/tare-dev/tare/internal/testenv"
)

// TestRecordingKeepsReference: a recording stores which reference its task time counts and where the
// kernel configuration came from, and a recording made before those fields existed is still read with the
// reference it had (its cgroup_source names cpuacct.usage).
func TestRecordingKeepsReference(t *testing.T) {
	t.Parallel()
	old, err := Read(context.Background(), "../cli/testdata/recording.db")
	if err != nil {
		t.Fatal(err)
	}
	if old.Meta.NodeReference != "" || old.Meta.BusyReference() != sample.RefCgroupV1 {
		t.Errorf("old recording: node_reference %q, read as %s", old.Meta.NodeReference, old.Meta.BusyReference())
	}
	if r := summary.Build(old.Meta, old.Samples, summary.Options{}).Reconcile; r.ReferenceKind != sample.RefCgroupV1 || !r.ReferenceExact {
		t.Errorf("old recording reconciles against %s", r.ReferenceKind)
	}

	testenv.NeedRoot(t, "the cgroup v2 reference reads every root-cgroup thread's schedstat")
	dir := ""
	for _, d := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if _, err := os.Stat(filepath.Join(d, "cgroup.controllers")); err == nil {
			dir = d
		}
	}
	if dir == "" {
		testenv.Unavailable(t, "no cgroup v2 hierarchy on this machine")
	}
	ctx := context.Background()
	s, err := sample.New(ctx, sample.Options{Interval: 50 * time.Millisecond, Detail: 50 * time.Millisecond, CgroupRoot: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ss []sample.Sample
	for range 4 {
		x, err := s.Sample()
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, x)
		time.Sleep(50 * time.Millisecond)
	}
	path := filepath.Join(t.TempDir(), "v2.db")
	writeRecording(t, path, s.Meta(), ss, nil)
	rec, err := Read(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	m := rec.Meta
	if m.NodeReference != sample.RefCgroupV2 || m.CgroupSource != dir || m.KernelConfig == "" {
		t.Errorf("meta read back: reference %q from %q, kernel config %q", m.NodeReference, m.CgroupSource, m.KernelConfig)
	}
	if r := summary.Build(m, rec.Samples, summary.Options{}).Reconcile; r.ReferenceKind != sample.RefCgroupV2 {
		t.Errorf("the recording reconciles against %s (%s)", r.ReferenceKind, r.ReferenceNote)
	}
}
