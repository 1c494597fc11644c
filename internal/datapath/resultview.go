package datapath

import (
	"fmt"

	"github.com/tare-dev/tare/internal/htmlreport"
)

// View is the run as its HTML page shows it (htmlreport.Datapath): the result's groups, each lane with
// its figures and every comparison of it, its trials, a disk run's targets, and what the table says
// besides (paths not measured, the paths' MTU, failed trials and transactions, warnings) as notes.
func (r Result) View() htmlreport.DatapathRun {
	v := htmlreport.DatapathRun{DatapathHead: r.DatapathHead}
	v.Targets = r.Targets
	for _, g := range r.Groups {
		vg := htmlreport.DatapathGroup{Name: g.Name, Chart: g.Chart, Value: g.Value}
		for _, f := range g.Figures {
			vg.Figures = append(vg.Figures, htmlreport.DatapathFigure{Name: f.Name, Title: f.Title, Unit: f.Unit})
		}
		for _, l := range g.Lanes {
			vl := htmlreport.DatapathLane{Label: l.Label, Values: l.Values}
			for _, c := range r.Comparisons {
				if c.Lane == l.Label && c.Subject == g.Subject {
					vl.Ratios = append(vl.Ratios, c.view())
				}
			}
			vg.Lanes = append(vg.Lanes, vl)
		}
		v.Groups = append(v.Groups, vg)
	}
	for _, t := range r.Trials {
		v.Trials = append(v.Trials, htmlreport.DatapathTrial{Seq: t.Seq, Round: t.Round, Lane: t.Lane, Group: t.Group, Values: t.Values,
			NodeBusy: t.NodeBusy, Error: t.Error, Warnings: t.Warnings})
	}
	for _, s := range r.Skipped {
		v.Notes = append(v.Notes, "Not measured: "+s)
	}
	if r.PathMTU != "" {
		v.Notes = append(v.Notes, "Path MTU: "+r.PathMTU)
	}
	if r.Failed != "" {
		v.Notes = append(v.Notes, "Failed trials (left out): "+r.Failed)
	}
	if r.FailedTransactions != "" {
		v.Notes = append(v.Notes, "Failed transactions (left out of the trials' figures): "+r.FailedTransactions)
	}
	for _, w := range r.Warnings {
		v.Notes = append(v.Notes, fmt.Sprintf("Warning (%s): %s", w.Code, w.Message))
	}
	return v
}

// view is the comparison as the page shows it.
func (c Comparison) view() htmlreport.DatapathRatio {
	return htmlreport.DatapathRatio{Figure: c.Metric, Against: c.Against, Ratio: c.Ratio, Lo: c.Lo, Hi: c.Hi, Level: c.Level, P: c.P, MinP: c.MinP,
		Significant: c.Significant, N: c.N, NBase: c.NBase}
}
