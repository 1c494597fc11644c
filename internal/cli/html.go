package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/tare-dev/tare/internal/experiment"
	"github.com/tare-dev/tare/internal/explain"
	"github.com/tare-dev/tare/internal/htmlreport"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/summary"
	"github.com/tare-dev/tare/internal/userfile"
)

const htmlUsage = "also write a self-contained HTML report (charts, tables, findings) to this file; it opens offline"

func htmlFlag(f *pflag.FlagSet, dst *string) { f.StringVar(dst, "html", "", htmlUsage) }

// checkHTML fails before any measuring when the report could not be written.
func checkHTML(path string) error { return checkOutput("--html", path) }

// checkOutput fails before any work when the file an output flag names could not be written: its
// directory is missing or is not writable, or it is a directory.
func checkOutput(flag, path string) error {
	if path == "" || path == "-" {
		return nil
	}
	if err := userfile.CheckOutput(path); err != nil {
		return usageError("%s %s: %w", flag, path, err)
	}
	return nil
}

func writeHTML(s streams, path string, p htmlreport.Page) error {
	if err := htmlreport.WriteFile(path, p); err != nil {
		return err
	}
	fmt.Fprintf(s.err, "HTML report: %s\n", path)
	return nil
}

// nodeHTML writes the report of a measurement that explain did not analyse (measure, report): the
// analysis runs here on the same samples, without the API view and profiles that need a live cluster.
func nodeHTML(s streams, path, what string, samples []sample.Sample, sum summary.Summary) error {
	if path == "" {
		return nil
	}
	rep := explain.New(samples, sum, explain.API{}, nil, nil)
	return writeHTML(s, path, htmlreport.Node(rep, what, Version))
}

func experimentHTML(s streams, path, what string, res experiment.Results) error {
	if path == "" {
		return nil
	}
	return writeHTML(s, path, htmlreport.Experiment(res, what, Version))
}
