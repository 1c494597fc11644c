package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/export"
	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/userfile"
)

func newExport(s streams, g *globalOptions) *cobra.Command {
	var format, out string
	cmd := &cobra.Command{
		Use:   "export FILE --format csv|json|openmetrics",
		Short: "Write a recording's time series as CSV, JSON or OpenMetrics (pandas, Grafana, Prometheus)",
		Long: `Write the time series of a recording made with tare measure --record (or an experiment's
trial-NNN.db): node CPU by mode (/proc/stat) and node busy as tare counts it (the counter it is read
from in the reference label), the load average, each group's CPU per interval (short-lived children in
their parent's group) and each group's memory (RSS, PSS, private, in the memory label) at the detail
samples. Every series is labelled with the host; a group's series with group and group_kind (component,
pod, kernel, self, other), so its CPU and memory join on them.

  csv          long form, one row per point: time (RFC 3339), unix_ms, metric, the labels (group,
               group_kind, host, memory, mode, reference) and value; in pandas:
               pd.read_csv(f).pivot_table(index="time", columns=["metric", "group"], values="value")
  json         {"meta": the recording's meta, "series": [{metric, help, unit, labels, points: [{time,
               value}]}]}
  openmetrics  gauges with a timestamp on every sample, ending with # EOF; load into Prometheus with
               promtool tsdb create-blocks-from openmetrics FILE DATA_DIR, then point Grafana at it`,
		Example: `  tare export node.db --format csv > node.csv
  tare export node.db --format openmetrics --out node.om && promtool tsdb create-blocks-from openmetrics node.om data/`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExport(cmd.Context(), s, g, args[0], format, out)
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "csv, json or openmetrics (required)")
	cmd.Flags().StringVar(&out, "out", "", "write to this file instead of standard output")
	return cmd
}

func runExport(ctx context.Context, s streams, g *globalOptions, path, format, out string) error {
	if !slices.Contains(export.Formats, format) {
		return usageError("--format %q: want %s", format, strings.Join(export.Formats, ", "))
	}
	if err := checkOutput("--out", out); err != nil {
		return err
	}
	rec, err := record.Read(ctx, path)
	if err != nil {
		return err
	}
	series := export.Build(rec)
	if len(series) == 0 {
		fmt.Fprintf(s.err, "warning: %s has %d sample(s): no interval to export\n", path, len(rec.Samples))
	}
	if out == "" {
		return export.Write(s.out, format, rec.Meta, series)
	}
	if err := userfile.Write(out, func(w io.Writer) error { return export.Write(w, format, rec.Meta, series) }); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return nil
}
