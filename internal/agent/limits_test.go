package agent

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// acceptAll accepts from l until it is closed, sending each connection on the returned channel.
func acceptAll(t *testing.T, l net.Listener) <-chan net.Conn {
	t.Helper()
	ch := make(chan net.Conn, 64)
	go func() {
		defer close(ch)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			ch <- c
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		for c := range ch {
			_ = c.Close()
		}
	})
	return ch
}

// refusedAtOnce dials l and wants the connection reset or closed within a second, before anything is
// sent: what a caller over the cap sees.
func refusedAtOnce(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if errors.Is(err, syscall.ECONNRESET) {
		return // reset before the dial returned
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a connection over the cap: read %v, want it closed at once", err)
	}
}

// TestLimitConns fills a cap of 3: a fourth connection is closed at once without Accept returning it, and
// so are many more (Accept keeps draining the backlog rather than blocking); a slot frees once, however
// often its connection is closed, and then the next connection is accepted.
func TestLimitConns(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := limitConns(ln, 3, nil)
	accepted := acceptAll(t, l)
	addr := ln.Addr().String()
	var held []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		select {
		case s := <-accepted:
			held = append(held, s)
		case <-time.After(5 * time.Second):
			t.Fatal("a connection under the cap was not accepted")
		}
	}
	for range 50 {
		refusedAtOnce(t, addr)
	}
	select {
	case <-accepted:
		t.Fatal("Accept returned a connection over the cap")
	default:
	}
	if n, r := l.open.Load(), l.refused.Load(); n != 3 || r != 50 {
		t.Errorf("at the cap: %d open, %d refused; want 3 and 50", n, r)
	}
	for range 3 {
		_ = held[0].Close()
	}
	if n := l.open.Load(); n != 2 {
		t.Errorf("one connection closed three times: %d open, want 2", n)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case s := <-accepted:
		_ = s.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("a connection was not accepted once a slot was free")
	}
}

// errListener fails every Accept with err.
type errListener struct {
	net.Listener
	err error
}

func (l errListener) Accept() (net.Conn, error) { return nil, l.err }

// TestLimitConnsAcceptError passes the listener's error on as it is: net/http backs off on a temporary
// one (EMFILE) only if it still is one.
func TestLimitConnsAcceptError(t *testing.T) {
	t.Parallel()
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	_, err := limitConns(errListener{err: emfile}, 1, nil).Accept()
	if err != emfile { //nolint:errorlint // the very error, for net/http's type assertion
		t.Errorf("Accept: %v, want the listener's own error", err)
	}
}

// servedBehindLimits serves h as the agent does (newServer over a capped listener, under TLS when cfg is
// set) on 127.0.0.1 until the test ends.
func servedBehindLimits(t *testing.T, h http.Handler, cfg *tls.Config) (*connLimiter, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := limitConns(ln, maxConns, nil)
	var serve net.Listener = l
	if cfg != nil {
		serve = tls.NewListener(l, cfg)
	}
	srv := newServer(h, nil)
	go func() { _ = srv.Serve(serve) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l, ln.Addr().String()
}

// TestLimitTLSHandshake serves TLS over the capped listener as Run does: a caller that connects and sends
// nothing is cut within readHeaderTimeout (net/http bounds the handshake because it sees the *tls.Conn,
// which also gives the handler the TLS state the access gate reads), and its slot is freed.
func TestLimitTLSHandshake(t *testing.T) {
	t.Parallel()
	cfg, err := tlsConfig(&Access{}, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	l, addr := servedBehindLimits(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "tls=%v", r.TLS != nil)
	}), cfg)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a self-signed test certificate
	defer client.CloseIdleConnections()
	resp, err := client.Get("https://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(body) != "tls=true" {
		t.Errorf("the handler saw %q: the TLS state is lost below the capped listener", body)
	}
	client.CloseIdleConnections()

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(readHeaderTimeout + 5*time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a caller that never says hello: %v after %s, want the agent to close it", err, time.Since(start))
	}
	if took := time.Since(start); took < readHeaderTimeout-time.Second || took > readHeaderTimeout+3*time.Second {
		t.Errorf("a silent caller was cut after %s, want readHeaderTimeout (%s)", took, readHeaderTimeout)
	}
	deadline := time.Now().Add(5 * time.Second)
	for l.open.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := l.open.Load(); n != 0 {
		t.Errorf("%d connections still counted once every caller is gone", n)
	}
}

