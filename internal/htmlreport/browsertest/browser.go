package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Chart is one chart container as the browser laid it out.
type Chart struct {
	ID       string  `json:"id"`
	Kind     string  `json:"kind"`
	Rendered bool    `json:"rendered"` // ECharts' finished event fired
	Shapes   int     `json:"shapes"`   // path, rect, line and circle elements in its SVG
	Text     string  `json:"text"`     // the SVG's text (legends, labels)
	X        float64 `json:"x"`        // its box on the page, CSS pixels
	Y        float64 `json:"y"`
	W        float64 `json:"w"`
	H        float64 `json:"h"`
}

// Page is what the browser made of the file.
type Page struct {
	Title    string      `json:"title"`
	Thin     string      `json:"thin"`     // the thin-report banner's text, if any
	Charts   []Chart     `json:"charts"`   // every .chart container
	Drawn    string      `json:"drawn"`    // body's data-charts, set when report.js ran to its end
	Tables   int         `json:"tables"`   // table elements
	Headings []string    `json:"headings"` // h2 texts
	Errors   []string    `json:"-"`        // console errors, exceptions, error log entries
	Requests []string    `json:"-"`        // requests for anything but the file itself
	Shot     image.Image `json:"-"`        // full-page screenshot
}

// Chromium finds the browser, or fails the test saying how to install it (make deps does). -short
// skips.
func Chromium(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real browser")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("the HTML report is tested in a real browser: install Debian's chromium (apt-get install chromium; make deps does)")
	return ""
}

const inspect = `(() => {
  const charts = Array.from(document.querySelectorAll('.chart')).map((el) => {
    const r = el.getBoundingClientRect();
    const svg = el.querySelector('svg');
    return { id: el.id, kind: el.dataset.kind || '', rendered: el.dataset.rendered === 'true',
      shapes: svg ? svg.querySelectorAll('path, rect, line, circle, polyline, polygon').length : 0,
      text: svg ? svg.textContent : '', x: r.left + window.scrollX, y: r.top + window.scrollY, w: r.width, h: r.height };
  });
  const thin = document.getElementById('thin');
  return { title: document.title, thin: thin ? thin.innerText : '', charts, drawn: document.body.dataset.charts || '',
    tables: document.querySelectorAll('table').length, headings: Array.from(document.querySelectorAll('h2')).map((h) => h.innerText) };
})()`

// Open loads path in a fresh headless Chromium, waits until report.js has drawn every chart (or 30 s),
// and returns the page's state and a full-page screenshot.
func Open(t testing.TB, path string) Page {
	t.Helper()
	exe := Chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 1000), chromedp.Flag("disable-dev-shm-usage", true))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	var mu sync.Mutex
	var errs, requests []string
	fileURL := (&url.URL{Scheme: "file", Path: path}).String()
	listen := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg := e.ExceptionDetails.Text
			if x := e.ExceptionDetails.Exception; x != nil {
				msg += " " + x.Description
			}
			errs = append(errs, "exception: "+msg)
		case *runtime.EventConsoleAPICalled:
			if e.Type == "error" || e.Type == "assert" {
				var args []string
				for _, a := range e.Args {
					args = append(args, strings.TrimSpace(string(a.Value)+" "+a.Description))
				}
				errs = append(errs, "console."+string(e.Type)+": "+strings.Join(args, " "))
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				errs = append(errs, "log: "+e.Entry.Text+" "+e.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			if u := e.Request.URL; u != fileURL && !strings.HasPrefix(u, "data:") {
				requests = append(requests, u)
			}
		}
	}
	fail := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s %s in %s: %v", what, path, exe, err)
		}
	}
	fail("listening to", chromedp.Listen(bctx, listen))
	_, err := chromedp.Call(bctx, network.Enable, network.EnableParams{})
	fail("enabling the network domain for", err)
	_, err = chromedp.Call(bctx, runtime.Enable, cdp.Empty{})
	fail("enabling the runtime domain for", err)
	_, err = chromedp.Call(bctx, log.Enable, cdp.Empty{})
	fail("enabling the log domain for", err)
	fail("opening", chromedp.Do(bctx, chromedp.Navigate(fileURL)))
	// report.js sets body[data-charts] at its end; each chart marks itself rendered.
	const done = `document.body.dataset.charts !== undefined &&
		Array.from(document.querySelectorAll('.chart')).every((el) => el.dataset.rendered === 'true')`
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ok, err := chromedp.Run(bctx, chromedp.Evaluate[bool](done))
		fail("evaluating", err)
		if ok {
			break
		}
	}
	p, err := chromedp.Run(bctx, chromedp.Evaluate[Page](inspect))
	fail("inspecting", err)
	buf, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	fail("taking a screenshot of", err)
	img, err := png.Decode(bytes.NewReader(buf))
	fail("decoding the screenshot of", err)
	mu.Lock()
	defer mu.Unlock()
	p.Shot, p.Errors, p.Requests = img, errs, requests
	return p
}

// Ink measures a rectangle of the screenshot: the share of pixels that are not background (near white)
// and how many distinct colours they use (quantised to 4 bits a channel, grey left out), so a test can
// tell an empty frame from a drawn chart.
func Ink(img image.Image, c Chart) (share float64, hues int) {
	b := img.Bounds()
	r := image.Rect(int(c.X), int(c.Y), int(c.X+c.W), int(c.Y+c.H)).Intersect(b)
	if r.Empty() {
		return 0, 0
	}
	colours := map[uint32]bool{}
	inked := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			r8, g8, b8 := cr>>8, cg>>8, cb>>8
			if r8 > 235 && g8 > 235 && b8 > 235 {
				continue
			}
			inked++
			if spread(r8, g8, b8) > 40 {
				colours[(r8>>4)<<8|(g8>>4)<<4|b8>>4] = true
			}
		}
	}
	return float64(inked) / float64(r.Dx()*r.Dy()), len(colours)
}

func spread(r, g, b uint32) uint32 { return max(r, g, b) - min(r, g, b) }

// Check fails the test for console errors, exceptions, network requests, charts not drawn, or charts
// whose screenshot area is empty.
func Check(t testing.TB, p Page) {
	t.Helper()
	for _, e := range p.Errors {
		t.Errorf("browser: %s", e)
	}
	for _, u := range p.Requests {
		t.Errorf("the report fetched %s: it must open offline", u)
	}
	if p.Drawn != fmt.Sprint(len(p.Charts)) {
		t.Errorf("report.js drew %q charts of %d containers", p.Drawn, len(p.Charts))
	}
	for _, c := range p.Charts {
		share, hues := Ink(p.Shot, c)
		if !c.Rendered || c.Shapes < 5 || share < 0.01 || hues < 1 {
			t.Errorf("chart %s (%s): rendered %v, %d shapes, %.1f%% of its area inked in %d colours", c.ID, c.Kind, c.Rendered, c.Shapes, 100*share, hues)
		}
	}
}
