package density

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/stats"
	"github.com/tare-dev/tare/internal/warning"
)

// DefaultPercentile is the percentile of 1 s demand the spike reservations are read at (--percentile).
const DefaultPercentile = 99

// ciLevel is the level of the percentile's interval.
const ciLevel = 0.95

// WarnFewSeconds marks a percentile whose interval has an unbounded end: too few seconds were measured.
const WarnFewSeconds = "few-seconds"

// Spikes are kube-reserved and system-reserved CPU read at a percentile of 1 s demand at MaxPods pods,
// instead of at the mean: a reservation sized for the seconds the node's daemons are busiest.
//
// Every second of every window is moved to MaxPods pods by the slope of the line through the windows'
// means (the sum's per-pod cost, Theil–Sen; 0 when the line falls), so that a second measured at p pods
// counts as one at MaxPods with Slope × (MaxPods − p) more demand: the assumption is that the pod count
// shifts the demand's level and leaves its spread. The percentile of all those seconds, with its
// distribution-free 95% interval from order statistics (stats.QuantileCI), is the reservation; with a
// churn phase, the CPU its pod starts cost at its rate (PerStart × Rate, a mean) is added to the value and
// both ends. The interval is the percentile's over the seconds; it does not carry the slope's or the churn
// estimate's own uncertainty.
type Spikes struct {
	Percentile float64 `json:"percentile"`
	MaxPods    int     `json:"max_pods"`
	// ChurnRate is the pod starts per second whose cost is added (the churn phase's asked rate), 0 for none.
	ChurnRate float64 `json:"churn_rate_per_second,omitempty"`
	Kube      Spike   `json:"kube_reserved"`
	System    Spike   `json:"system_reserved"`
}

// Spike is one reservation's CPU at the percentile, in millicores.
type Spike struct {
	From []string `json:"from"`
	// Slope is the per-pod millicores each second was shifted by, Churn the millicores of pod starts added.
	Slope float64        `json:"slope_millicores_per_pod"`
	Churn float64        `json:"churn_millicores,omitempty"`
	CPU   stats.Quantile `json:"cpu_millicores"`
	// Mean is the mean of the shifted seconds (plus Churn): the mean-based figure, for comparison.
	Mean float64 `json:"mean_cpu_millicores"`
}

// SpikeReservations reads kube-reserved (the groups in kube, the model's OverheadFrom) and
// system-reserved (every window's System groups) at percentile pct (0 < pct < 100) of 1 s demand at
// maxPods pods. churn, when not nil, adds its groups' CPU per start at its rate. It is nil without a pod
// limit or windows with per-second series at two pod counts, and errs on a percentile out of range.
func SpikeReservations(ws []Window, kube []string, maxPods int, pct float64, churn *Churn) (*Spikes, []warning.Warning, error) {
	if !(pct > 0 && pct < 100) {
		return nil, nil, fmt.Errorf("percentile %v: want one above 0 and below 100", pct)
	}
	var withSeries []Window
	counts := map[int]bool{}
	system := map[string]bool{}
	for _, w := range ws {
		if len(w.CPUSeries) == 0 {
			continue
		}
		withSeries = append(withSeries, w)
		counts[w.Pods] = true
		for _, g := range w.System {
			system[g] = true
		}
	}
	if maxPods <= 0 || len(counts) < 2 || len(kube) == 0 {
		return nil, nil, nil
	}
	s := &Spikes{Percentile: pct, MaxPods: maxPods}
	if churn != nil {
		s.ChurnRate = churn.Rate
	}
	var warns []warning.Warning
	for _, r := range []struct {
		spike  *Spike
		from   []string
		figure string
	}{{&s.Kube, kube, "kube_reserved"}, {&s.System, slices.Sorted(maps.Keys(system)), "system_reserved"}} {
		sp, err := spikeOf(withSeries, r.from, maxPods, pct/100, churn)
		if err != nil {
			return nil, nil, err
		}
		*r.spike = sp
		if math.IsInf(sp.CPU.Hi, 1) || math.IsInf(sp.CPU.Lo, -1) {
			warns = append(warns, warning.Warning{Code: WarnFewSeconds, Figure: "spikes." + r.figure,
				Message: fmt.Sprintf("n=%d seconds: the p%s's 95%% interval needs %d to bound both ends; an unbounded end is shown as such", sp.CPU.N, output.Percentile(pct), sp.CPU.NeedN),
				Cause:   "too few windows or seconds: lengthen --window or add --trials"})
		}
	}
	return s, warns, nil
}

