package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/compare"
	"github.com/tare-dev/tare/internal/record"
)

func newDiff(s streams, g *globalOptions) *cobra.Command {
	var block time.Duration
	var alpha float64
	var html string
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two recordings (before and after a change, cluster on and off) with the experiment's statistics",
		Long: `Compare recording B against recording A, both made with tare measure --record (or an experiment's
trial-NNN.db). Each recording is cut into blocks (--block, 10 s by default: consecutive seconds of CPU are
correlated, block means far less), each block is one observation, and for every metric (node busy,
control-plane CPU, each component's CPU and memory, etcd writes) tare prints both medians with their
intervals and the change with its interval and a Mann–Whitney U test, "~" where it is not significant,
as tare experiment does. Record at least 4 blocks on each side for a difference to be able to reach
significance at 0.05.` + figuresHelp,
		Example: `  sudo tare measure --duration 5m --record before.db
  # change something
  sudo tare measure --duration 5m --record after.db
  tare diff before.db after.db`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.validate(); err != nil {
				return err
			}
			if block <= 0 {
				return usageError("--block must be positive, got %s", block)
			}
			if alpha <= 0 || alpha >= 0.5 {
				return usageError("--alpha %g: want between 0 and 0.5", alpha)
			}
			if err := checkHTML(html); err != nil {
				return err
			}
			return runDiff(cmd.Context(), s, g, args[0], args[1], block, alpha, html)
		},
	}
	cmd.Flags().DurationVar(&block, "block", 10*time.Second, "length of the blocks each recording is cut into")
	cmd.Flags().Float64Var(&alpha, "alpha", 0.05, "significance level")
	htmlFlag(cmd.Flags(), &html)
	return cmd
}

func runDiff(ctx context.Context, s streams, g *globalOptions, pa, pb string, block time.Duration, alpha float64, html string) error {
	a, err := record.Read(ctx, pa)
	if err != nil {
		return err
	}
	b, err := record.Read(ctx, pb)
	if err != nil {
		return err
	}
	res, err := compare.Diff(a, b, filepath.Base(pa), filepath.Base(pb), block, alpha)
	if err != nil {
		return err
	}
	if err := render(s, g, res); err != nil {
		return err
	}
	return experimentHTML(s, html, fmt.Sprintf("tare diff %s %s (blocks of %s)", pa, pb, block), res)
}
