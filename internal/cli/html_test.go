package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/htmlreport/browsertest"
	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/sample"
)

// htmlCheck opens a report in headless Chromium, fails on console errors, network requests or charts not
// drawn (DOM and screenshot), and returns what the browser saw.
func htmlCheck(t *testing.T, path string, wantKinds ...string) browsertest.Page {
	t.Helper()
	p := browsertest.Open(t, path)
	browsertest.Check(t, p)
	kinds := map[string]int{}
	for _, c := range p.Charts {
		kinds[c.Kind]++
		share, hues := browsertest.Ink(p.Shot, c)
		t.Logf("%s: chart %s (%s) %d shapes, %.0f%% inked, %d colours", filepath.Base(path), c.ID, c.Kind, c.Shapes, 100*share, hues)
	}
	for _, k := range wantKinds {
		if kinds[k] == 0 {
			t.Errorf("%s: no %s chart (charts: %v)", path, k, kinds)
		}
	}
	return p
}

// TestHTMLReportFromRecording: a real recording of a known load (a 300m burner whose command line
// carries a token and markup) becomes a report that Chromium opens offline, drawing the node busy chart
// with the burner's group in it, without console errors; the token is redacted and the markup shown as
// text. measure --html writes the same kind of page.
func TestHTMLReportFromRecording(t *testing.T) {
	browsertest.Chromium(t)
	dir := t.TempDir()
	burner := startHelper(t, "burn", "300", "--token=sekret-html-token", "</script><b>markup</b>")
	burner.line(t, 10*time.Second)
	rec := filepath.Join(dir, "node.db")
	out := filepath.Join(dir, "measure.html")
	if _, errOut, err := run(context.Background(), "measure", "--duration", "6s", "--interval", "250ms", "--record", rec, "--html", out); err != nil {
		t.Fatalf("measure: %v\n%s", err, errOut)
	}
	burner.stop()
	htmlCheck(t, out, "busy")

	report := filepath.Join(dir, "report.html")
	if _, errOut, err := run(context.Background(), "report", rec, "--html", report); err != nil || !strings.Contains(errOut, report) {
		t.Fatalf("report --html: %v\n%s", err, errOut)
	}
	p := htmlCheck(t, report, "busy")
	if p.Thin != "" {
		t.Errorf("a 6 s recording is called thin: %s", p.Thin)
	}
	var busy browsertest.Chart
	for _, c := range p.Charts {
		if c.Kind == "busy" {
			busy = c
		}
	}
	if !strings.Contains(busy.Text, "node busy") || !strings.Contains(busy.Text, "other") {
		t.Errorf("busy chart's legend lacks node busy or the burner's group: %q", busy.Text)
	}
	if _, hues := browsertest.Ink(p.Shot, busy); hues < 2 {
		t.Errorf("busy chart drawn in %d colours, want the stacked groups in at least 2", hues)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	if strings.Contains(html, "sekret-html-token") {
		t.Errorf("the report leaks the burner's token")
	}
	if strings.Contains(html, "<b>markup</b>") || !strings.Contains(html, "&lt;b&gt;markup&lt;/b&gt;") {
		t.Errorf("the burner's command line is not escaped in the report")
	}
	for _, h := range []string{"Node busy over time", "Per component", "How this was measured"} {
		if !strings.Contains(strings.Join(p.Headings, "|"), h) {
			t.Errorf("no %q section: %v", h, p.Headings)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nosuchdir")); err == nil {
		t.Fatal("unexpected dir")
	}
	if _, _, err := run(context.Background(), "report", rec, "--html", filepath.Join(dir, "nosuchdir", "r.html")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("--html into a missing directory: %v", err)
	}
}

// TestHTMLReportThin: an empty recording and a one-sample recording still give a valid report, drawn
// without errors, that says why it is thin.
func TestHTMLReportThin(t *testing.T) {
	browsertest.Chromium(t)
	dir := t.TempDir()
	ctx := context.Background()
	smp, err := sample.New(ctx, sample.Options{Interval: time.Second, Detail: time.Second}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer smp.Close()
	for n, want := range map[int]string{0: "no samples", 1: "single sample"} {
		path := filepath.Join(dir, "thin.db")
		_ = os.Remove(path)
		w, err := record.Create(ctx, path, smp.Meta())
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			x, err := smp.Sample()
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Append(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Finish(ctx, smp.Meta()); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "thin.html")
		_, errOut, err := run(ctx, "report", path, "--html", out)
		if err != nil {
			t.Errorf("report of %d samples: %v\n%s", n, err, errOut)
			continue
		}
		p := htmlCheck(t, out)
		if !strings.Contains(p.Thin, want) || !strings.Contains(p.Title, "tare") {
			t.Errorf("%d samples: thin banner %q, want it to say %q", n, p.Thin, want)
		}
	}
}
