package cli

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/datapath/netpath"
	"github.com/tare-dev/tare/internal/testenv"
)

// TestDatapathCRR: tcp-crr on the host path, against the kernel's own count. The test binary runs again
// in a network namespace of its own (unshare --net), where nothing else opens TCP connections: the
// connections the kernel says were opened there (ActiveOpens of /proc/net/snmp, and the servers'
// PassiveOpens) over the whole run are the transactions tare-crr reports, give or take the few
// connections that check the servers listen; every trial has a positive rate, ordered percentiles, no
// failed transaction and a CPU cost per 10k.
func TestDatapathCRR(t *testing.T) {
	requireRoot(t)
	if testing.Short() {
		t.Skip("runs tare-crr for half a minute")
	}
	if !inOwnNetns(t) {
		return
	}
	active0, passive0 := tcpOpens(t)
	out, errOut, err := run(context.Background(), "datapath", "net", "--paths", "host,host", "--modes", "tcp-crr", "--sizes", "1k,64k",
		"--trials", "3", "--duration", "2s", "--parallel", "2", "-o", "json")
	active1, passive1 := tcpOpens(t)
	t.Log(errOut)
	if err != nil {
		t.Fatalf("datapath net: %v", err)
	}
	r := decodeDatapath(t, out)
	var sum float64
	for _, tr := range r.Trials {
		if tr.Error != "" || tr.TPS <= 0 || tr.P99us < tr.P50us || tr.Failed != 0 || tr.CPUPerUnit <= 0 {
			t.Errorf("trial %d: %+v", tr.Seq, tr)
		}
		sum += tr.TPS * tr.Seconds
		// Two loops and their servers keep every CPU busy: a session whose closing pass is slow must still
		// not read more than the node has (it read 2.2 cores on 2 when the task time's span was taken for
		// the window's).
		if max := 1000 * float64(runtime.NumCPU()); tr.NodeBusy > 1.02*max {
			t.Errorf("trial %d: node busy %.0fm on %d CPUs", tr.Seq, tr.NodeBusy, runtime.NumCPU())
		}
	}
	if len(r.Trials) != 12 {
		t.Errorf("%d trials, want 12", len(r.Trials))
	}
	active, passive := active1-active0, passive1-passive0
	t.Logf("tare-crr: %.0f transactions; the kernel: %d connections opened, %d accepted", sum, active, passive)
	// The servers' listening checks connect a few times (waitListening, every 50 ms until each listens).
	if float64(active) < sum-0.5 || float64(active) > sum+100 || passive > active || float64(passive) < sum-0.5 {
		t.Errorf("tare-crr reports %.0f transactions, the kernel opened %d connections and accepted %d", sum, active, passive)
	}
	x, ok := ratioOf(r, "host#2", "host", netpath.TCPCRR, "transactions_per_s")
	t.Logf("A/A connections per second: %.3f [%.3f, %.3f] p=%.3f", x.Ratio, x.Lo, x.Hi, x.P)
	if !ok || x.N != 3 {
		t.Errorf("A/A ratio: %+v", x)
	}
	noToolsLeft(t)
}

// tcpOpens reads the TCP connections this network namespace has opened (ActiveOpens) and accepted
// (PassiveOpens) since it was made, from /proc/net/snmp.
func tcpOpens(t *testing.T) (active, passive int64) {
	t.Helper()
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		t.Fatal(err)
	}
	var head []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Tcp:" {
			continue
		}
		if head == nil {
			head = f
			continue
		}
		for i, name := range head {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			switch name {
			case "ActiveOpens":
				active = v
			case "PassiveOpens":
				passive = v
			}
		}
	}
	if head == nil {
		t.Fatal("no Tcp lines in /proc/net/snmp")
	}
	return active, passive
}

// TestDatapathStorage: the storage pattern (storage-read, storage-write) on the host path, against the
// kernel's own counts, in a network namespace of the test's own as TestDatapathCRR: the transactions run
// on one connection per stream (the connections opened are a handful, not one a transaction), and the
// bytes loopback carried are the blocks tare-crr reports moved plus the 64-byte commands, each
// transaction's 8-byte header and the TCP/IP headers, whichever way the blocks went.
func TestDatapathStorage(t *testing.T) {
	requireRoot(t)
	if testing.Short() {
		t.Skip("runs tare-crr for half a minute")
	}
	if !inOwnNetns(t) {
		return
	}
	for _, mode := range []netpath.Mode{netpath.StorageRead, netpath.StorageWrite} {
		active0, _ := tcpOpens(t)
		lo0 := rxBytes(t, "/proc", isLoopback)
		out, errOut, err := run(context.Background(), "datapath", "net", "--paths", "host,host", "--modes", string(mode), "--sizes", "64k",
			"--trials", "2", "--duration", "2s", "--parallel", "2", "-o", "json")
		active1, _ := tcpOpens(t)
		lo1 := rxBytes(t, "/proc", isLoopback)
		if err != nil {
			t.Fatalf("datapath net --modes %s: %v\n%s", mode, err, errOut)
		}
		r := decodeDatapath(t, out)
		var ops, blocks float64
		for _, tr := range r.Trials {
			if tr.Error != "" || tr.TPS <= 0 || tr.P99us < tr.P50us || tr.Failed != 0 || tr.CPUPerUnit <= 0 || tr.Gbps <= 0 {
				t.Errorf("%s trial %d: %+v", mode, tr.Seq, tr)
			}
			ops += tr.TPS * tr.Seconds
			blocks += tr.Bytes
		}
		if len(r.Trials) != 4 {
			t.Errorf("%s: %d trials, want 4", mode, len(r.Trials))
		}
		opened, carried := active1-active0, float64(rxGrowth(lo0, lo1))
		floor := ops*(64<<10) + ops*(netpath.StorageCommand+8)
		t.Logf("%s: %.0f transactions, %.0f MB of blocks; the kernel: %d connections opened, loopback %.0f MB (%.3f× the payload)",
			mode, ops, blocks/1e6, opened, carried/1e6, carried/floor)
		// 4 trials × 2 streams, and the servers' listening checks (every 50 ms until each listens).
		if opened > 100 || ops < 10*float64(opened) {
			t.Errorf("%s: %d connections for %.0f transactions: want one a stream", mode, opened, ops)
		}
		// TCP/IP headers: a few segments a transaction and one per 64 KiB, 52–66 bytes each.
		if carried < floor || carried > floor*1.01+ops*400+20e6 {
			t.Errorf("%s: loopback carried %.0f bytes for a payload of %.0f", mode, carried, floor)
		}
	}
	noToolsLeft(t)
}

// inOwnNetns runs test t in a network namespace of its own, where nothing else uses the network: outside
// one, it installs the datapath tools, runs the test binary again under unshare --net for t alone, checks
// that it passed, and returns false; inside, it brings loopback up and returns true.
func inOwnNetns(t *testing.T) bool {
	t.Helper()
	if os.Getenv("TARE_TEST_IN_NETNS") == "1" {
		if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
			t.Fatalf("ip link set lo up: %v %s", err, out)
		}
		return true
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		testenv.Unavailable(t, "unshare not installed (util-linux)")
	}
	if _, errOut, err := run(context.Background(), "lab", "install", "--datapath"); err != nil {
		t.Fatalf("lab install --datapath: %v\n%s", err, errOut)
	}
	cmd := exec.Command("unshare", "--net", os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), "TARE_TEST_IN_NETNS=1")
	out, err := cmd.CombinedOutput()
	t.Logf("in a network namespace of its own:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Errorf("in a new network namespace: %v", err)
	}
	return false
}

func isLoopback(name string) bool { return name == "lo" }
