package export

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/record"
)

// readFixture reads the CLI goldens' recording (a real machine's, see internal/cli/testdata/README.md)
// from a copy, since reading a recording leaves -shm and -wal files next to it.
func readFixture(t *testing.T) record.Recording {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "cli", "testdata", "recording.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "recording.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	rec, err := record.Read(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestLabelsMeanOneThing: every label name has one meaning on every metric (the values it takes on one
// metric are of the same kind as on any other), so PromQL joins on it hold; a group's memory joins its CPU
// on host, group and group_kind.
func TestLabelsMeanOneThing(t *testing.T) {
	t.Parallel()
	series := Build(readFixture(t))
	allowed := map[string][]string{
		labelMode:      {"user", "nice", "system", "irq", "softirq", "steal", "iowait", "idle"},
		labelReference: {"cgroup-v1-cpuacct", "cgroup-v2-tasks", "proc-stat"},
		labelGroupKind: {"component", "pod", "kernel", "self", "other"},
		labelMemory:    {"rss", "pss", "private"},
	}
	known := []string{labelHost, labelGroup, labelMode, labelReference, labelGroupKind, labelMemory}
	cpu := map[string]bool{}
	for _, s := range series {
		for k, v := range s.Labels {
			if !slices.Contains(known, k) {
				t.Errorf("%s has label %s=%q, not one of %v", s.Metric, k, v, known)
			}
			if want, ok := allowed[k]; ok && !slices.Contains(want, v) {
				t.Errorf("%s: %s=%q, want one of %v", s.Metric, k, v, want)
			}
		}
		if s.Metric == "tare_group_cpu_millicores" {
			cpu[joinKey(s)] = true
		}
	}
	memories := 0
	for _, s := range series {
		if s.Metric != "tare_group_memory_bytes" {
			continue
		}
		memories++
		// tare's own CPU is its own figure (tare_millicores in the summary), not a group series.
		if !cpu[joinKey(s)] && s.Labels[labelGroupKind] != "self" {
			t.Errorf("memory series %v has no CPU series to join on host, group and group_kind", s.Labels)
		}
	}
	if memories == 0 || len(cpu) == 0 {
		t.Fatalf("the fixture gave %d memory and %d CPU series of groups", memories, len(cpu))
	}
}

func joinKey(s Series) string {
	return s.Labels[labelHost] + "\x00" + s.Labels[labelGroup] + "\x00" + s.Labels[labelGroupKind]
}

// TestOpenMetricsLabels: node busy's reference is in its own label, the group kind and the memory kind in
// theirs; no sample line has a label named kind.
func TestOpenMetricsLabels(t *testing.T) {
	t.Parallel()
	rec := readFixture(t)
	var b bytes.Buffer
	if err := Write(&b, "openmetrics", rec.Meta, Build(rec)); err != nil {
		t.Fatal(err)
	}
	want := []struct{ metric, label string }{
		{"tare_node_cpu_millicores", labelMode},
		{"tare_node_busy_millicores", labelReference},
		{"tare_group_cpu_millicores", labelGroupKind},
		{"tare_group_memory_bytes", labelMemory},
		{"tare_group_memory_bytes", labelGroupKind},
	}
	seen := map[string]int{}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		if strings.Contains(line, `,kind="`) || strings.Contains(line, `{kind="`) {
			t.Errorf("a sample still has a kind label: %s", line)
		}
		for _, w := range want {
			if strings.HasPrefix(line, w.metric+"{") {
				seen[w.metric]++
				if !strings.Contains(line, w.label+`="`) {
					t.Errorf("%s sample lacks its %s label: %s", w.metric, w.label, line)
				}
			}
		}
	}
	for _, w := range want {
		if seen[w.metric] == 0 {
			t.Errorf("no %s sample in the export", w.metric)
		}
	}
}
