package cli

import (
	"context"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/promread"
	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/summary"
)

// prometheusOptions are report's flags for reading tare agents' figures from Prometheus.
type prometheusOptions struct {
	url    string
	window time.Duration
	node   string
	end    string // RFC 3339; "" for now
}

func newReport(s streams, g *globalOptions) *cobra.Command {
	var match, html string
	var top int
	var p prometheusOptions
	cmd := &cobra.Command{
		Use:   "report [FILE | --prometheus URL]",
		Short: "Print the summary of a recording, or what tare agents measured from Prometheus",
		Long: `Print the same summary tare measure prints, from a recording. A recording cut short (kill -9, a full
disk) is summarised up to its last complete sample.

With --prometheus, read what tare agents (tare agent, scraped with deploy/prometheus/prometheus.yml) measured
over the last --window from Prometheus's HTTP API instead: per node the node busy (cores and % of CPUs), the
overhead, kubelet and runtime, tare's own cost and the busiest groups with their memory, then the cluster's
control plane and every pod's CPU. -o json has a nodes list.` + figuresHelp,
		Example: `  tare report node.db
  tare report node.db -o json --match etcd
  tare report --prometheus http://prometheus:9090 --window 10m
  tare report --prometheus http://localhost:9090 --node worker-2 -o json
  tare report --prometheus http://prometheus:9090 --window 1h --end 2026-11-23T03:00:00Z`,
		Args: func(cmd *cobra.Command, args []string) error {
			if p.url != "" {
				if len(args) > 0 {
					return usageError("give a recording FILE or --prometheus URL, not both")
				}
				return nil
			}
			if len(args) != 1 {
				return usageError("give a recording FILE (tare measure --record) or --prometheus URL")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if p.url != "" {
				return runReportPrometheus(cmd, s, g, p, match, html, top)
			}
			if cmd.Flags().Changed("window") || cmd.Flags().Changed("node") || cmd.Flags().Changed("end") {
				return usageError("--window, --end and --node read from Prometheus: give --prometheus URL")
			}
			return runReport(cmd.Context(), s, g, args[0], match, html, top)
		},
	}
	cmd.Flags().StringVar(&match, "match", "", "show only processes whose command line, name or group matches this regular expression")
	cmd.Flags().IntVar(&top, "top", 20, "processes and children rows shown in the table (with --prometheus: groups per node and pods)")
	htmlFlag(cmd.Flags(), &html)
	cmd.Flags().StringVar(&p.url, "prometheus", "", "read tare agents' figures from this Prometheus server (e.g. http://prometheus:9090) instead of a recording")
	cmd.Flags().DurationVar(&p.window, "window", 10*time.Minute, "with --prometheus: how far back CPU is averaged")
	cmd.Flags().StringVar(&p.node, "node", "", "with --prometheus: only this node")
	cmd.Flags().StringVar(&p.end, "end", "", "with --prometheus: end of the window, RFC 3339 (e.g. 2026-11-23T03:00:00Z; default now)")
	return cmd
}

// runReportPrometheus is report --prometheus: the figures tare agents exported, read back from Prometheus.
func runReportPrometheus(cmd *cobra.Command, s streams, g *globalOptions, p prometheusOptions, match, html string, top int) error {
	if err := checkTop(top); err != nil {
		return err
	}
	if match != "" || html != "" {
		return usageError("--match and --html work on recordings: with --prometheus use -o json")
	}
	if p.window < time.Second {
		return usageError("--window %v: want a second or more (e.g. 10m)", p.window)
	}
	var end time.Time
	if p.end != "" {
		var err error
		if end, err = time.Parse(time.RFC3339Nano, p.end); err != nil {
			return usageError("--end %q: want an RFC 3339 time such as 2026-11-23T03:00:00Z: %w", p.end, err)
		}
		if end.After(time.Now()) {
			return usageError("--end %s is in the future", p.end)
		}
	}
	rep, err := promread.Read(cmd.Context(), promread.Options{URL: p.url, Window: p.window, Node: p.node, Top: top, Time: end})
	if err != nil {
		return err
	}
	return render(s, g, rep)
}

func runReport(ctx context.Context, s streams, g *globalOptions, path, match, html string, top int) error {
	if err := checkTop(top); err != nil {
		return err
	}
	if err := checkHTML(html); err != nil {
		return err
	}
	var re *regexp.Regexp
	if match != "" {
		var err error
		if re, err = regexp.Compile(match); err != nil {
			return usageError("--match: %w", err)
		}
	}
	rec, err := record.Read(ctx, path)
	if err != nil {
		return err
	}
	sum := summary.Build(rec.Meta, rec.Samples, summary.Options{Match: re, Top: top, BlockIO: rec.BlockIO})
	if err := render(s, g, sum); err != nil {
		return err
	}
	return nodeHTML(s, html, "recording "+path, rec.Samples, sum)
}
