package density

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestReadOverhead: a density result's overhead is the RuntimeClass's it printed; a run with one pod
// count, a file that is not a density result, and a missing file each get an error that says so.
func TestReadOverhead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, o any) string {
		p := filepath.Join(dir, name)
		var b bytes.Buffer
		switch v := o.(type) {
		case string:
			b.WriteString(v)
		case Output:
			if err := v.JSON(&b); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	m := Model{Busy: Fit{N: 6}, OverheadFrom: []string{"containerd-shim"}, Overhead: Cost{CPU: 0.42, Private: 2.9 * (1 << 20)}}
	good := write("good.json", Output{Report: Report{Node: "tare-node", Model: m}, RuntimeClass: RuntimeClass("x", "runc", m)})
	over, node, err := ReadOverhead(good)
	cpu, mem := over[corev1.ResourceCPU], over[corev1.ResourceMemory]
	if err != nil || node != "tare-node" || cpu.MilliValue() != 1 || mem.Value() != 3<<20 {
		t.Errorf("overhead %v on %q (%v), want cpu 1m and memory 3Mi on tare-node", over, node, err)
	}
	m.Overhead.CPU = math.NaN()
	short := write("short.json", Output{Report: Report{Node: "tare-node", Model: m}, RuntimeClass: RuntimeClass("x", "runc", m)})
	if _, _, err := ReadOverhead(short); !errors.Is(err, errNoOverhead) {
		t.Errorf("one pod count: %v", err)
	}
	for name, content := range map[string]string{"recording.json": `{"meta": {}}`, "text.json": "cpu=2m"} {
		if _, _, err := ReadOverhead(write(name, content)); err == nil || !strings.Contains(err.Error(), "not the output of tare density") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, err := ReadOverhead(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

// FuzzParseOverhead: no input panics the reader of density results.
func FuzzParseOverhead(f *testing.F) {
	f.Add([]byte(`{"node":"n","model":{"node_busy_millicores":{"n":2}},"runtime_class":{"handler":"runc","overhead":{"podFixed":{"cpu":"2m","memory":"-4Mi"}}}}`))
	f.Add([]byte(`{"node":"n"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = parseOverhead(b)
	})
}

// TestJSONNaN: a model that could not be fitted (one pod count: a run cut short) writes its figures as
// null, and they read back as NaN; fitted figures round-trip.
func TestJSONNaN(t *testing.T) {
	t.Parallel()
	m := Fitted([]Window{{Step: Step{Pods: 3}, Groups: map[string]Cost{"kubelet": {CPU: 4, RSS: 1 << 20}}}}, nil, 1)
	var b bytes.Buffer
	if err := (Output{Report: Report{Node: "n", Model: m}}).JSON(&b); err != nil {
		t.Fatalf("JSON of a one-count model: %v", err)
	}
	if !strings.Contains(b.String(), `"marginal": null`) {
		t.Errorf("NaN not written as null:\n%s", b.String())
	}
	var back Output
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(back.Model.Busy.Marginal) || back.Model.Busy.N != 1 || !math.IsNaN(back.Model.Overhead.CPU) {
		t.Errorf("read back %+v, overhead %+v", back.Model.Busy, back.Model.Overhead)
	}
	if k, ok := back.Model.Component("kubelet"); !ok || k.RSS.N != 1 || !math.IsNaN(k.RSS.Fixed) {
		t.Errorf("kubelet read back as %+v", k)
	}
}
