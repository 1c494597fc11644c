package pprof

import (
	"math"
	"sort"

	"github.com/google/pprof/profile"

	"github.com/tare-dev/tare/internal/output"
)

// Func is one function's CPU in a profile: flat (in the function itself) and cumulative (with callees).
type Func struct {
	Name    string  `json:"name"`
	FlatMs  float64 `json:"flat_ms"`
	FlatPct float64 `json:"flat_percent"`
	CumMs   float64 `json:"cum_ms"`
	CumPct  float64 `json:"cum_percent"`
}

// Summary is a profile's headline figures and its top functions.
type Summary struct {
	Component string  `json:"component"`
	Seconds   float64 `json:"seconds"`
	TotalMs   float64 `json:"cpu_ms"`
	Mc        float64 `json:"millicores"` // CPU in the profile over its duration
	Samples   int     `json:"samples"`
	Top       []Func  `json:"top"`
	Flame     string  `json:"flame_graph,omitempty"` // path of the SVG, when written
	Frames    []Frame `json:"-"`                     // the flame graph laid out, for the HTML report
}

// cpuIndex is the sample value holding CPU time (type "cpu", nanoseconds), else the last value.
func cpuIndex(p *profile.Profile) int {
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			return i
		}
	}
	return len(p.SampleType) - 1
}

// sampleCPU is a sample's CPU time, or false for a value that cannot be one: zero or negative (a diff
// profile's), or one that takes the running total past 2^63 ns (292 years), which only a corrupt
// profile holds.
func sampleCPU(s *profile.Sample, idx int, total int64) (int64, bool) {
	v := s.Value[idx]
	return v, v > 0 && v <= math.MaxInt64-total
}

// frames returns a sample's function names from the root (caller) to the leaf, inlined frames included.
func frames(s *profile.Sample) []string {
	var out []string
	for i := len(s.Location) - 1; i >= 0; i-- {
		lines := s.Location[i].Line
		for j := len(lines) - 1; j >= 0; j-- {
			if f := lines[j].Function; f != nil {
				out = append(out, f.Name)
			}
		}
		if len(lines) == 0 {
			out = append(out, "?")
		}
	}
	return out
}

// Summarize is the top n functions by flat CPU, as `go tool pprof -top` prints them.
func Summarize(component string, p *profile.Profile, n int) Summary {
	s := Summary{Component: component, Seconds: float64(p.DurationNanos) / 1e9, Samples: len(p.Sample), Top: []Func{}}
	idx := cpuIndex(p)
	if idx < 0 {
		return s
	}
	flat, cum := map[string]int64{}, map[string]int64{}
	var total int64
	seen := map[string]bool{}
	for _, smp := range p.Sample {
		v, ok := sampleCPU(smp, idx, total)
		if !ok {
			continue
		}
		total += v
		fr := frames(smp)
		if len(fr) == 0 {
			continue
		}
		flat[fr[len(fr)-1]] += v
		clear(seen)
		for _, f := range fr {
			if !seen[f] {
				cum[f] += v
				seen[f] = true
			}
		}
	}
	s.TotalMs = float64(total) / 1e6
	if s.Seconds > 0 {
		s.Mc = output.Round(s.TotalMs/s.Seconds, 1)
	}
	for name, v := range cum {
		s.Top = append(s.Top, Func{Name: name, FlatMs: output.Round(float64(flat[name])/1e6, 1), CumMs: output.Round(float64(v)/1e6, 1),
			FlatPct: pct(flat[name], total), CumPct: pct(v, total)})
	}
	sort.Slice(s.Top, func(i, j int) bool {
		if s.Top[i].FlatMs != s.Top[j].FlatMs {
			return s.Top[i].FlatMs > s.Top[j].FlatMs
		}
		if s.Top[i].CumMs != s.Top[j].CumMs {
			return s.Top[i].CumMs > s.Top[j].CumMs
		}
		return s.Top[i].Name < s.Top[j].Name
	})
	if len(s.Top) > n {
		s.Top = s.Top[:n]
	}
	s.TotalMs = output.Round(s.TotalMs, 1)
	return s
}

func pct(v, total int64) float64 {
	return output.Round(output.Percent(float64(v), float64(total)), 1)
}
