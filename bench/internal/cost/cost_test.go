package cost

import (
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		in      string
		want    time.Duration
		wantErr bool
	}{
		// /proc/PID/stat of a bpftrace process (Linux 6.18), a space in the command name added.
		{name: "stat", in: "4242 (bpf trace) S 1 4242 4242 0 -1 4194560 23107 0 0 0 17 8 0 0 20 0 1 0 3366522 1042550784 25812 18446744073709551615 1 1 0 0 0 0 0 4096 1536 0 0 0 17 1 0 0 0 0 0\n",
			want: 250 * time.Millisecond},
		{name: "no command name", in: "4242 bpftrace S 1", wantErr: true},
		{name: "too few fields", in: "4242 (bpftrace) S 1 2 3", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseStatCPU(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseStatCPU = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
