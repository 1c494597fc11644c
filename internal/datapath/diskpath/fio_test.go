package diskpath

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The fixtures are fio 3.33's JSON reports captured on this machine (ext4 on virtio, libaio), and one of a
// job that could not create its file.
func TestFioParse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file   string
		writes bool
		want   FioOutcome
		err    bool
	}{
		{file: "fio-randread-4k-direct.json", want: FioOutcome{Seconds: 1.001, IOs: 17440, IOPS: 17422.577423, MBps: 71.362877, P50us: 34.048, P99us: 99.84}},
		{file: "fio-randwrite-64k-qd32.json", writes: true},
		{file: "fio-read-1m-buffered.json"},
		{file: "fio-open-failed.json", err: true},
		{file: "fio-randread-4k-direct.json", writes: true, err: true}, // a read job wrote nothing
	} {
		b, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseFio(b, c.writes)
		if c.err {
			if !errors.Is(err, ErrFioOutput) {
				t.Errorf("%s: %+v, %v: want ErrFioOutput", c.file, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		// Every figure is fio's: the rate is its I/Os over its time, the bandwidth the block size times that.
		if rate := float64(got.IOs) / got.Seconds; math.Abs(rate-got.IOPS) > 0.01*got.IOPS {
			t.Errorf("%s: %d I/Os in %.3f s but %.0f IOPS", c.file, got.IOs, got.Seconds, got.IOPS)
		}
		if got.P99us < got.P50us || got.MBps <= 0 {
			t.Errorf("%s: %+v", c.file, got)
		}
		if c.want != (FioOutcome{}) {
			if d := cmp.Diff(c.want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(a)) })); d != "" {
				t.Errorf("%s (-want +got):\n%s", c.file, d)
			}
		}
	}
}

// A report with notes before its JSON is still read.
func TestFioParseNotes(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "fio-randread-4k-direct.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseFio(append([]byte("note: both iodepth >= 1 and synchronous I/O engine are selected\n"), b...), false); err != nil {
		t.Error(err)
	}
}

func FuzzParseFio(f *testing.F) {
	for _, name := range []string{"fio-randread-4k-direct.json", "fio-randwrite-64k-qd32.json", "fio-open-failed.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
	}
	f.Add([]byte(`{"jobs":[{"read":{"total_ios":1,"runtime":1,"iops":1,"clat_ns":{"percentile":{"50.000000":1,"99.000000":0}}}}]}`), false)
	f.Fuzz(func(t *testing.T, b []byte, writes bool) {
		o, err := ParseFio(b, writes)
		if err == nil && (o.IOs <= 0 || o.Seconds <= 0 || o.IOPS <= 0 || o.P50us <= 0 || o.P99us < o.P50us) {
			t.Errorf("accepted %+v", o)
		}
	})
}

func TestFioFlags(t *testing.T) {
	t.Parallel()
	lanes, err := ParseTargets("host, host,rootfs,pvc")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"host", "host#2", "rootfs", "pvc"}, labels(lanes)); d != "" {
		t.Error(d)
	}
	if bss, err := ParseBlockSizes("4k,64k,1m,4k"); err != nil || !slicesEqual(bss, []int{4096, 65536, 1 << 20}) {
		t.Errorf("%v %v", bss, err)
	}
	if n, err := ParseFileSize("1g"); err != nil || n != 1<<30 {
		t.Errorf("%v %v", n, err)
	}
	for _, bad := range []func() error{
		func() error { _, err := ParseTargets("host,nfs"); return err },
		func() error { _, err := ParseRWs("randrw"); return err },
		func() error { _, err := ParseBlockSizes("1000"); return err },
		func() error { _, err := ParseDepths("0"); return err },
		func() error { _, err := ParseDepths("2000"); return err },
		func() error { _, err := ParseFileSize("100k"); return err },
		func() error { _, err := ParseFileSize("-1m"); return err },
	} {
		if bad() == nil {
			t.Error("accepted bad input")
		}
	}
	plan := Plan(lanes[:2], []RW{RandRead, SeqWrite}, []int{4096}, []int{1, 32})
	if len(plan) != 8 || plan[0].Label() != "host" || plan[1].Label() != "host#2" || plan[2].IODepth != 32 || plan[4].RW != SeqWrite {
		t.Errorf("%+v", plan)
	}
	// The same job on every target but for its file; direct I/O and the ramp as asked.
	j := fioJob{File: "/mnt/pvc/f", Size: 1 << 28, Lane: plan[2], Direct: true, Ramp: 800 * time.Millisecond, Runtime: 3200 * time.Millisecond}
	want := []string{"fio", "--name=tare", "--filename=/mnt/pvc/f", "--size=268435456", "--ioengine=libaio", "--direct=1", "--output-format=json",
		"--rw=randread", "--bs=4096", "--iodepth=32", "--time_based", "--runtime=3200ms", "--ramp_time=800ms", "--randrepeat=0", "--group_reporting"}
	if d := cmp.Diff(want, j.args()); d != "" {
		t.Error(d)
	}
}

// A run compares each target with the host on every figure; a target at half the host's IOPS in every
// trial is significantly lower, with twice the CPU per 10k I/Os.
func TestFioCompareHalf(t *testing.T) {
	t.Parallel()
	var ts []Trial
	for i, v := range []float64{10000, 11000, 12000, 13000, 14000} {
		for _, c := range []struct {
			target Target
			f      float64
		}{{TargetHost, 1}, {TargetRootFS, 0.5}} {
			tr := Trial{Slot: Slot{Round: i + 1, Lane: Lane{Target: c.target, Copy: 1, RW: RandRead, BS: 4096, IODepth: 1}},
				FioOutcome: FioOutcome{IOPS: v * c.f, MBps: v * c.f * 4096 / 1e6, P50us: 50 / c.f, P99us: 100 / c.f}}
			tr.CPUPer10k = 1 / (tr.IOPS / 1e4)
			ts = append(ts, tr)
		}
	}
	rs := Compare(ts, "host")
	if len(rs) != len(metrics) {
		t.Fatalf("%d ratios: %+v", len(rs), rs)
	}
	if r := rs[0]; r.Metric != "iops" || r.Target != "rootfs" || math.Abs(r.Ratio-0.5) > 1e-9 || !r.Significant || r.Hi >= 1 {
		t.Errorf("%+v", r)
	}
	if r := rs[4]; r.Metric != "cpu_per_10k_io" || math.Abs(r.Ratio-2) > 1e-9 {
		t.Errorf("%+v", r)
	}
}

func labels(ls []Lane) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Label())
	}
	return out
}

func slicesEqual(a, b []int) bool { return cmp.Equal(a, b) }
