package main

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseProgFdinfo(t *testing.T) {
	t.Parallel()
	// A bpftrace program's fdinfo on Linux 6.18, the run counters edited in (they read 0 with the kernel's
	// BPF statistics off).
	fixture, err := os.ReadFile("testdata/fdinfo-bpf-prog")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		in      string
		want    progStats
		wantErr bool
	}{
		{name: "bpftrace", in: string(fixture), want: progStats{id: 1990, runNs: 48213, runCnt: 97}},
		{name: "statistics never enabled", in: "prog_type:\t26\nprog_id:\t7\n", want: progStats{id: 7}},
		{name: "not a program", in: "pos:\t0\nflags:\t02\n", wantErr: true},
		{name: "malformed count", in: "prog_id:\t7\nrun_cnt:\tx\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseProgFdinfo([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(progStats{})); !tc.wantErr && diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPerfSamples(t *testing.T) {
	t.Parallel()
	samples, lost, err := perfSamples(nil, []byte("[ perf record: Woken up 1 times to write data ]\n[ perf record: Captured and wrote 0.103 MB /tmp/x.data (192 samples) ]\n"))
	if err != nil || samples != 192 || lost != 0 {
		t.Errorf("perfSamples = %d, %d, %v; want 192, 0, nil", samples, lost, err)
	}
	if _, _, err := perfSamples(nil, []byte("perf: nothing\n")); err == nil {
		t.Error("perfSamples without a count: no error")
	}
}
