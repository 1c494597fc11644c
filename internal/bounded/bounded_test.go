package bounded

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// endless is a body that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func TestReader(t *testing.T) {
	b, err := io.ReadAll(Reader(strings.NewReader("exactly"), 7, "a peer"))
	if err != nil || string(b) != "exactly" {
		t.Errorf("a body at the bound: %q, %v", b, err)
	}
	_, err = io.ReadAll(Reader(endless{}, 1<<20, "the agent's /summary"))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "the agent's /summary is larger than 1 MiB") {
		t.Errorf("an endless body: %v", err)
	}
}

// TestTransport: a real HTTP server (loopback) that streams without end is cut at the bound, with the
// host and path named.
func TestTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := bytes.Repeat([]byte("y"), 64<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	c := &http.Client{Transport: Transport(http.DefaultTransport, 2<<20)}
	resp, err := c.Get(srv.URL + "/api/v1/query")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "/api/v1/query") || n != 2<<20 {
		t.Errorf("read %d bytes, %v", n, err)
	}
}
