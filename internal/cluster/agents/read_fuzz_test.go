package agents

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/cluster"
)

// FuzzParseSummary feeds agents' answers to GET /summary through the parse Measure uses and on into the
// cluster view, seeded with answers captured from a real agent (testdata/summary.json: a 2 s window of a
// running agent; the 400 bodies are its words for a window it cannot serve). Nothing panics; a summary
// comes with status ok and no reason, anything else with a reason that says what to do.
func FuzzParseSummary(f *testing.F) {
	real, err := os.ReadFile(filepath.Join("testdata", "summary.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(http.StatusOK, "200 OK", real)
	f.Add(http.StatusBadRequest, "400 Bad Request", []byte("window 1h0m0s is longer than the 10s the agent keeps (--window): give at most 10s\n"))
	f.Add(http.StatusBadRequest, "400 Bad Request", []byte(`window "x": time: invalid duration "x": give a duration such as 60s or 5m`+"\n"))
	f.Add(http.StatusServiceUnavailable, "503 Service Unavailable", []byte("no sample yet: the agent is taking its first\n"))
	f.Add(http.StatusForbidden, "403 Forbidden", []byte(""))
	f.Add(http.StatusOK, "200 OK", []byte("null"))
	f.Add(http.StatusOK, "200 OK", []byte(`{"meta":{"cpus":0,"interval_ns":-1},"window":{"seconds":-1}}`))
	f.Fuzz(func(t *testing.T, code int, status string, body []byte) {
		s, st, reason := parseSummary(code, status, body, "https://10.0.0.1:9100/summary?window=2s")
		switch {
		case st == cluster.StatusOK && (s == nil || reason != ""):
			t.Fatalf("status ok with summary %v and reason %q", s != nil, reason)
		case st != cluster.StatusOK && (s != nil || strings.TrimSpace(reason) == ""):
			t.Fatalf("status %s with summary %v and reason %q", st, s != nil, reason)
		}
		in := []cluster.Input{
			{Node: "a", Agent: "tare-agent-a", Pods: 3, Status: st, Reason: reason, Summary: s},
			{Node: "b", Agent: "tare-agent-b", Pods: 1, Status: st, Reason: reason, Summary: s},
		}
		_ = cluster.Build(2*time.Second, time.Unix(0, 0), in)
		_ = shortfall(in, 2*time.Second)
	})
}
