package export

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/sample"
)

// Formats are the names --format accepts.
var Formats = []string{"csv", "json", "openmetrics"}

// Write writes the series in a format.
func Write(w io.Writer, format string, meta sample.Meta, series []Series) error {
	switch format {
	case "csv":
		return writeCSV(w, series)
	case "json":
		return output.JSON(w, struct {
			Meta   sample.Meta `json:"meta"`
			Series []Series    `json:"series"`
		}{meta, orEmpty(series)})
	case "openmetrics":
		return writeOpenMetrics(w, series)
	}
	return fmt.Errorf("unknown format %q: want %s", format, strings.Join(Formats, ", "))
}

func orEmpty(s []Series) []Series {
	if s == nil {
		return []Series{}
	}
	return s
}

// writeCSV is long ("tidy") form, one row per point: time, unix_ms, metric, then every label key that
// appears in any series (sorted), and value. pandas: read_csv(...).pivot_table(index="time", ...).
func writeCSV(w io.Writer, series []Series) error {
	keys := labelKeys(series)
	cw := csv.NewWriter(w)
	if err := cw.Write(append(append([]string{"time", "unix_ms", "metric"}, keys...), "value")); err != nil {
		return err
	}
	for _, s := range series {
		for _, p := range s.Points {
			row := []string{p.Time.UTC().Format(time.RFC3339Nano), strconv.FormatInt(p.Time.UnixMilli(), 10), s.Metric}
			for _, k := range keys {
				row = append(row, s.Labels[k])
			}
			row = append(row, strconv.FormatFloat(p.Value, 'g', -1, 64))
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func labelKeys(series []Series) []string {
	seen := map[string]bool{}
	for _, s := range series {
		for k := range s.Labels {
			seen[k] = true
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// writeOpenMetrics writes one gauge family per metric with every point timestamped (seconds), ending
// with # EOF, as promtool tsdb create-blocks-from openmetrics reads it.
func writeOpenMetrics(w io.Writer, series []Series) error {
	bw := bufio.NewWriter(w)
	done := map[string]bool{}
	for i, s := range series {
		if done[s.Metric] {
			continue
		}
		done[s.Metric] = true
		fmt.Fprintf(bw, "# TYPE %s gauge\n", s.Metric)
		if s.Unit != "" && strings.HasSuffix(s.Metric, "_"+s.Unit) {
			fmt.Fprintf(bw, "# UNIT %s %s\n", s.Metric, s.Unit)
		}
		fmt.Fprintf(bw, "# HELP %s %s\n", s.Metric, escapeHelp(s.Help))
		for _, t := range series[i:] {
			if t.Metric != s.Metric {
				continue
			}
			labels := labelText(t.Labels)
			for _, p := range t.Points {
				fmt.Fprintf(bw, "%s%s %s %s\n", t.Metric, labels, strconv.FormatFloat(p.Value, 'g', -1, 64), seconds(p.Time))
			}
		}
	}
	fmt.Fprint(bw, "# EOF\n")
	return bw.Flush()
}

func labelText(l map[string]string) string {
	if len(l) == 0 {
		return ""
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + `="` + escapeLabel(l[k]) + `"`
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

// seconds formats a time as Unix seconds with millisecond precision, as OpenMetrics timestamps are.
func seconds(t time.Time) string {
	ms := t.UnixMilli()
	return fmt.Sprintf("%d.%03d", ms/1000, ms%1000)
}
