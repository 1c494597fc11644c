package density

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// spikyWindows are windows at 0, 10 and 20 pods whose kubelet seconds are 5 + 2 per pod plus noise with
// a spike now and then, and whose kernel threads use 1 millicore a second plus noise.
func spikyWindows(trials, seconds int) []Window {
	rng := rand.New(rand.NewPCG(3, 4))
	var ws []Window
	for range trials {
		for _, pods := range []int{0, 10, 20} {
			w := Window{Step: Step{Pods: pods}, Groups: map[string]Cost{}, CPUSeries: map[string][]float64{}, System: []string{"kernel threads"}}
			for range seconds {
				v := 5 + 2*float64(pods) + rng.NormFloat64()
				if rng.IntN(20) == 0 {
					v += 50 * rng.Float64()
				}
				w.CPUSeries["kubelet"] = append(w.CPUSeries["kubelet"], v)
				w.CPUSeries["kernel threads"] = append(w.CPUSeries["kernel threads"], 1+rng.Float64())
			}
			w.Groups["kubelet"] = Cost{CPU: mean(w.CPUSeries["kubelet"])}
			w.Groups["kernel threads"] = Cost{CPU: mean(w.CPUSeries["kernel threads"])}
			ws = append(ws, w)
		}
	}
	return ws
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// TestSpikeReservations checks the reservation against the seconds shifted by hand with the slope
// computed here from the windows' means (the median of pairwise slopes), and the churn's addition.
func TestSpikeReservations(t *testing.T) {
	t.Parallel()
	ws := spikyWindows(10, 20) // 600 seconds: p99's interval bounded
	churn := &Churn{Rate: 0.5, PerStart: []StartCost{{Name: "kubelet", CPUms: 30}, {Name: "etcd", CPUms: 100}}}
	s, warns, err := SpikeReservations(ws, []string{"kubelet"}, 110, 99, churn)
	if err != nil || s == nil {
		t.Fatalf("SpikeReservations: %v %v", s, err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings %v with 600 seconds", warns)
	}
	var pairs []float64
	for i := range ws {
		for j := i + 1; j < len(ws); j++ {
			if ws[i].Pods != ws[j].Pods {
				pairs = append(pairs, (ws[j].Groups["kubelet"].CPU-ws[i].Groups["kubelet"].CPU)/float64(ws[j].Pods-ws[i].Pods))
			}
		}
	}
	slices.Sort(pairs)
	b := (pairs[len(pairs)/2-1] + pairs[len(pairs)/2]) / 2
	if len(pairs)%2 == 1 {
		b = pairs[len(pairs)/2]
	}
	if math.Abs(s.Kube.Slope-b) > 1e-9 {
		t.Errorf("slope %v, want %v", s.Kube.Slope, b)
	}
	var shifted []float64
	for _, w := range ws {
		for _, v := range w.CPUSeries["kubelet"] {
			shifted = append(shifted, v+b*float64(110-w.Pods))
		}
	}
	slices.Sort(shifted)
	wantChurn := 30 * 0.5
	want := shifted[int(math.Ceil(0.99*float64(len(shifted))))-1] + wantChurn
	if math.Abs(s.Kube.CPU.Value-want) > 1e-9 || s.Kube.Churn != wantChurn {
		t.Errorf("kube-reserved p99 %v (churn %v), want %v (churn %v)", s.Kube.CPU.Value, s.Kube.Churn, want, wantChurn)
	}
	if !(s.Kube.CPU.Lo <= s.Kube.CPU.Value && s.Kube.CPU.Value <= s.Kube.CPU.Hi) || math.IsInf(s.Kube.CPU.Hi, 1) {
		t.Errorf("interval [%v, %v] around %v", s.Kube.CPU.Lo, s.Kube.CPU.Hi, s.Kube.CPU.Value)
	}
	if s.Kube.CPU.Value <= s.Kube.Mean {
		t.Errorf("p99 %v not above the mean %v", s.Kube.CPU.Value, s.Kube.Mean)
	}
	if got := s.System.From; len(got) != 1 || got[0] != "kernel threads" || s.System.Churn != 0 || s.System.CPU.N != 600 {
		t.Errorf("system-reserved %+v", s.System)
	}

	// 240 seconds (12 windows of 20): the p99's upper end is unbounded, and said.
	few, warns, err := SpikeReservations(spikyWindows(4, 20), []string{"kubelet"}, 110, 99, nil)
	if err != nil || few == nil || !math.IsInf(few.Kube.CPU.Hi, 1) || len(warns) != 2 || warns[0].Code != WarnFewSeconds {
		t.Fatalf("240 seconds: %+v %v %v", few, warns, err)
	}
	var out bytes.Buffer
	if err := few.table(&out); err != nil || !strings.Contains(out.String(), "unbounded") {
		t.Errorf("table %q %v: want an unbounded end", out.String(), err)
	}
	b2, err := json.Marshal(few)
	if err != nil {
		t.Fatal(err)
	}
	var back Spikes
	if err := json.Unmarshal(b2, &back); err != nil || !math.IsInf(back.Kube.CPU.Hi, 1) || back.Kube.CPU.Value != few.Kube.CPU.Value {
		t.Errorf("JSON round trip %s: %+v %v", b2, back, err)
	}

	for _, pct := range []float64{0, 100, math.NaN()} {
		if _, _, err := SpikeReservations(ws, []string{"kubelet"}, 110, pct, nil); err == nil {
			t.Errorf("percentile %v accepted", pct)
		}
	}
	one := ws[:1]
	if s, _, err := SpikeReservations(one, []string{"kubelet"}, 110, 99, nil); s != nil || err != nil {
		t.Errorf("one pod count: %+v %v, want nil", s, err)
	}
	old := slices.Clone(ws)
	for i := range old {
		old[i].CPUSeries = nil // a result stored before the series were kept
	}
	if s, _, err := SpikeReservations(old, []string{"kubelet"}, 110, 99, nil); s != nil || err != nil {
		t.Errorf("no series: %+v %v, want nil", s, err)
	}
}
