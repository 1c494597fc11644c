package netpath

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The storage pattern's client keeps its connection and sizes the two sides as a remote read (a command
// out, a block back) or a remote write (a block out, a completion back); tcp-crr sends --sizes both ways
// on a connection a transaction; every mode refuses a block larger than tare-crr carries.
func TestStorageClientCommand(t *testing.T) {
	ep := endpoint{addr: "10.0.0.5", crrPort: hostCRRPort}
	for _, tc := range []struct {
		mode      Mode
		want      []string
		keep      bool
		gbpsFirst bool
	}{
		{StorageRead, []string{"--request", "64", "--response", "131072"}, true, true},
		{StorageWrite, []string{"--request", "131072", "--response", "64"}, true, true},
		{TCPCRR, []string{"--size", "131072"}, false, false},
	} {
		argv := clientCommand(Lane{Path: HostCrossNode, Mode: tc.mode, Size: 128 << 10}, ep, "/bin/tare-crr", 2*time.Second, 2)
		line := strings.Join(argv, " ")
		if argv[0] != "/bin/tare-crr" || !strings.Contains(line, strings.Join(tc.want, " ")) || slices.Contains(argv, "--keep") != tc.keep {
			t.Errorf("%s: %q", tc.mode, line)
		}
		if ms := metricsOf(tc.mode); (ms[0].Name == "gbps") != tc.gbpsFirst || ms[len(ms)-1].Name != "cpu_per_unit" {
			t.Errorf("%s compares %v", tc.mode, ms)
		}
		if err := CheckLanes([]Lane{{Path: Host, Mode: tc.mode, Size: MaxCRRSize + 1}}); err == nil {
			t.Errorf("%s: a block of %d bytes accepted", tc.mode, MaxCRRSize+1)
		}
		if tc.mode.Stream() || !tc.mode.UsesCRR() {
			t.Errorf("%s: stream %v, tare-crr %v", tc.mode, tc.mode.Stream(), tc.mode.UsesCRR())
		}
	}
	if m, err := ParseModes("storage-read,storage-write"); err != nil || len(m) != 2 {
		t.Errorf("ParseModes: %v %v", m, err)
	}
}
