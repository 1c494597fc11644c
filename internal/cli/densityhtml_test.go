package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/density"
	"github.com/tare-dev/tare/internal/htmlreport/browsertest"
)

// densityLab is a real run of tare density on the lab (--pods 0,4,8,16 --trials 2 --window 6s -o json).
func densityLab(t *testing.T) density.Output {
	t.Helper()
	b, err := os.ReadFile("../density/testdata/density-lab.json")
	if err != nil {
		t.Fatal(err)
	}
	var o density.Output
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestDensityHTML: the page tare density --html writes, made from a real run's JSON by the function the
// verb calls, opens in Chromium offline without errors, every scatterfit chart drawn and named for its
// component, in the page's order (node busy, each component's CPU, each one's private memory, those
// outside the pod cgroups together); a run cut short after three steps (its model fitted to them, as
// Run does) says so, and a page without steps shows its banner. --html into a directory that does not
// exist is refused before tare looks for a cluster. Needs no lab.
func TestDensityHTML(t *testing.T) {
	browsertest.Chromium(t)
	dir := t.TempDir()
	if _, _, err := run(context.Background(), "density", "--html", filepath.Join(dir, "no", "such.html")); err == nil ||
		!strings.Contains(err.Error(), "does not exist") {
		t.Errorf("--html into a missing directory: %v", err)
	}

	o := densityLab(t)
	var errOut bytes.Buffer
	page := filepath.Join(dir, "density.html")
	if err := densityHTML(streams{err: &errOut}, page, "tare density with the lab's run", o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "HTML report: "+page) {
		t.Errorf("stderr does not name the report: %q", errOut.String())
	}
	p := htmlCheck(t, page, "scatterfit")
	if p.Thin != "" {
		t.Errorf("a whole run's page is thin: %s", p.Thin)
	}
	// The charts' names in the page's order, from the run's JSON.
	names := []string{"node busy"}
	var memory []string
	for _, c := range o.Model.Components {
		cpu, priv := false, false
		for _, w := range o.Steps {
			cpu = cpu || w.Groups[c.Name].CPU != 0
			priv = priv || w.Groups[c.Name].Private != 0
		}
		if cpu {
			names = append(names, c.Name)
		}
		if priv {
			memory = append(memory, c.Name)
		}
	}
	from := strings.Join(o.Model.OverheadFrom, ", ")
	names = append(append(names, memory...), from, from)
	if len(p.Charts) != len(names) {
		t.Fatalf("%d charts, want %d: %v", len(p.Charts), len(names), names)
	}
	for i, c := range p.Charts {
		// The title is the name, then the line in words (a figure, or "no line"): containerd's chart is not containerd-shim's.
		named := regexp.MustCompile(regexp.QuoteMeta(names[i]) + `(-?[0-9]|no line)`)
		if c.Kind != "scatterfit" || !named.MatchString(c.Text) || !strings.Contains(c.Text, "trial 2") || !strings.Contains(c.Text, "fitted line") {
			t.Errorf("chart %s (%s) does not name %s, its trials and its line: %q", c.ID, c.Kind, names[i], c.Text)
		}
	}
	for _, h := range []string{"Per component", "CPU against pods", "Private memory against pods", "Per pod outside the pod cgroups", "kube-reserved", "Steps"} {
		if !strings.Contains(strings.Join(p.Headings, "|"), h) {
			t.Errorf("no %q section: %v", h, p.Headings)
		}
	}

	// Cut short after three steps: what Run returns then, its model fitted to those steps.
	cut := o
	charged := map[string]string{}
	for _, c := range o.Model.Components {
		charged[c.Name] = c.ChargedTo
	}
	cut.Steps = o.Steps[:3]
	cut.Model = density.Fitted(cut.Steps, charged, o.Seed)
	cut.KubeReserved = nil
	cut.RuntimeClass = density.RuntimeClass("tare-measured", "runc", cut.Model)
	short := filepath.Join(dir, "cut.html")
	if err := densityHTML(streams{err: &errOut}, short, "tare density with the lab's run", cut); err != nil {
		t.Fatal(err)
	}
	if p := htmlCheck(t, short, "scatterfit"); !strings.Contains(p.Thin, "stopped after 3 of its 8 steps") {
		t.Errorf("cut run's banner %q", p.Thin)
	}

	none := o
	none.Steps, none.Model, none.KubeReserved, none.RuntimeClass = nil, density.Model{}, nil, nil
	empty := filepath.Join(dir, "empty.html")
	if err := densityHTML(streams{err: &errOut}, empty, "tare density with the lab's run", none); err != nil {
		t.Fatal(err)
	}
	if p := htmlCheck(t, empty); !strings.Contains(p.Thin, "No step was measured") || len(p.Charts) != 0 {
		t.Errorf("page without steps: banner %q, %d charts", p.Thin, len(p.Charts))
	}
}
