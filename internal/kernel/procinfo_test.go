package kernel

import "testing"

// TestParseSmapsRollupRange: figures beyond a 64-bit address space are malformed, not wrapped around.
func TestParseSmapsRollupRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		ok   bool
		want smapsRollup
	}{
		{"Rss: 8 kB\nPss: 4 kB\nPrivate_Clean: 1 kB\nPrivate_Dirty: 2 kB\n", true, smapsRollup{8 << 10, 4 << 10, 3 << 10}},
		{"Rss: 18014398509481983 kB\nPss: 1 kB\n", true, smapsRollup{rss: (1<<54 - 1) << 10, pss: 1 << 10}},
		{"Rss: 18014398509481984 kB\nPss: 1 kB\n", false, smapsRollup{}},
		{"Rss: 1 kB\nPss: 1 kB\nPrivate_Clean: 18014398509481983 kB\nPrivate_Dirty: 18014398509481983 kB\n", false, smapsRollup{}},
	} {
		got, err := parseSmapsRollup([]byte(tc.in))
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("parseSmapsRollup(%q) = %+v, %v; want %+v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
