package cli

import (
	"context"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/summary"
)

func newReport(s streams, g *globalOptions) *cobra.Command {
	var match, html string
	var top int
	cmd := &cobra.Command{
		Use:   "report FILE",
		Short: "Print the summary of a recording made with tare measure --record",
		Long: `Print the same summary tare measure prints, from a recording. A recording cut short (kill -9, a full
disk) is summarised up to its last complete sample.`,
		Example: `  tare report node.db
  tare report node.db -o json --match etcd`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd.Context(), s, g, args[0], match, html, top)
		},
	}
	cmd.Flags().StringVar(&match, "match", "", "show only processes whose command line, name or group matches this regular expression")
	cmd.Flags().IntVar(&top, "top", 20, "processes and children rows shown in the table")
	htmlFlag(cmd.Flags(), &html)
	return cmd
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
	sum := summary.Build(rec.Meta, rec.Samples, summary.Options{Match: re, Top: top})
	if err := render(s, g, sum); err != nil {
		return err
	}
	return nodeHTML(s, html, "recording "+path, rec.Samples, sum)
}
