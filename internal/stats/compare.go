package stats

import (
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Interval is a mean with its confidence interval (Student's t; the half-width is NaN below n = 2).
type Interval struct {
	N     int     `json:"n"`
	Mean  float64 `json:"mean"`
	Half  float64 `json:"half_width"`
	Level float64 `json:"level"`
}

// MeanCI returns the mean of xs and the half-width of its two-sided confidence interval at level
// (e.g. 0.95), from the t distribution with n-1 degrees of freedom.
func MeanCI(xs []float64, level float64) Interval {
	iv := Interval{N: len(xs), Level: level, Half: math.NaN()}
	if len(xs) == 0 {
		iv.Mean = math.NaN()
		return iv
	}
	iv.Mean = stat.Mean(xs, nil)
	if len(xs) < 2 {
		return iv
	}
	se := stat.StdDev(xs, nil) / math.Sqrt(float64(len(xs)))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(xs) - 1)}.Quantile(1 - (1-level)/2)
	iv.Half = t * se
	return iv
}

// Difference is the outcome of comparing two samples with Welch's t-test.
type Difference struct {
	Delta       float64 `json:"delta"`       // mean(b) - mean(a)
	DeltaPct    float64 `json:"delta_pct"`   // relative to mean(a)
	P           float64 `json:"p"`           // two-sided
	DF          float64 `json:"df"`          // Welch–Satterthwaite degrees of freedom
	Significant bool    `json:"significant"` // P < Alpha
	Alpha       float64 `json:"alpha"`
}

// Welch compares the means of a and b without assuming equal variances. It needs n >= 2 in each.
func Welch(a, b []float64, alpha float64) Difference {
	d := Difference{Alpha: alpha, P: math.NaN(), DF: math.NaN()}
	if len(a) < 2 || len(b) < 2 {
		return d
	}
	ma, mb := stat.Mean(a, nil), stat.Mean(b, nil)
	va, vb := stat.Variance(a, nil)/float64(len(a)), stat.Variance(b, nil)/float64(len(b))
	d.Delta = mb - ma
	if ma != 0 {
		d.DeltaPct = 100 * d.Delta / ma
	}
	se := math.Sqrt(va + vb)
	if se == 0 {
		if d.Delta == 0 {
			d.P = 1
		} else {
			d.P = 0
		}
		d.Significant = d.P < alpha
		return d
	}
	d.DF = (va + vb) * (va + vb) / (va*va/float64(len(a)-1) + vb*vb/float64(len(b)-1))
	t := d.Delta / se
	d.P = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: d.DF}.CDF(-math.Abs(t))
	d.Significant = d.P < alpha
	return d
}
