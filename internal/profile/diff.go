package profile

import (
	"fmt"
	"io"
	"math"
	"sort"
	"text/tabwriter"

	"github.com/google/pprof/profile"

	"github.com/tare-dev/tare/internal/userfile"
)

// ReadFile reads a pprof profile (gzipped or not).
func ReadFile(path string) (*profile.Profile, error) {
	f, err := userfile.Open(path, "profile")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("reading the profile %s: %w: is it a pprof profile (tare profile --pprof)?", path, err)
	}
	return p, nil
}

// Delta is one group's or function's CPU in two profiles, in millicores (CPU over each profile's duration,
// so runs of different lengths compare).
type Delta struct {
	Name string  `json:"name"`
	A    float64 `json:"a_millicores"`
	B    float64 `json:"b_millicores"`
}

// Diff is how profile B differs from profile A: per group, and per function by own CPU.
type Diff struct {
	Groups    []Delta `json:"groups"`
	Functions []Delta `json:"functions"`
}

// Compare sums both profiles per group and per leaf function, keeping the n functions that changed most.
func Compare(a, b *profile.Profile, n int) Diff {
	ga, fa := rates(a)
	gb, fb := rates(b)
	d := Diff{Groups: deltas(ga, gb), Functions: deltas(fa, fb)}
	if len(d.Functions) > n {
		d.Functions = d.Functions[:n]
	}
	return d
}

// rates are a profile's millicores per group label and per leaf function.
func rates(p *profile.Profile) (groups, funcs map[string]float64) {
	groups, funcs = map[string]float64{}, map[string]float64{}
	idx := len(p.SampleType) - 1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			idx = i
		}
	}
	secs := float64(p.DurationNanos) / 1e9
	if idx < 0 || secs <= 0 {
		return groups, funcs
	}
	for _, s := range p.Sample {
		mc := float64(s.Value[idx]) / 1e6 / secs
		g := "[no group]"
		if v := s.Label[LabelGroup]; len(v) > 0 {
			g = v[0]
		}
		groups[g] += mc
		if len(s.Location) > 0 && len(s.Location[0].Line) > 0 && s.Location[0].Line[0].Function != nil {
			funcs[s.Location[0].Line[0].Function.Name] += mc
		}
	}
	return groups, funcs
}

func deltas(a, b map[string]float64) []Delta {
	var out []Delta
	for k, v := range a {
		out = append(out, Delta{Name: k, A: v, B: b[k]})
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out = append(out, Delta{Name: k, B: v})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		di, dj := math.Abs(out[i].B-out[i].A), math.Abs(out[j].B-out[j].A)
		if di != dj {
			return di > dj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// WriteDiff prints the groups, then the functions, with their CPU in A and B and the change.
func WriteDiff(w io.Writer, d Diff) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	for _, part := range []struct {
		head string
		rows []Delta
	}{{"group", d.Groups}, {"function (own CPU)", d.Functions}} {
		fmt.Fprintf(tw, "A mc\tB mc\tchange\t  %s\n", part.head)
		for _, r := range part.rows {
			fmt.Fprintf(tw, "%.1f\t%.1f\t%+.1f\t  %s\n", r.A, r.B, r.B-r.A, r.Name)
		}
		fmt.Fprint(tw, "\n")
	}
	return tw.Flush()
}
