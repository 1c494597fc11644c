package output

import (
	"fmt"
	"math"
	"strings"
)

// Millicores formats a CPU figure given in millicores as tare's tables do: one decimal below 10m ("4.2m"),
// none from there ("350m"), "0m" for zero and "-" for NaN (a figure that could not be measured).
func Millicores(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v == 0:
		return "0m"
	case v > -10 && v < 10:
		return fmt.Sprintf("%.1fm", v)
	}
	return fmt.Sprintf("%.0fm", v)
}

// MillicoresFixed formats millicores with a fixed number of decimals ("0.53m"), for slopes and intervals
// that are fractions of a millicore; "-" for NaN.
func MillicoresFixed(v float64, places int) string { return fixed(v, places, "m") }

// MillicoresEnd formats an end of an interval in millicores with one decimal: "unbounded" for an
// infinite end (too few observations to bound it), "-" for NaN.
func MillicoresEnd(v float64) string {
	if math.IsInf(v, 0) {
		return "unbounded"
	}
	return fixed(v, 1, "m")
}

// MiBFixed formats a byte count as MiB with a fixed number of decimals ("2.63 MiB"), for figures compared
// with one another in one unit; "-" for NaN.
func MiBFixed(bytes float64, places int) string { return fixed(bytes/(1<<20), places, " MiB") }

// Bytes formats a byte count in the largest 1024-based unit it reaches, without a space ("12.3MiB",
// "512B"), as the tables' memory and I/O columns do.
func Bytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f%s", b, units[i])
	}
	return fmt.Sprintf("%.1f%s", b, units[i])
}

// Limit prints a size bound exactly, in the largest 1024-based unit that divides it ("64 MiB", "1 KiB",
// "7 bytes"), as the messages of a refused file or answer name their bound.
func Limit(n int64) string {
	for _, u := range []struct {
		name  string
		bytes int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.bytes && n%u.bytes == 0 {
			return fmt.Sprintf("%d %s", n/u.bytes, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// fixed prints v with places decimals and its unit, "-" for NaN, and 0 without a sign when it rounds to zero.
func fixed(v float64, places int, unit string) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.Abs(v) < 0.5*math.Pow(10, -float64(places)):
		v = 0
	}
	return fmt.Sprintf("%.*f%s", places, v, unit)
}

// Figure writes a measured figure of any unit as the datapath tables do: no decimals from 100, two from 1,
// else three significant digits; "—" for NaN (no trials).
func Figure(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// LastLines is the last n lines of a command's output, for an error message that quotes what the command
// said last.
func LastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Percentile is a percentile as flags take it and headings name it ("99", "99.9"): up to three decimals,
// without trailing zeros.
func Percentile(p float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", p), "0"), ".")
}
