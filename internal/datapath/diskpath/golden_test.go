package diskpath

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/testenv"

	"github.com/tare-dev/tare/internal/datapath"
	"github.com/tare-dev/tare/internal/output"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// goldenDisk is a disk run with a copy of the host, a buffered target, a target on another device and a
// failed trial.
func goldenDisk() Report {
	targets, err := ParseTargets("host,host,rootfs,hostpath")
	if err != nil {
		panic(err)
	}
	lanes := Plan(targets, []RW{RandRead, SeqWrite}, []int{4096, 1 << 20}, []int{1, 32})
	rng := rand.New(rand.NewPCG(9, 10))
	var trials []Trial
	for i, sl := range datapath.Order(lanes, 3, rng) {
		f := 1 + rng.Float64()
		if sl.Lane.Target == TargetRootFS {
			f *= 2
		}
		t := Trial{Seq: i + 1, Slot: sl, Usage: datapath.Usage{NodeBusy: 200 + 100*rng.Float64(), Groups: map[string]float64{"pod": 3}},
			FioOutcome: FioOutcome{Seconds: 1.6, IOs: 1000, IOPS: 1e4 / f, MBps: 1e4 / f * float64(sl.Lane.BS) / 1e6, P50us: 80 * f, P99us: 300 * f}}
		if i == 5 {
			t = Trial{Seq: i + 1, Slot: sl, Error: "fio: exit status 1: open failed"}
		}
		if t.Error == "" {
			t.CPUPer10k = t.NodeBusy / 1000 / (t.IOPS / 1e4)
		}
		trials = append(trials, t)
	}
	r := Report{Node: "vm", Baseline: string(TargetHost), Dir: "/var/tmp/tare", Size: 64 << 20, Lanes: lanes,
		Targets: []TargetInfo{
			{Target: "host", File: "/var/tmp/tare/host/host.fio", Seen: "/var/tmp/tare/host", FSType: "ext4", Device: "254:1", SameDevice: true, Free: 1 << 30, Direct: true},
			{Target: "host#2", File: "/var/tmp/tare/host/host-2.fio", Seen: "/var/tmp/tare/host", FSType: "ext4", Device: "254:1", SameDevice: true, Free: 1 << 30, Direct: true},
			{Target: "rootfs", File: "/tare/rootfs.fio", Seen: "/proc/9/root/tare", FSType: "overlay", Device: "0:77", SameDevice: true, Free: 1 << 30},
			{Target: "hostpath", File: "/hostpath/hostpath.fio", Seen: "/proc/9/root/hostpath", FSType: "ext4", Device: "254:2", Free: 1 << 30, Direct: true},
		},
		Schedule: datapath.Schedule{Rounds: 3, Duration: "2s", Seed: 9, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Took: "1m2s"}}
	r.Trials = trials
	r, err = finish(r, nil)
	if err != nil {
		panic(err)
	}
	return r
}

// TestGolden: the table, the JSON and the page's view (htmlreport's tests cover the page it makes) of a fixed disk run are those the code
// wrote before the verbs shared their core (go test -update rewrites them).
func TestGolden(t *testing.T) {
	disk := goldenDisk()
	disk.Took = "1m2s" // finish timed the building
	for _, c := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"disk.txt", func(b *bytes.Buffer) error { return Table(b, disk) }},
		{"disk.json", func(b *bytes.Buffer) error { return output.JSON(b, disk) }},
		{"disk-view.json", func(b *bytes.Buffer) error { return output.JSON(b, disk.Result().View()) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := c.write(&b); err != nil {
				t.Fatal(err)
			}
			testenv.Golden(t, filepath.Join("testdata", "golden", c.name), b.Bytes(), *update)
		})
	}
}
