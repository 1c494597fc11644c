package testload

import (
	"net/http"
	"net/http/httptest"
	netpprof "net/http/pprof"
	"testing"
)

// SelfPprof serves the test process's own CPU profile on loopback, as a Go component serves
// /debug/pprof/profile, and returns its base URL. The server stops when the test ends.
func SelfPprof(t testing.TB) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/profile", netpprof.Profile)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}
