package output

import "math"

// Round rounds x to digits decimal places, half away from zero (negative figures too: a change of -0.25
// rounds to -0.3, not -0.2 as truncating x·10+0.5 gives).
func Round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// Percent is part as a percentage of whole: 0 when whole is not positive (a share of nothing is none).
// A relative change against a base is not a share: compare has its own, NaN without a base.
func Percent(part, whole float64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * part / whole
}