// TestLimitHeaders: a bearer token of 8 KiB passes, a header of 32 KiB is refused with 431.
func TestLimitHeaders(t *testing.T) {
	t.Parallel()
	_, addr := servedBehindLimits(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	}), nil)
	for _, tc := range []struct {
		header string
		want   int
	}{
		{"Authorization: Bearer " + strings.Repeat("t", 8<<10), http.StatusOK},
		{"X-Huge: " + strings.Repeat("a", 32<<10), http.StatusRequestHeaderFieldsTooLarge},
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n%s\r\nConnection: close\r\n\r\n", tc.header)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("a header of %d bytes: %v", len(tc.header), err)
		}
		_ = resp.Body.Close()
		_ = c.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("a header of %d bytes: %s, want %d", len(tc.header), resp.Status, tc.want)
		}
	}
}

// TestLimitRequests: GET and HEAD without a body only.
func TestLimitRequests(t *testing.T) {
	t.Parallel()
	h := newServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }), nil).Handler
	for _, tc := range []struct {
		method string
		body   string
		want   int
		close  bool
	}{
		{http.MethodGet, "", http.StatusOK, false},
		{http.MethodHead, "", http.StatusOK, false},
		{http.MethodPost, "", http.StatusMethodNotAllowed, false},
		{http.MethodDelete, "", http.StatusMethodNotAllowed, false},
		{http.MethodPost, "data", http.StatusMethodNotAllowed, true},
		{http.MethodGet, "data", http.StatusRequestEntityTooLarge, true},
	} {
		var body io.Reader
		if tc.body != "" {
			body = strings.NewReader(tc.body)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(tc.method, "/metrics", body))
		if w.Code != tc.want || (w.Header().Get("Connection") == "close") != tc.close {
			t.Errorf("%s with %d bytes: %d (Connection %q), want %d (close %v)", tc.method, len(tc.body), w.Code, w.Header().Get("Connection"), tc.want, tc.close)
		}
	}
}

// TestLimitSlots: with two slots taken, a third request is answered 429 with Retry-After at once, and is
// served once a slot frees.
func TestLimitSlots(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var entered sync.WaitGroup
	h := slots(2, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("wait") != "" {
			entered.Done()
			<-release
		}
		fmt.Fprintln(w, "ok")
	}))
	var served sync.WaitGroup
	for range 2 {
		entered.Add(1)
		served.Go(func() {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/summary?wait=1", nil))
		})
	}
	entered.Wait()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/summary", nil))
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Errorf("a third request with two slots taken: %d, Retry-After %q; want 429 and 1", w.Code, w.Header().Get("Retry-After"))
	}
	close(release)
	served.Wait()
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/summary", nil))
	if w.Code != http.StatusOK {
		t.Errorf("with the slots free again: %d, want 200", w.Code)
	}
}

// TestLimitServerLog: net/http's error lines reach the log as warnings, the first ten and then one a second.
func TestLimitServerLog(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	lg := serverLog(&out)
	start := time.Now()
	for i := range 100 {
		lg.Printf("http: TLS handshake error from 10.0.0.%d:1234: EOF", i)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 10 || len(lines) > 10+int(time.Since(start)/time.Second)+1 {
		t.Errorf("100 lines in %s gave %d", time.Since(start), len(lines))
	}
	if !strings.HasPrefix(lines[0], "warning: http: TLS handshake error") {
		t.Errorf("first line %q", lines[0])
	}
}
