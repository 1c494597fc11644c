package htmlreport_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tare-dev/tare/internal/density"
	"github.com/tare-dev/tare/internal/htmlreport"
)

// labFile is a real run on the lab (tare density --pods 0,4,8,16 --trials 2 --window 6s -o json), kept
// with the package whose output it is.
const labFile = "../density/testdata/density-lab.json"

// labFit and labRun are the parts of the run's JSON the test checks the charts against, decoded as plain
// JSON.
type labFit struct {
	Fixed    float64 `json:"fixed"`
	Marginal float64 `json:"marginal"`
}

type labRun struct {
	Counts []int `json:"pod_counts"`
	Steps  []struct {
		Trial  int                           `json:"trial"`
		Pods   int                           `json:"pods"`
		Busy   float64                       `json:"node_busy_millicores"`
		Groups map[string]map[string]float64 `json:"groups"`
	} `json:"steps"`
	Model struct {
		Busy       labFit `json:"node_busy_millicores"`
		Components []struct {
			Name      string `json:"name"`
			ChargedTo string `json:"charged_to"`
			CPU       labFit `json:"cpu_millicores"`
			Private   labFit `json:"private_bytes"`
		} `json:"components"`
		OverheadCPU     labFit   `json:"overhead_cpu_millicores"`
		OverheadPrivate labFit   `json:"overhead_private_bytes"`
		OverheadFrom    []string `json:"overhead_from"`
	} `json:"model"`
}

// chartJSON is a scatterfit chart's data as report.js receives it.
type chartJSON struct {
	Name   string `json:"name"`
	Unit   string `json:"unit"`
	Points []struct {
		Pods  int     `json:"pods"`
		Value float64 `json:"value"`
		Trial int     `json:"trial"`
	} `json:"points"`
	Line [][2]float64 `json:"line"`
	Band [][3]float64 `json:"band"`
}

// labPage is the page of the lab run, and the run's JSON.
func labPage(t *testing.T) (htmlreport.Page, labRun) {
	t.Helper()
	b, err := os.ReadFile(labFile)
	if err != nil {
		t.Fatal(err)
	}
	var o density.Output
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	var j labRun
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	return htmlreport.Density(o.View(), "tare density with the lab's run", "test"), j
}

// TestDensityChartsOfLabRun: on a real run's page, every scatterfit chart (node busy, each component's
// CPU and private memory, and the components outside the pod cgroups together) carries exactly the
// steps' values of the run's JSON, memory in MiB, with each step's pod count and trial; its line's ends
// are fixed + marginal × the first and the last pod count of the run; its band crosses the line. A
// component that used no CPU (or held no memory) at any step has no such chart.
func TestDensityChartsOfLabRun(t *testing.T) {
	t.Parallel()
	p, j := labPage(t)
	type series struct {
		values []float64
		fit    labFit
	}
	want := map[string]series{} // by name and unit
	busy := series{fit: j.Model.Busy}
	for _, s := range j.Steps {
		busy.values = append(busy.values, s.Busy)
	}
	want["node busy millicores"] = busy
	for _, c := range j.Model.Components {
		cpu, mem := series{fit: c.CPU}, series{fit: c.Private}
		anyCPU, anyMem := false, false
		for _, s := range j.Steps {
			x, m := s.Groups[c.Name]["cpu_millicores"], s.Groups[c.Name]["private_bytes"]/(1<<20)
			cpu.values, mem.values = append(cpu.values, x), append(mem.values, m)
			anyCPU, anyMem = anyCPU || x != 0, anyMem || m != 0
		}
		if anyCPU {
			want[c.Name+" millicores"] = cpu
		}
		if anyMem {
			want[c.Name+" MiB"] = mem
		}
	}
	from := strings.Join(j.Model.OverheadFrom, ", ")
	cpu, mem := series{fit: j.Model.OverheadCPU}, series{fit: j.Model.OverheadPrivate}
	for _, s := range j.Steps {
		var x, m float64
		for _, name := range j.Model.OverheadFrom {
			x += s.Groups[name]["cpu_millicores"]
			m += s.Groups[name]["private_bytes"]
		}
		cpu.values, mem.values = append(cpu.values, x), append(mem.values, m/(1<<20))
	}
	want[from+" millicores"], want[from+" MiB"] = cpu, mem

	near := cmpopts.EquateApprox(1e-12, 1e-12)
	first, last := float64(j.Counts[0]), float64(j.Counts[len(j.Counts)-1])
	seen := map[string]bool{}
	for _, c := range p.Sections {
		for _, ch := range c.Charts {
			if ch.Kind != "scatterfit" {
				continue
			}
			b, err := json.Marshal(ch.Data)
			if err != nil {
				t.Fatal(err)
			}
			var d chartJSON
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			key := d.Name + " " + d.Unit
			w, ok := want[key]
			if !ok || seen[key] {
				t.Errorf("chart %s of %s: not in the run, or twice", ch.ID, key)
				continue
			}
			seen[key] = true
			if len(d.Points) != len(j.Steps) {
				t.Errorf("%s: %d dots, %d steps", key, len(d.Points), len(j.Steps))
				continue
			}
			for i, s := range j.Steps {
				if pt := d.Points[i]; pt.Pods != s.Pods || pt.Trial != s.Trial || pt.Value != w.values[i] {
					t.Errorf("%s, step %d: dot %+v, the JSON's %d pods, trial %d, %v", key, i, pt, s.Pods, s.Trial, w.values[i])
				}
			}
			scale := 1.0
			if d.Unit == "MiB" {
				scale = 1.0 / (1 << 20)
			}
			line := [][2]float64{{first, (w.fit.Fixed + w.fit.Marginal*first) * scale}, {last, (w.fit.Fixed + w.fit.Marginal*last) * scale}}
			if diff := cmp.Diff(line, d.Line, near); diff != "" {
				t.Errorf("%s: line ends (-fixed + marginal × pods +chart):\n%s", key, diff)
			}
			if len(d.Band) != 3 || d.Band[0][0] != first || d.Band[2][0] != last || d.Band[1][1] != d.Band[1][2] {
				t.Errorf("%s: band %v, want it from %v to %v pods, crossing in the middle", key, d.Band, first, last)
			}
		}
	}
	for key := range want {
		if !seen[key] {
			t.Errorf("no chart of %s", key)
		}
	}
	if p.Thin != "" {
		t.Errorf("a whole run is thin: %s", p.Thin)
	}
}

// TestDensityPageOfLabRun: the page of a real run renders with a row per component of the run's model,
// in its order, and the RuntimeClass.
func TestDensityPageOfLabRun(t *testing.T) {
	t.Parallel()
	p, j := labPage(t)
	var b bytes.Buffer
	if err := htmlreport.Write(&b, p); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	at := 0
	for _, c := range j.Model.Components {
		row := "<td>" + c.Name + "</td><td>" + c.ChargedTo + "</td>"
		i := strings.Index(html[at:], row)
		if i < 0 {
			t.Errorf("no row %q after the previous component's", row)
			continue
		}
		at += i
	}
	if !strings.Contains(html, "kind: RuntimeClass") {
		t.Errorf("the page lacks the RuntimeClass")
	}
}
