package lab

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/lab/images"
)

// FuzzLoadState feeds loadState (Open's reader) a state.json, seeded with states as tare lab up and pause write them
// (save's own output). A file loadState accepts is a version it knows, found where it was read, and
// saved and loaded again it says the same; a refused one says so in a lower-case sentence that names
// the file.
func FuzzLoadState(f *testing.F) {
	started := time.Date(2026, 11, 27, 23, 0, 0, 0, time.UTC)
	for _, s := range []State{
		{Version: stateVersion, Profile: "default", Node: "tare-lab", Server: "https://127.0.0.1:6443", Kubeconfig: "/var/lib/tare-lab/admin.kubeconfig",
			KwokNodes: 0, Started: started, Ready: true, Processes: []Process{{Name: "etcd", PID: 1234}, {Name: "kube-apiserver", PID: 1240}},
			Cgroups: []string{"/sys/fs/cgroup/tare-lab"}, Sysctls: map[string]string{"net.ipv4.ip_forward": "0"}, MadeDirs: []string{"/etc/cni/net.d"}},
		{Version: stateVersion, Profile: "minimal", APIServerOnly: true, PortOffset: 100, Started: started,
			Paused: &PauseState{Since: started.Add(time.Minute), Complete: true}},
		{Version: stateVersion + 1, Started: started},
	} {
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"version": 1, "paused": {"complete": true}}`))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "state.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := loadState(dir)
		if err != nil {
			if msg := err.Error(); strings.ToLower(msg[:1]) != msg[:1] || !strings.Contains(msg, dir) {
				t.Fatalf("error %q is not lower case or does not name %s", msg, dir)
			}
			return
		}
		if s.Version < 1 || s.Version > stateVersion || s.Dir != dir || s.Paused != nil && s.Paused.Since.IsZero() {
			t.Fatalf("accepted version %d, dir %s, paused %+v", s.Version, s.Dir, s.Paused)
		}
		first, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("an accepted state does not marshal: %v", err)
		}
		if err := s.save(); err != nil {
			t.Fatal(err)
		}
		again, err := loadState(dir)
		if err != nil {
			t.Fatalf("a saved state does not load: %v", err)
		}
		second, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("saved and loaded again, the state changed:\n%s\n%s", first, second)
		}
	})
}

// FuzzParseImageDigest feeds parseImageDigest `ctr images ls` output, seeded with real output: what it
// returns is "" or a sha256 digest, one field of a line that names the image.
func FuzzParseImageDigest(f *testing.F) {
	const out = `REF                          TYPE                                       DIGEST                                                                  SIZE     PLATFORMS   LABELS
tare.lab/datapath-tools:v1   application/vnd.oci.image.manifest.v1+json sha256:4f1c0f0e3c7d1f5d6f1b6b7e0c5e2d3b1a9f8e7d6c5b4a39281706f5e4d3c2b1 98.2 MiB linux/amd64 -
`
	f.Add(out, images.Tools.Name)
	f.Add(out, "tare.lab/web:v1")
	f.Add("REF TYPE DIGEST SIZE PLATFORMS LABELS\n", images.Tools.Name)
	f.Fuzz(func(t *testing.T, out, ref string) {
		d := parseImageDigest(out, ref)
		if d == "" {
			return
		}
		if !strings.HasPrefix(d, "sha256:") || strings.ContainsAny(d, " \t\n") {
			t.Fatalf("digest %q", d)
		}
		found := false
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[0] == ref && f[2] == d {
				found = true
			}
		}
		if !found {
			t.Fatalf("digest %q is on no line of %q", d, ref)
		}
	})
}
