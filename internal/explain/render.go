package explain

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/summary"
)

// JSON writes the report as indented JSON.
func (r Report) JSON(w io.Writer) error {
	return output.JSON(w, r)
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}

// table runs rows through a tabwriter indented by two spaces.
func (p *printer) table(header string, rows []string) {
	if len(rows) == 0 {
		return
	}
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	if p.err == nil {
		_, p.err = fmt.Fprintln(tw, "  "+header)
	}
	for _, r := range rows {
		if p.err == nil {
			_, p.err = fmt.Fprintln(tw, "  "+r)
		}
	}
	if p.err == nil {
		p.err = tw.Flush()
	}
}

// Table writes the report for a terminal: findings first, then the evidence sections.
func (r Report) Table(w io.Writer) error {
	p := &printer{w: w}
	p.f("tare explain: %.1f s (%d intervals of %.2f s), node busy %.1fm (%s), tare %.1fm\n",
		r.Window.Seconds, r.Window.Intervals, r.Activity.IntervalSeconds, r.NodeBusy, r.Busy, r.Self)
	if r.Summary != nil {
		for _, w := range r.Summary.Reconcile.Warnings {
			p.f("warning (%s): %s\n", w.Figure, w)
		}
	}
	if c := r.ClusterRead; c != nil && c.Note != "" {
		p.f("note: %s\n", c.Note)
	}
	p.f("\n")
	r.tableFindings(p)
	r.tableActivity(p)
	r.tableAPI(p)
	r.tableProfiles(p)
	r.tableUSE(p)
	if len(r.Notes)+len(r.Warnings) > 0 {
		p.f("NOTES\n")
		for _, n := range r.Notes {
			p.f("  - %s\n", n)
		}
		for _, w := range r.Warnings {
			p.f("  - warning: %s\n", w.Message)
		}
	}
	return p.err
}

func (r Report) tableFindings(p *printer) {
	p.f("FINDINGS (ranked by estimated CPU)\n")
	if len(r.Findings) == 0 {
		p.f("  none: no rule matched (see the sections below for the raw evidence)\n\n")
		return
	}
	for i, f := range r.Findings {
		cost := "cost not estimated"
		if f.Mc > 0 {
			cost = fmt.Sprintf("≈%.1fm, %.1f%% of busy", f.Mc, f.SharePct)
		}
		p.f("%2d. [%s] %s (%s)\n", i+1, f.Confidence, f.Title, cost)
		for _, e := range f.Evidence {
			p.f("      evidence: %s\n", e)
		}
		p.f("      change:   %s\n      verify:   %s\n", f.Change, f.Verify)
	}
	p.f("\n")
}

func (r Report) tableActivity(p *printer) {
	a := r.Activity
	p.f("SPIKES (node busy from %s; baseline median %.1fm, MAD %.1fm; threshold %.1fm)\n", a.Source, a.Baseline.Median, a.Baseline.MAD, a.ThresholdMc)
	if len(a.Spikes) == 0 {
		p.f("  none\n")
	} else {
		if a.SpikePeriod > 0 {
			p.f("  %d spikes, one every %.1f s\n", len(a.Spikes), a.SpikePeriod)
		}
		var rows []string
		for i, s := range a.Spikes {
			if i == 15 {
				rows = append(rows, fmt.Sprintf("… %d more (JSON has all)", len(a.Spikes)-15))
				break
			}
			var gs []string
			for _, g := range s.Groups {
				gs = append(gs, fmt.Sprintf("%s +%.0fms", g.Group, g.ExcessMs))
			}
			rows = append(rows, fmt.Sprintf("%s\t%.1f\t%.0f\t%.0f\t%s\t%s", s.At.Format("15:04:05.0"), s.Seconds, s.PeakMc, s.ExcessMs,
				strings.Join(gs, ", "), summary.Clip(strings.Join(s.Started, "; "), 60)))
		}
		p.table("AT\tSECONDS\tPEAK m\tEXCESS ms\tGROUPS ABOVE THEIR MEDIAN\tSTARTED", rows)
	}
	var rows []string
	if np := a.NodePeriod; np != nil {
		rows = append(rows, fmt.Sprintf("node\t%.1f\t%.2f\t%.1f\t100", np.PeriodSeconds, np.Autocorr, np.MeanMc))
	}
	for _, g := range a.Periodic {
		rows = append(rows, fmt.Sprintf("%s\t%.1f\t%.2f\t%.1f\t%.1f", g.Group, g.PeriodSeconds, g.Autocorr, g.MeanMc, g.SharePct))
	}
	if len(rows) > 0 {
		p.f("PERIODIC (autocorrelation of each series)\n")
		p.table("SERIES\tPERIOD s\tR\tMEAN m\tSHARE %", rows)
	}
	if len(a.Pollers) > 0 {
		p.f("POLLERS (short-lived commands started on a timer)\n")
		rows = rows[:0]
		for _, pl := range a.Pollers {
			rows = append(rows, fmt.Sprintf("%.2f\t%d\t%.1f\t%.1f\t%.1f\t%d %s\t%s", pl.PeriodSeconds, pl.Runs, pl.CPUPerRunMs, pl.CPUMc, pl.SharePct,
				pl.ParentPID, summary.Clip(pl.ParentCmdline, 30), summary.Clip(pl.Cmdline, 60)))
		}
		p.table("EVERY s\tRUNS\tms/RUN\tm\tSHARE %\tPARENT\tCOMMAND", rows)
	}
	if st := a.Sawtooth; st != nil {
		p.f("SAWTOOTH: every %.1f s node busy swings %.0fm → %.0fm; %.0f%% of the time in the gaps, %.0f%% of burst capacity unused\n",
			st.PeriodSeconds, st.HighMc, st.LowMc, st.IdlePct, st.LostPct)
	}
	p.f("\n")
}

