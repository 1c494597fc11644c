package agents

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/cluster"
)

// TestEndlessSummary: an agent (a real TLS server on loopback) that answers /summary with a body that never
// ends is read up to the bound and reported as that node's failure, naming it, instead of growing tare's
// memory without end.
func TestEndlessSummary(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"meta": "`))
		buf := bytes.Repeat([]byte("x"), 64<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	o := Options{Window: 10 * time.Second, Timeout: 30 * time.Second, Client: srv.Client()}
	o.defaults()
	start := time.Now()
	s, status, reason := readSummary(context.Background(), o, srv.Listener.Addr().String())
	if s != nil || status != cluster.StatusUnreachable || !strings.Contains(reason, "larger than 64 MiB") || !strings.Contains(reason, srv.Listener.Addr().String()) {
		t.Errorf("endless /summary: %v, %s, %q", s != nil, status, reason)
	}
	t.Logf("refused after %v: %s", time.Since(start), reason)
}
