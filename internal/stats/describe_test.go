package stats

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDescribe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []float64
		want Summary
	}{
		{"empty", nil, Summary{}},
		{"one", []float64{7}, Summary{N: 1, Mean: 7, P95: 7, Max: 7}},
		{"twenty", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, Summary{N: 20, Mean: 10.5, P95: 19, Max: 20}},
		{"unsorted input untouched", []float64{5, 1, 3}, Summary{N: 3, Mean: 3, P95: 5, Max: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, Describe(tt.in)); diff != "" {
				t.Errorf("Describe(%v) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}
