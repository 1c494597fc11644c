package output

import (
	"bytes"
	"math"
	"testing"
)

func TestMillicores(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0m"}, {4.24, "4.2m"}, {-3.25, "-3.2m"}, {9.96, "10.0m"}, {10, "10m"}, {349.6, "350m"}, {-12.4, "-12m"}, {math.NaN(), "-"},
	}
	for _, tt := range tests {
		if got := Millicores(tt.v); got != tt.want {
			t.Errorf("Millicores(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestFixed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		got, want string
	}{
		{MillicoresFixed(0.531, 2), "0.53m"},
		{MillicoresFixed(-0.004, 2), "0.00m"}, // rounds to zero: no "-0.00"
		{MillicoresFixed(math.NaN(), 2), "-"},
		{MiBFixed(2.63*(1<<20), 2), "2.63 MiB"},
		{MiBFixed(1536*1024, 1), "1.5 MiB"},
		{MiBFixed(-1000, 1), "0.0 MiB"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		b    float64
		want string
	}{
		{0, "0B"}, {1023, "1023B"}, {1024, "1.0KiB"}, {12.3 * (1 << 20), "12.3MiB"}, {3 << 30, "3.0GiB"}, {5 << 40, "5.0TiB"}, {5 << 50, "5120.0TiB"},
	}
	for _, tt := range tests {
		if got := Bytes(tt.b); got != tt.want {
			t.Errorf("Bytes(%v) = %q, want %q", tt.b, got, tt.want)
		}
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := JSON(&b, map[string]any{"a": 1, "b": []int{2}}); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"a\": 1,\n  \"b\": [\n    2\n  ]\n}\n"; b.String() != want {
		t.Errorf("JSON = %q, want %q", b.String(), want)
	}
}

func TestFigure(t *testing.T) {
	for v, want := range map[float64]string{math.NaN(): "—", 18331.6: "18332", -250: "-250", 17.251: "17.25", 1: "1.00", 0.52345: "0.523", 0.00012345: "0.000123", 0: "0"} {
		if got := Figure(v); got != want {
			t.Errorf("Figure(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestLastLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 5, "a\nb\nc"},
		{"", 3, ""},
		{"one\n\n", 1, "one"},
	} {
		if got := LastLines([]byte(tc.in), tc.n); got != tc.want {
			t.Errorf("LastLines(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	for p, want := range map[float64]string{99: "99", 99.9: "99.9", 99.99: "99.99", 50.5: "50.5", 99.9999: "100"} {
		if got := Percentile(p); got != want {
			t.Errorf("Percentile(%v) = %q, want %q", p, got, want)
		}
	}
}