func (r Report) tableAPI(p *printer) {
	api := r.API
	switch {
	case api.Audit != nil:
		a := api.Audit
		p.f("API CLIENTS (audit log %s: %d requests in %.1f min, %.0f/min", a.Source, a.Requests, a.Minutes, a.PerMinute)
		if a.BadLines > 0 {
			p.f("; %d bad lines skipped", a.BadLines)
		}
		p.f(")\n")
		var rows []string
		for i, c := range a.Clients {
			if i == 12 {
				break
			}
			rows = append(rows, fmt.Sprintf("%s\t%d\t%.1f\t%.1f\t%d\t%s", c.Name, c.Requests, c.PerMinute, c.SharePct, c.Errors, summary.Clip(strings.Join(c.Users, ","), 50)))
		}
		p.table("CLIENT\tREQUESTS\t/MIN\tSHARE %\tERRORS\tUSERS", rows)
		rows = rows[:0]
		for i, x := range a.Rows {
			if i == 15 {
				break
			}
			rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t%.1f", x.Client, x.Verb, x.Resource, x.Namespace, x.PerMinute))
		}
		p.table("CLIENT\tVERB\tRESOURCE\tNAMESPACE\t/MIN", rows)
		if len(a.LeaderElection) > 0 {
			p.f("  leader election:\n")
			for _, l := range a.LeaderElection {
				p.f("    %s renews %s/%s %.1f times a minute (%d renewals, %d reads)\n", l.Client, l.Namespace, l.Name, l.PerMinute, l.Renewals, l.Reads)
			}
		}
		for _, h := range a.Hot {
			p.f("  hot: %s %s %s %.1f/min\n", h.Client, h.Verb, h.Resource, h.PerMinute)
		}
		for _, b := range a.Bad {
			p.f("  skipped line %d: %s\n", b.Line, b.Reason)
		}
	case api.Metrics != nil:
		m := api.Metrics
		p.f("API REQUESTS (kube-apiserver metrics: %.0f requests in %.1f min, %.0f/min)\n", m.Requests, m.Minutes, m.PerMinute)
		var rows []string
		for i, x := range m.Rows {
			if i == 15 {
				break
			}
			rows = append(rows, fmt.Sprintf("%s\t%s\t%.0f\t%.1f", x.Verb, x.Resource, x.Requests, x.PerMinute))
		}
		p.table("VERB\tRESOURCE\tREQUESTS\t/MIN", rows)
		p.f("  missing: %s\n", m.Missing)
	default:
		p.f("API CLIENTS: none\n")
	}
	if api.Missing != "" {
		p.f("  %s\n", api.Missing)
	}
	p.f("\n")
}

func (r Report) tableProfiles(p *printer) {
	if len(r.Profiles) == 0 {
		return
	}
	p.f("PROFILES (CPU, top functions by flat time)\n")
	for _, s := range r.Profiles {
		p.f("  %s: %.0f ms CPU in %.0f s (%.1fm), %d samples", s.Component, s.TotalMs, s.Seconds, s.Mc, s.Samples)
		if s.Flame != "" {
			p.f("; flame graph %s", s.Flame)
		}
		p.f("\n")
		var rows []string
		for i, f := range s.Top {
			if i == 8 {
				break
			}
			rows = append(rows, fmt.Sprintf("  %.1f\t%.1f%%\t%.1f\t%.1f%%\t%s", f.FlatMs, f.FlatPct, f.CumMs, f.CumPct, summary.Clip(f.Name, 90)))
		}
		p.table("  FLAT ms\tFLAT\tCUM ms\tCUM\tFUNCTION", rows)
	}
	p.f("\n")
}

func (r Report) tableUSE(p *printer) {
	u := r.USE
	p.f("USE (utilisation, saturation, errors)\n")
	var rows []string
	for _, x := range u.Rows {
		rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t%s", x.Resource, x.Utilisation, x.Saturation, x.Errors, strings.ToUpper(x.Verdict)))
	}
	p.table("RESOURCE\tUTILISATION\tSATURATION\tERRORS\tVERDICT", rows)
	rows = rows[:0]
	for i, x := range u.Writers {
		if i == 8 {
			break
		}
		rows = append(rows, fmt.Sprintf("%s\t%s/s\t%s/s", x.Group, output.Bytes(x.WriteBps), output.Bytes(x.ReadBps)))
	}
	p.table("GROUP\tWRITES\tREADS", rows)
	if u.Note != "" {
		p.f("  %s\n", u.Note)
	}
	p.f("\n")
}
