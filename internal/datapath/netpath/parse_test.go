package netpath

import (
	"math"
	"os"
	"strings"
	"testing"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// The fixtures are iperf3 3.12 and sockperf 3.7 (Debian 12) run over loopback on this machine; the
// expected figures were read from them with Python's json module and grep.
func TestParseIperf(t *testing.T) {
	tcp, err := ParseIperf(fixture(t, "iperf3-tcp-loopback.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !near(tcp.Gbps, 17.251679184511808) || tcp.Bytes != 4313088000 || tcp.Retransmits != 12 || tcp.MSS != 32768 || !near(tcp.SenderCPU, 0.6560485884961941) {
		t.Errorf("tcp: %+v", tcp)
	}
	udp, err := ParseIperf(fixture(t, "iperf3-udp-loopback.json"))
	if err != nil {
		t.Fatal(err)
	}
	// UDP: the receiver's throughput, not the sender's (which counts datagrams that were lost).
	if !near(udp.Gbps, 0.7584967300659984) || !near(udp.LossPct, 48.04432855280313) || udp.Bytes != 94843000 {
		t.Errorf("udp: %+v", udp)
	}
	if _, err := ParseIperf(fixture(t, "iperf3-refused.json")); err == nil || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("refused: %v", err)
	}
	for _, bad := range []string{"", "{", `{"end":{}}`, "iperf3: error - unable to connect"} {
		if _, err := ParseIperf([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestParseSockperf(t *testing.T) {
	o, err := ParseSockperf(fixture(t, "sockperf-pp-tcp-loopback.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if o.P50us != 61.701 || o.P99us != 132.366 || !near(o.TPS, 8759/0.551) || o.Seconds != 0.551 {
		t.Errorf("%+v", o)
	}
	if _, err := ParseSockperf(fixture(t, "sockperf-refused.txt")); err == nil || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("refused: %v", err)
	}
	if _, err := ParseSockperf([]byte("sockperf: Test ended\n")); err == nil {
		t.Error("no figures parsed")
	}
}

// The fixtures are tare-crr's client against its server over loopback (--parallel 2, 1 s) and against a
// port where nothing listens; the expected figures were read from them with Python's json module.
func TestParseCRR(t *testing.T) {
	o, err := ParseCRR(fixture(t, "crr-loopback.json"))
	if err != nil {
		t.Fatal(err)
	}
	if o.P50us != 212.606 || o.P99us != 551.5779799999999 || !near(o.TPS, 8743/1.000111913) || o.Failed != 0 {
		t.Errorf("%+v", o)
	}
	if _, err := ParseCRR(fixture(t, "crr-refused.json")); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("refused: %v", err)
	}
	for _, bad := range []string{"", "{", `{"seconds":1,"transactions":5}`, `{"seconds":1,"transactions":5,"p50_us":9,"p99_us":3}`} {
		if _, err := ParseCRR([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzParseCRR(f *testing.F) {
	for _, n := range []string{"crr-loopback.json", "crr-refused.json"} {
		f.Add(fixture(f, n))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if o, err := ParseCRR(b); err == nil && (o.TPS <= 0 || o.P50us <= 0 || o.P99us < o.P50us || math.IsInf(o.TPS, 0)) {
			t.Errorf("accepted a run without transactions: %+v", o)
		}
	})
}

func FuzzParseIperf(f *testing.F) {
	for _, n := range []string{"iperf3-tcp-loopback.json", "iperf3-udp-loopback.json", "iperf3-refused.json"} {
		f.Add(fixture(f, n))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if o, err := ParseIperf(b); err == nil && (o.Seconds <= 0 || o.Bytes <= 0) {
			t.Errorf("accepted an empty run: %+v", o)
		}
	})
}

func FuzzParseSockperf(f *testing.F) {
	for _, n := range []string{"sockperf-pp-tcp-loopback.txt", "sockperf-refused.txt"} {
		f.Add(fixture(f, n))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if o, err := ParseSockperf(b); err == nil && (o.TPS <= 0 || o.P50us <= 0 || math.IsInf(o.TPS, 0)) {
			t.Errorf("accepted a run without round trips: %+v", o)
		}
	})
}
