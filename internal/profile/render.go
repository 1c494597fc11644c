package profile

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/google/pprof/profile"

	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/pprof"
)

// Group is one group's share of the profile and its top functions.
type Group struct {
	Name       string       `json:"group"`
	Samples    int          `json:"samples"`
	Millicores float64      `json:"millicores"`   // CPU in the samples over the window
	NodePct    float64      `json:"node_percent"` // of all CPUs' time
	Top        []pprof.Func `json:"top"`
}

// Summary is what the table shows: the recording's figures and each group's top functions, groups by CPU.
type Summary struct {
	Event     string  `json:"event"`
	Frequency int     `json:"frequency_hz"`
	CPUs      int     `json:"cpus"`
	Seconds   float64 `json:"seconds"`
	Samples   int     `json:"samples"`
	Lost      uint64  `json:"lost_samples"`
	Groups    []Group `json:"groups"`
	// SelfMillicores is tare's own CPU, its process's from the start of the recording until the frames were
	// named, over that span (-1: not measured).
	SelfMillicores float64 `json:"self_millicores"`
	// MissingSymbols are binaries whose symbols could not be read, and why: their frames are [unknown].
	MissingSymbols map[string]string `json:"missing_symbols,omitempty"`
}

// Summarize sums a built profile per group, with each group's top n functions by own CPU.
func Summarize(raw *Raw, p *profile.Profile, n int) Summary {
	s := Summary{Event: raw.Event.Name, Frequency: raw.Frequency, CPUs: raw.CPUs, Seconds: raw.Elapsed.Seconds(),
		Samples: len(p.Sample), Lost: raw.Lost, SelfMillicores: -1}
	count := map[string]int{}
	for _, smp := range p.Sample {
		if v := smp.Label[LabelGroup]; len(v) > 0 {
			count[v[0]]++
		}
	}
	possible := float64(raw.CPUs) * s.Seconds * float64(raw.Frequency)
	for g, c := range count {
		sub := pprof.Summarize(g, GroupOf(p, g), n)
		row := Group{Name: g, Samples: c, Top: sub.Top}
		if s.Seconds > 0 {
			row.Millicores = output.Round(sub.TotalMs/s.Seconds, 1)
		}
		row.NodePct = output.Round(output.Percent(float64(c), possible), 1)
		s.Groups = append(s.Groups, row)
	}
	sort.Slice(s.Groups, func(i, j int) bool {
		if s.Groups[i].Samples != s.Groups[j].Samples {
			return s.Groups[i].Samples > s.Groups[j].Samples
		}
		return s.Groups[i].Name < s.Groups[j].Name
	})
	return s
}

// WriteTable prints the summary: a line for the recording, then per group its CPU and top functions.
func WriteTable(w io.Writer, s Summary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%d samples of %s at %d Hz on %d CPUs over %.1f s", s.Samples, s.Event, s.Frequency, s.CPUs, s.Seconds)
	if s.Lost > 0 {
		fmt.Fprintf(tw, "; %d lost (ring buffer full)", s.Lost)
	}
	fmt.Fprint(tw, "\n")
	if s.SelfMillicores >= 0 {
		fmt.Fprintf(tw, "tare's own cost: %.1f millicores (%.2f%% of a core)\n", s.SelfMillicores, s.SelfMillicores/10)
	}
	for _, g := range s.Groups {
		fmt.Fprintf(tw, "\n%s: %d samples, %.1f millicores, %.1f%% of the node\n", g.Name, g.Samples, g.Millicores, g.NodePct)
		fmt.Fprint(tw, "\town\town %\twith callees %\t  function\n")
		for _, f := range g.Top {
			fmt.Fprintf(tw, "\t%.1f ms\t%.1f%%\t%.1f%%\t  %s\n", f.FlatMs, f.FlatPct, f.CumPct, f.Name)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	bins := make([]string, 0, len(s.MissingSymbols))
	for bin := range s.MissingSymbols {
		bins = append(bins, bin)
	}
	sort.Strings(bins)
	for _, bin := range bins {
		fmt.Fprintf(tw, "\nno symbols for %s (%s): its frames are [unknown]\n", bin, s.MissingSymbols[bin])
	}
	return tw.Flush()
}
