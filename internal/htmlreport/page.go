package htmlreport

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/tare-dev/tare/internal/explain"
	"github.com/tare-dev/tare/internal/userfile"
)

// Embedded assets: ECharts (dist/echarts.min.js of the npm package, Apache-2.0; its LICENSE and NOTICE
// are in assets/echarts-LICENSE.txt), tare's chart code, the style sheet and the page template.
var (
	//go:embed assets/echarts.min.js
	echartsJS string
	//go:embed assets/report.js
	reportJS string
	//go:embed assets/report.css
	reportCSS string
	//go:embed assets/page.html.tmpl
	pageTmpl string
)

// EChartsVersion is the embedded ECharts release (update: npm pack echarts@VERSION, copy
// package/dist/echarts.min.js and the licence files into assets/).
const EChartsVersion = "6.1.0"

var page = template.Must(template.New("page").Funcs(template.FuncMap{"sectionDoc": sectionDoc, "cardDoc": cardDoc}).Parse(pageTmpl))

// Page is one report: headline cards, then sections of charts, findings, tables and notes.
type Page struct {
	Title    string
	Subtitle string
	// Thin says why the report has little or nothing to show (no samples, one sample, a short window).
	Thin     string
	Cards    []Card
	Sections []Section
	Version  string
	Made     time.Time
}

// Card is one headline figure.
type Card struct {
	Label, Value, Detail string
}

// Section is one part of the page, listed in the page's contents.
type Section struct {
	ID, Title, Intro string
	Charts           []Chart
	Findings         []explain.Finding
	Tables           []Table
	Items            []string
	// Code is shown as it is, line breaks and indentation kept: a manifest to apply, say.
	Code string
}

// Chart is drawn by report.js: Kind picks the drawing (busy, flame, box, sweep, bars, stack, ratios,
// lines, scatterfit, hist), Data is its input.
type Chart struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Title  string `json:"title,omitempty"`
	Height int    `json:"-"`
	Data   any    `json:"data"`
}

// Table is a caption, a header and rows of text; Right marks numeric columns.
type Table struct {
	Caption string
	Head    []string
	Right   []bool
	Rows    [][]string
}

// RightAligned says whether column i holds numbers.
func (t Table) RightAligned(i int) bool { return i < len(t.Right) && t.Right[i] }

type view struct {
	Page
	ECharts, Script template.JS
	Data            template.JS
	Style           template.CSS
	EChartsVersion  string
}

// Write renders the page.
func Write(w io.Writer, p Page) error {
	var charts []Chart
	for _, s := range p.Sections {
		charts = append(charts, s.Charts...)
	}
	if charts == nil {
		charts = []Chart{}
	}
	// json.Marshal escapes <, > and & (\u003c…), so no string in the data can close the script element.
	data, err := json.Marshal(map[string]any{"charts": charts})
	if err != nil {
		return fmt.Errorf("encoding the chart data: %w", err)
	}
	return page.Execute(w, view{Page: p, ECharts: template.JS(echartsJS), Script: template.JS(reportJS), //nolint:gosec // our own embedded files
		Data: template.JS(data), Style: template.CSS(reportCSS), EChartsVersion: EChartsVersion}) //nolint:gosec // marshalled JSON, escaped
}

// WriteFile renders the page into path (userfile.Write: whole or not at all, its owner's alone).
func WriteFile(path string, p Page) error {
	if err := userfile.Write(path, func(w io.Writer) error { return Write(w, p) }); err != nil {
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	return nil
}
