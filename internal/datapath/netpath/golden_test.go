package netpath

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
	"github.com/tare-dev/tare/internal/session"
	"github.com/tare-dev/tare/internal/warning"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// goldenNet is a net run with what each part of the table and the page shows: copies, a cross-node
// baseline, vxlan against pod-cross-node, an MTU, a skipped path, a failed trial, failed transactions, a
// warning and the CPU's groups. Its figures come from a seeded generator, not from the code under test.
func goldenNet() Report {
	paths, err := ParsePaths("host,host,pod-same-node,host-cross-node,pod-cross-node,vxlan")
	if err != nil {
		panic(err)
	}
	lanes := Plan(paths, []Mode{TCPStream, TCPRR, TCPCRR, StorageRead}, []int{1 << 10, 16 << 10}, []int{1500})
	rng := rand.New(rand.NewPCG(7, 8))
	var trials []Trial
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, sl := range datapath.Order(lanes, 4, rng) {
		t := Trial{Seq: i + 1, Slot: sl, Start: start.Add(time.Duration(i) * time.Second), End: start.Add(time.Duration(i+1) * time.Second),
			NodeBusy: 500 + 1000*rng.Float64(), PathMTU: 1500, Groups: map[string]float64{"kubelet": 10 * rng.Float64(), "pod": 200 * rng.Float64(), "other": 50 * rng.Float64(), "containerd": 5, "kube-proxy": 3, "system": 1}}
		f := 1 + rng.Float64()
		if sl.Lane.Path.PodNetwork() {
			f *= 1.5
		}
		switch {
		case sl.Lane.Mode.Stream():
			t.Gbps = 20 / f
		case sl.Lane.Mode.Storage():
			t.Gbps, t.TPS, t.P50us, t.P99us = 3/f, 3e4/f, 20*f, 90*f
		default:
			t.TPS, t.P50us, t.P99us = 5e4/f, 15*f, 60*f
		}
		if sl.Lane.Mode == TCPCRR && i%5 == 0 {
			t.Failed, t.FailedWhy = 3, "connection reset by peer"
		}
		if i == 9 || i == 22 {
			t = Trial{Seq: i + 1, Slot: sl, Error: "iperf3: connection refused"}
		}
		if i == 30 {
			t.Warnings = []session.Warning{{Seq: 3, Kind: "node-busy", Message: "the node was busy"}}
		}
		if t.Error == "" {
			t.CPUPerUnit = t.perUnit(t.NodeBusy)
		}
		trials = append(trials, t)
	}
	r := Report{Node: "vm", RemoteNode: "vm-2", Baseline: string(Host), Lanes: lanes, PodMTU: 1450, Parallel: 2,
		Skipped:  map[string]string{"clusterip": "not asked", "hostnet-pod": "no pod"},
		Schedule: datapath.Schedule{Rounds: 4, Duration: "2s", Seed: 7, Started: start, Took: "3m4s"},
		Warnings: []warning.Warning{{Code: datapath.WarnOtherNode, Figure: "cpu_per_unit", Subject: "vm", Message: "measured another machine", Cause: "--node"}}}
	r.Trials = trials
	return mustFinish(finish(r, nil))
}

func mustFinish(r Report, err error) Report {
	if err != nil {
		panic(err)
	}
	return r
}

// TestGolden: the table, the JSON and the page's view (htmlreport's tests cover the page it makes) of a fixed net run are those the code
// wrote before the verbs shared their core (go test -update rewrites them).
func TestGolden(t *testing.T) {
	net := goldenNet()
	net.Took = "3m4s" // finish timed the building
	for _, c := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"net.txt", func(b *bytes.Buffer) error { return Table(b, net) }},
		{"net.json", func(b *bytes.Buffer) error { return output.JSON(b, net) }},
		{"net-view.json", func(b *bytes.Buffer) error { return output.JSON(b, net.Result().View()) }},
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
