package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// logCDF is P(B ≤ k), B ~ Binomial(n, p), summed from the pmf in log space with math.Lgamma: an
// independent computation of what gonum's regularized incomplete beta gives QuantileCI.
func logCDF(n, k int, p float64) float64 {
	if k < 0 {
		return 0
	}
	if k >= n {
		return 1
	}
	lgn, _ := math.Lgamma(float64(n + 1))
	var sum float64
	for i := 0; i <= k; i++ {
		a, _ := math.Lgamma(float64(i + 1))
		b, _ := math.Lgamma(float64(n - i + 1))
		sum += math.Exp(lgn - a - b + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
	}
	return sum
}

// TestQuantileCI checks the ranks against a brute-force search over every rank with binomial tails summed
// independently, the coverage, and the estimate against the sorted sample's ⌈n·p⌉-th value.
func TestQuantileCI(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		n int
		p float64
	}{{20, 0.5}, {50, 0.9}, {240, 0.99}, {366, 0.99}, {367, 0.99}, {400, 0.99}, {1000, 0.95}, {600, 0.99}, {3, 0.5}, {2000, 0.999}} {
		xs := make([]float64, tc.n)
		for i := range xs {
			xs[i] = rng.ExpFloat64() * 100
		}
		got, err := QuantileCI(xs, tc.p, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		s := slices.Clone(xs)
		slices.Sort(s)
		rank := int(math.Ceil(float64(tc.n)*tc.p - 1e-9))
		if want := s[rank-1]; got.Value != want {
			t.Errorf("n %d p %v: value %v, want x(⌈np⌉) = %v", tc.n, tc.p, got.Value, want)
		}
		wantL, wantU := 0, tc.n+1
		for l := 1; l <= tc.n; l++ {
			if logCDF(tc.n, l-1, tc.p) <= 0.025 {
				wantL = l
			}
		}
		for u := tc.n; u >= 1; u-- {
			if 1-logCDF(tc.n, u-1, tc.p) <= 0.025 {
				wantU = u
			}
		}
		if got.LoRank != wantL || got.HiRank != wantU {
			t.Errorf("n %d p %v: ranks [%d, %d], want [%d, %d]", tc.n, tc.p, got.LoRank, got.HiRank, wantL, wantU)
		}
		cover := logCDF(tc.n, wantU-1, tc.p) - logCDF(tc.n, wantL-1, tc.p)
		if math.Abs(got.Level-cover) > 1e-9 {
			t.Errorf("n %d p %v: coverage %v, want %v", tc.n, tc.p, got.Level, cover)
		}
		bounded := wantL >= 1 && wantU <= tc.n
		if bounded && (cover < 0.95 || got.Lo != s[wantL-1] || got.Hi != s[wantU-1]) {
			t.Errorf("n %d p %v: [%v, %v] coverage %v, want [%v, %v] at 95%% or more", tc.n, tc.p, got.Lo, got.Hi, cover, s[wantL-1], s[wantU-1])
		}
		if bounded != (tc.n >= got.NeedN) {
			t.Errorf("n %d p %v: bounded %v but NeedN %d", tc.n, tc.p, bounded, got.NeedN)
		}
		if wantU > tc.n && !math.IsInf(got.Hi, 1) {
			t.Errorf("n %d p %v: upper end %v, want +Inf (unbounded)", tc.n, tc.p, got.Hi)
		}
		if wantL < 1 && !math.IsInf(got.Lo, -1) {
			t.Errorf("n %d p %v: lower end %v, want -Inf (unbounded)", tc.n, tc.p, got.Lo)
		}
	}
	for _, bad := range [][2]float64{{0, 0.95}, {1, 0.95}, {0.99, 1}, {math.NaN(), 0.9}, {0.5, math.NaN()}} {
		if _, err := QuantileCI([]float64{1, 2}, bad[0], bad[1]); err == nil {
			t.Errorf("QuantileCI(p %v, level %v) accepted", bad[0], bad[1])
		}
	}
	if q, err := QuantileCI(nil, 0.99, 0.95); err != nil || !math.IsNaN(q.Value) {
		t.Errorf("no values: %+v %v", q, err)
	}
}

// TestQuantileN checks the n needed against the smallest n whose tails both reach the level, searched.
func TestQuantileN(t *testing.T) {
	t.Parallel()
	for _, p := range []float64{0.5, 0.9, 0.95, 0.99, 0.999} {
		want := 1
		for math.Pow(p, float64(want)) > 0.025 || math.Pow(1-p, float64(want)) > 0.025 {
			want++
		}
		if got := QuantileN(p, 0.95); got != want {
			t.Errorf("QuantileN(%v) = %d, want %d", p, got, want)
		}
	}
}

// TestQuantileJSON checks that an unbounded end is written as null, not refused.
func TestQuantileJSON(t *testing.T) {
	t.Parallel()
	q, err := QuantileCI([]float64{3, 1, 2}, 0.99, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"ci_high":null`) || !strings.Contains(string(b), `"value":3`) {
		t.Errorf("JSON %s: want ci_high null and value 3", b)
	}
	var back Quantile
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(back.Hi, 1) || back.Value != 3 || back.N != 3 || back.Lo != q.Lo {
		t.Errorf("read back %+v, want %+v", back, q)
	}
}
