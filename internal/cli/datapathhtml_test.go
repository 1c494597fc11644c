package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/htmlreport/browsertest"
)

// needTools skips a test whose run needs programs this machine lacks (tare lab install --datapath
// installs them).
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: tare lab install --datapath installs it", tool)
		}
	}
}

// chartOf is the first chart of kind drawn in the page, or fails the test.
func chartOf(t *testing.T, p browsertest.Page, kind string) browsertest.Chart {
	t.Helper()
	for _, c := range p.Charts {
		if c.Kind == kind {
			return c
		}
	}
	t.Fatalf("no %s chart", kind)
	return browsertest.Chart{}
}

// readPage is the report's HTML.
func readPage(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDatapathNetHTML: datapath net --html on the host path twice (an A/A run at two message sizes) writes
// a page that Chromium draws offline without errors: the ratios chart with host#2 at both sizes, the
// lines chart with both paths, and every ratio of the run's JSON in its table. A directory that does not
// exist is refused before anything runs; Ctrl-C after the first trial still writes the page, which says
// it was cut short. No cluster needed.
func TestDatapathNetHTML(t *testing.T) {
	requireRoot(t)
	browsertest.Chromium(t)
	needTools(t, "iperf3", "sockperf")
	dir := t.TempDir()
	if _, _, err := run(context.Background(), "datapath", "net", "--paths", "host", "--html", filepath.Join(dir, "no", "such.html")); err == nil ||
		!strings.Contains(err.Error(), "does not exist") {
		t.Errorf("--html into a missing directory: %v", err)
	}

	page := filepath.Join(dir, "net.html")
	out, errOut, err := run(context.Background(), "datapath", "net", "--paths", "host,host", "--modes", "tcp-stream", "--sizes", "1k,16k",
		"--trials", "2", "--duration", "1s", "-o", "json", "--html", page)
	if err != nil {
		t.Fatalf("datapath net: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "HTML report: "+page) {
		t.Errorf("stderr does not name the report:\n%s", errOut)
	}
	r := decodeDatapath(t, out)
	if len(r.Trials) != 8 || len(r.Ratios) != 4 {
		t.Fatalf("%d trials and %d ratios, want 8 and 4 (2 sizes × gbps and CPU)\n%s", len(r.Trials), len(r.Ratios), errOut)
	}
	p := htmlCheck(t, page, "ratios", "lines")
	if p.Thin != "" {
		t.Errorf("a finished run's page is thin: %s", p.Thin)
	}
	ratios, lines := chartOf(t, p, "ratios"), chartOf(t, p, "lines")
	for _, want := range []string{"host#2, 1k", "host#2, 16k"} {
		if !strings.Contains(ratios.Text, want) {
			t.Errorf("ratios chart lacks the row %q: %q", want, ratios.Text)
		}
	}
	if !strings.Contains(lines.Text, "host#2") || !strings.Contains(strings.ReplaceAll(lines.Text, "host#2", ""), "host") ||
		!strings.Contains(lines.Text, "16k") {
		t.Errorf("lines chart lacks a path or a size: %q", lines.Text)
	}
	html := readPage(t, page)
	for _, x := range r.Ratios {
		if cell := fmt.Sprintf("%.3f [%.3f, %.3f]", x.Ratio, x.Lo, x.Hi); !strings.Contains(html, cell) {
			t.Errorf("the page lacks %s %s %s's ratio %s", x.Path, x.Mode, x.Metric, cell)
		}
	}
	noToolsLeft(t)

	// Ctrl-C once the first trial is done: the page holds it and says the run was cut short.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cut := filepath.Join(dir, "cut.html")
	progress := &cancelOn{marker: "trial 1/", cancel: cancel}
	var stdout strings.Builder
	err = Execute(ctx, []string{"datapath", "net", "--paths", "host", "--modes", "tcp-stream", "--sizes", "1k", "--trials", "5", "--duration", "1s",
		"--html", cut}, strings.NewReader(""), &stdout, progress)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v, want context.Canceled\n%s", err, progress.buf.String())
	}
	if p := htmlCheck(t, cut); !strings.Contains(p.Thin, "cut short after 1 trial(s)") {
		t.Errorf("cut run's banner %q", p.Thin)
	}
	noToolsLeft(t)
}

// TestDatapathDiskHTML: datapath disk --html on the host target twice writes a page that Chromium draws
// offline without errors: a ratios chart per figure with host#2's row, no lines chart (one block size is
// no sweep), the target's file and every ratio of the run's JSON in its tables. No cluster needed.
func TestDatapathDiskHTML(t *testing.T) {
	requireRoot(t)
	browsertest.Chromium(t)
	needTools(t, "fio")
	dir := t.TempDir()
	page := filepath.Join(dir, "disk.html")
	out, errOut, err := run(context.Background(), "datapath", "disk", "--targets", "host,host", "--size", "16m", "--trials", "2", "--duration", "1s",
		"--dir", filepath.Join(dir, "disk"), "-o", "json", "--html", page)
	if err != nil {
		t.Fatalf("datapath disk: %v\n%s", err, errOut)
	}
	r := decodeDisk(t, out)
	if len(r.Trials) != 4 || len(r.Ratios) == 0 || len(r.Targets) != 2 {
		t.Fatalf("%d trials, %d ratios, %d targets\n%s", len(r.Trials), len(r.Ratios), len(r.Targets), errOut)
	}
	p := htmlCheck(t, page, "ratios")
	kinds := map[string]int{}
	for _, c := range p.Charts {
		kinds[c.Kind]++
		if c.Kind == "ratios" && !strings.Contains(c.Text, "host#2") {
			t.Errorf("ratios chart %s lacks host#2: %q", c.ID, c.Text)
		}
	}
	metrics := map[string]bool{}
	for _, x := range r.Ratios {
		metrics[x.Metric] = true
	}
	if kinds["ratios"] != len(metrics) || kinds["lines"] != 0 {
		t.Errorf("charts %v, want a ratios chart for each of the %d figures compared and no lines", kinds, len(metrics))
	}
	html := readPage(t, page)
	for _, x := range r.Ratios {
		if cell := fmt.Sprintf("%.3f [%.3f, %.3f]", x.Ratio, x.Lo, x.Hi); !strings.Contains(html, cell) {
			t.Errorf("the page lacks %s %s's ratio %s", x.Target, x.Metric, cell)
		}
	}
	if !strings.Contains(html, "<td>"+r.Targets[1].File+"</td>") {
		t.Errorf("the targets table lacks %s", r.Targets[1].File)
	}
	gone(t, filepath.Join(dir, "disk"))
}
