package agent

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// The bounds on what callers can take from the main port (issue 35: a flood held the agent's descriptors up
// to its open-file limit, starved its sampler of them, and left 424 MiB of memory behind). Each is one a
// legitimate caller never meets; together they bound the agent's descriptors by maxConns and its memory by
// maxConns connections of a few tens of KiB, whatever callers do (TestFlood).
const (
	// readHeaderTimeout bounds the wait for a request's header, from the connection's accept or the end of
	// the previous answer; net/http bounds the TLS handshake by it too (the least of its timeouts).
	// Prometheus sends its request as soon as it has connected: 5 s leave room for a few lost packets (TCP
	// waits 1 s before its first retransmission), and a slow-loris caller holds a slot 5 s at most.
	readHeaderTimeout = 5 * time.Second
	// writeTimeout bounds a handler and its answer, from the end of the header: a scrape longer than
	// Prometheus's 10 s timeout is abandoned by Prometheus anyway, and a /summary of a 10-minute window over
	// thousands of processes is built and written in about a second (measured: 3,000 processes in each of
	// 201 samples, 0.2 s for 1.4 MiB of JSON; the default window has 601 samples, a fifth of them listing
	// every process), so 30 s leave a busy node room. A caller that stops reading is cut then.
	writeTimeout = 30 * time.Second
	// readTimeout is writeTimeout: no request has a body, so it bounds nothing the header's timeout does
	// not; shorter, it would cancel a request's context while it is served (net/http's background read
	// fails at the deadline), and with it the access gate's questions to the API server.
	readTimeout = writeTimeout
	// idleTimeout closes a keep-alive connection without a request for 30 s: twice the shipped Prometheus's
	// scrape interval (15 s), so that its connection, and its TLS session, last from one scrape to the
	// next, while an idle caller holds a slot 30 s at most.
	idleTimeout = 30 * time.Second
	// maxHeaderBytes bounds a request's header (net/http reads 4 KiB more before answering 431): a bearer
	// token of a few KiB fits (a ServiceAccount's is about 1 KiB, an OIDC token with its groups a few).
	maxHeaderBytes = 16 << 10
	// maxConns caps the open connections of the main port: far more than its callers (a Prometheus or two,
	// tare cluster, a person with curl), far fewer descriptors than any open-file limit (the sampler needs
	// its own), and 256 x (a goroutine, its buffers, a header, a TLS connection's records: under 64 KiB) =
	// 16 MiB at most.
	maxConns = 256
	// summarySlots and metricsSlots are the /summary and /metrics requests served at once: a /summary
	// copies its window's series (the agent's RSS rose 17 MiB for one, in the measure above), a scrape
	// gathers every series;
	// Prometheus scrapes one at a time, two in a pair. More wait their turn: 429 with Retry-After.
	summarySlots = 2
	metricsSlots = 4
	// healthConns caps the health listener's connections: its callers are the kubelet's probes.
	healthConns = 16
)

// newServer is the main port's HTTP server: the timeouts and header bound above, GET and HEAD without a
// body only, HTTP/1 only (one request at a time on a connection, so that the connection cap bounds the
// requests in flight too), and net/http's own error lines (a failed TLS handshake, a failed accept) into
// log as warnings, rate-limited: a flood of bad handshakes is not a flood of lines. A nil log discards them.
func newServer(h http.Handler, log io.Writer) *http.Server {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	return &http.Server{
		Handler:           withoutBody(h),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		Protocols:         &protocols,
		ErrorLog:          serverLog(log),
	}
}

// withoutBody answers any method but GET and HEAD with 405 and a request with a body with 413, without
// reading the body: the connection is closed after the answer.
func withoutBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 { // -1: chunked, or HTTP/2 without a length
			w.Header().Set("Connection", "close")
		}
		switch {
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: the agent serves GET and HEAD", http.StatusMethodNotAllowed)
		case r.ContentLength != 0:
			http.Error(w, "a request body is not accepted", http.StatusRequestEntityTooLarge)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// slots serves at most n requests through next at once and answers the others 429 with Retry-After: 1,
// as the API server's max-in-flight limit does, so that what requests hold while served is bounded
// whatever the number of callers. It goes inside the access gate: unknown callers take no slot.
func slots(n int, next http.Handler) http.Handler {
	sem := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
			next.ServeHTTP(w, r)
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, fmt.Sprintf("busy: %d requests for %s are being served: try again shortly", n, r.URL.Path), http.StatusTooManyRequests)
		}
	})
}

// connLimiter is a listener that keeps at most max of its connections open. One over the cap is accepted
// and closed at once, with a reset (no TIME_WAIT left behind): the kernel's backlog keeps draining and the
// descriptors stay bounded, where a listener that stopped accepting (x/net/netutil's LimitListener) would
// leave callers queued in the kernel, /healthz among them, unanswered until a slot frees. It goes under
// tls.NewListener, so that net/http sees the *tls.Conn and bounds the handshake by its timeouts. Its
// errors are the listener's: net/http backs off (5 ms doubling to 1 s) on temporary ones such as EMFILE.
type connLimiter struct {
	net.Listener
	max     int64
	open    atomic.Int64
	refused atomic.Uint64
	log     io.Writer
	warn    rate.Sometimes
}

// limitConns caps ln at n open connections, saying in log (at most every 10 s) when it refuses some.
func limitConns(ln net.Listener, n int, log io.Writer) *connLimiter {
	return &connLimiter{Listener: ln, max: int64(n), log: log, warn: rate.Sometimes{Interval: 10 * time.Second}}
}

// Accept returns the next connection that fits under the cap; it closes those that do not itself.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		n := l.refused.Add(1)
		if lg, ok := c.(interface{ SetLinger(int) error }); ok {
			_ = lg.SetLinger(0)
		}
		_ = c.Close()
		if l.log != nil {
			l.warn.Do(func() {
				fmt.Fprintf(l.log, "warning: %d connections open, the most the agent keeps: refusing more (%d refused since it started)\n", l.max, n)
			})
		}
	}
}

// limitedConn frees its slot when it is first closed (net/http may close a connection twice).
type limitedConn struct {
	net.Conn
	l      *connLimiter
	closed atomic.Bool
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.l.open.Add(-1)
	}
	return err
}

// CloseWrite half-closes the TCP connection, which net/http does before closing after an error answer
// (431, 400), so that the caller reads the answer rather than a reset.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// serverLog writes net/http's error lines to w as warnings: the first ten, then one a second at most.
func serverLog(w io.Writer) *log.Logger {
	if w == nil {
		return log.New(io.Discard, "", 0)
	}
	return log.New(&sometimes{w: w, s: rate.Sometimes{First: 10, Interval: time.Second}}, "warning: ", 0)
}

// sometimes passes on the writes rate.Sometimes lets through and drops the others.
type sometimes struct {
	w io.Writer
	s rate.Sometimes
}

func (s *sometimes) Write(p []byte) (int, error) {
	s.s.Do(func() { _, _ = s.w.Write(p) })
	return len(p), nil
}
