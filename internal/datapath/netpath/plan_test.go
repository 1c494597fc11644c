package netpath

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tare-dev/tare/internal/datapath"
)

func TestParseFlags(t *testing.T) {
	lanes, err := ParsePaths("host, vxlan,host")
	if err != nil {
		t.Fatal(err)
	}
	if labels := []string{lanes[0].Label(), lanes[1].Label(), lanes[2].Label()}; !slices.Equal(labels, []string{"host", "vxlan", "host#2"}) {
		t.Errorf("labels %v", labels)
	}
	sizes, err := datapath.ParseSizes("64,1k,16K,1m,1k")
	if err != nil || !slices.Equal(sizes, []int{64, 1024, 16384, 1 << 20}) {
		t.Errorf("sizes %v %v", sizes, err)
	}
	for _, s := range sizes {
		if back, err := datapath.ParseSizes(datapath.FormatSize(s)); err != nil || back[0] != s {
			t.Errorf("%d → %s → %v %v", s, datapath.FormatSize(s), back, err)
		}
	}
	for _, bad := range []string{"", "0", "-1", "1g", "k", "2000000m"} {
		if _, err := datapath.ParseSizes(bad); err == nil {
			t.Errorf("size %q accepted", bad)
		}
	}
	if _, err := ParsePaths("host,ipip"); err == nil {
		t.Error("unknown path accepted")
	}
	if _, err := ParseModes("tcp-stream,sctp"); err == nil {
		t.Error("unknown mode accepted")
	}
	if err := CheckLanes(Plan(lanes, []Mode{TCPRR}, []int{128 << 10}, nil)); err == nil {
		t.Error("a 128k ping-pong accepted")
	}
	if err := CheckLanes(Plan(lanes, []Mode{TCPStream, TCPCRR}, []int{128 << 10}, nil)); err != nil {
		t.Error(err)
	}
	if err := CheckLanes(Plan(lanes, []Mode{TCPCRR}, []int{128 << 20}, nil)); err == nil {
		t.Error("a 128m tcp-crr request accepted")
	}
}

// Every lane runs once per round, and the rounds are not all in one order (the trials interleave paths).
func TestOrder(t *testing.T) {
	lanes := Plan([]Lane{{Path: Host, Copy: 1}, {Path: PodSameNode, Copy: 1}, {Path: VXLAN, Copy: 1}}, []Mode{TCPStream, TCPRR}, []int{64, 1024}, nil)
	slots := datapath.Order(lanes, 5, rand.New(rand.NewPCG(1, 2)))
	if len(slots) != 5*len(lanes) {
		t.Fatalf("%d slots", len(slots))
	}
	orders := map[string]bool{}
	for r := 1; r <= 5; r++ {
		var got []Lane
		key := ""
		for _, s := range slots {
			if s.Round == r {
				got = append(got, s.Lane)
				key += s.Lane.Label() + string(s.Lane.Mode) + datapath.FormatSize(s.Lane.Size) + ","
			}
		}
		for _, l := range lanes {
			if !slices.Contains(got, l) {
				t.Errorf("round %d lacks %+v", r, l)
			}
		}
		orders[key] = true
	}
	if len(orders) < 2 {
		t.Error("every round in the same order")
	}
}

// --mtu multiplies the pod network's paths only: the host and a hostNetwork pod run over the loopback,
// whose MTU it does not set.
func TestPlanMTU(t *testing.T) {
	paths, err := ParsePaths("host,hostnet-pod,host-cross-node,pod-same-node,vxlan")
	if err != nil {
		t.Fatal(err)
	}
	mtus, err := ParseMTUs("1500, 9000,1500", 1280, 9000)
	if err != nil || len(mtus) != 2 {
		t.Fatalf("ParseMTUs: %v %v", mtus, err)
	}
	var labels []string
	for _, l := range Plan(paths, []Mode{TCPStream}, []int{1024}, mtus) {
		labels = append(labels, l.Label())
	}
	want := []string{"host", "hostnet-pod", "host-cross-node@mtu1500", "host-cross-node@mtu9000", "pod-same-node@mtu1500", "pod-same-node@mtu9000", "vxlan@mtu1500", "vxlan@mtu9000"}
	if !slices.Equal(labels, want) {
		t.Errorf("lanes %v, want %v", labels, want)
	}
	for _, bad := range []string{"", "1500,", "9001", "1279", "jumbo"} {
		if _, err := ParseMTUs(bad, 1280, 9000); err == nil {
			t.Errorf("--mtu %q accepted", bad)
		}
	}
}