// spikeOf is one reservation: the windows' seconds of the groups in from, shifted to maxPods pods, at p.
func spikeOf(ws []Window, from []string, maxPods int, p float64, churn *Churn) (Spike, error) {
	sp := Spike{From: from}
	xs, means := make([]float64, len(ws)), make([]float64, len(ws))
	for i, w := range ws {
		xs[i] = float64(w.Pods)
		for _, g := range from {
			means[i] += w.Groups[g].CPU
		}
	}
	if b, ok := slope(xs, means); ok && b > 0 {
		sp.Slope = b
	}
	var seconds []float64
	for _, w := range ws {
		shift := sp.Slope * float64(maxPods-w.Pods)
		for _, v := range secondsOf(w, from) {
			seconds = append(seconds, v+shift)
		}
	}
	if churn != nil {
		for _, c := range churn.PerStart {
			if slices.Contains(from, c.Name) && !math.IsNaN(c.CPUms) {
				sp.Churn += c.CPUms * churn.Rate // CPU-ms per start × starts per second = millicores
			}
		}
		sp.Churn = max(0, sp.Churn)
	}
	q, err := stats.QuantileCI(seconds, p, ciLevel)
	if err != nil {
		return Spike{}, err
	}
	q.Value, q.Lo, q.Hi = q.Value+sp.Churn, q.Lo+sp.Churn, q.Hi+sp.Churn
	sp.CPU = q
	var sum float64
	for _, v := range seconds {
		sum += v
	}
	sp.Mean = math.NaN()
	if len(seconds) > 0 {
		sp.Mean = sum/float64(len(seconds)) + sp.Churn
	}
	return sp, nil
}

// secondsOf is the window's per-interval sum of the groups' CPU (a group missing counts as zero).
func secondsOf(w Window, groups []string) []float64 {
	var out []float64
	for _, g := range groups {
		out = addSeries(out, w.CPUSeries[g])
	}
	return out
}

// MarshalJSON writes a NaN mean as null.
func (sp Spike) MarshalJSON() ([]byte, error) {
	type plain Spike
	return json.Marshal(struct {
		plain
		Mean *float64 `json:"mean_cpu_millicores"`
	}{plain(sp), finite(sp.Mean)})
}

// UnmarshalJSON reads a null mean as NaN.
func (sp *Spike) UnmarshalJSON(b []byte) error {
	type plain Spike
	var v struct {
		plain
		Mean *float64 `json:"mean_cpu_millicores"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*sp = Spike(v.plain)
	sp.Mean = orNaN(v.Mean)
	return nil
}

// table writes both reservations at the percentile, with their intervals.
func (s *Spikes) table(w io.Writer) error {
	fmt.Fprintf(w, "Reserved CPU at the p%s of 1 s demand at %d pods (each second moved to %d pods by the per-pod slope", output.Percentile(s.Percentile), s.MaxPods, s.MaxPods)
	if s.ChurnRate > 0 {
		fmt.Fprintf(w, "; plus pod starts at %g/s", s.ChurnRate)
	}
	fmt.Fprintln(w, "):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tCPU\t95% CI\tMEAN\tPER POD\tSECONDS\tFROM")
	for _, r := range []struct {
		name string
		sp   Spike
	}{{"kube-reserved", s.Kube}, {"system-reserved", s.System}} {
		fmt.Fprintf(tw, "%s\t%s\t[%s, %s]\t%s\t%s\t%d\t%s\n", r.name, output.MillicoresEnd(r.sp.CPU.Value),
			output.MillicoresEnd(r.sp.CPU.Lo), output.MillicoresEnd(r.sp.CPU.Hi), output.MillicoresEnd(r.sp.Mean),
			output.MillicoresFixed(r.sp.Slope, 2), r.sp.CPU.N, fromList(r.sp.From))
	}
	return tw.Flush()
}

func fromList(gs []string) string {
	if len(gs) == 0 {
		return "(none)"
	}
	return strings.Join(gs, ", ")
}
