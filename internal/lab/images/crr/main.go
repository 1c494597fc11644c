// Command tare-crr is tare datapath's connect/request/response load (netperf's TCP_CRR): every
// transaction opens a TCP connection, sends a request, reads the response and the server's close, so it
// measures what setting up and tearing down a connection costs on a path (conntrack, NAT, the handshake),
// which a ping-pong over one connection does not.
//
//	tare-crr server --port 12865 [--bind 127.0.0.1]
//	tare-crr client --addr 10.0.0.5 --port 12865 --time 4 --size 1024 [--parallel 1]
//	tare-crr client ... --keep --request 64 --response 131072
//	tare-crr --version
//
// The client sends an 8-byte header (request and response sizes, big-endian uint32) and the request;
// the server reads them, writes the response and closes first, so the TIME_WAIT state is the server's and
// the client's ports are free again at once (the client's ephemeral ports would run out in seconds
// otherwise). With --keep each loop keeps one connection and sends transaction after transaction on it
// (the request size's top bit asks the server to keep the connection open): the request/response pattern
// of a storage protocol (iSCSI, NVMe/TCP, Ceph's messenger), where a remote read is a small request and a
// block-sized answer and a remote write a block-sized request and a small answer; --request and
// --response size the two (each --size by default). The client runs --parallel loops for --time seconds and prints one JSON object: the
// seconds it ran (failed transactions' time included: a dial that times out takes 5 s), the transactions
// completed, their latencies' 50th and 99th percentiles in µs (connect to the
// server's close, per transaction), and the failed ones with the first error. It exits 1 when none
// completed. The server exits on SIGTERM or SIGINT.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// maxSize bounds a request or response: what one transaction may ask of the server.
const maxSize = 64 << 20

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tare-crr server|client [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "server":
		err = server(os.Args[2:])
	case "client":
		err = client(os.Args[2:])
	case "--version", "version":
		fmt.Println("tare-crr: tare datapath's connect/request/response load")
	default:
		err = fmt.Errorf("unknown command %q: want server or client", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tare-crr:", err)
		os.Exit(1)
	}
}

func server(args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	port := fs.Int("port", 12865, "TCP port to listen on")
	bind := fs.String("bind", "", "address to listen on (default: every address)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(*bind, strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		_ = ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// Out of descriptors and the like: wait a little rather than spin.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go serve(c)
	}
}

// keepBit, set in a header's request size, asks the server to keep the connection for the next
// transaction.
const keepBit = 1 << 31

// serve answers transactions on one connection: header, request, response; then closes, unless the
// header's keep bit asks for another. An idle connection is closed after 10 s.
func serve(c net.Conn) {
	defer func() { _ = c.Close() }()
	var h [8]byte
	var out []byte
	for {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, h[:]); err != nil {
			return
		}
		req, resp := binary.BigEndian.Uint32(h[:4]), binary.BigEndian.Uint32(h[4:])
		keep := req&keepBit != 0
		req &^= keepBit
		if req > maxSize || resp > maxSize {
			return
		}
		if _, err := io.CopyN(io.Discard, c, int64(req)); err != nil {
			return
		}
		if uint32(len(out)) < resp {
			out = make([]byte, resp)
		}
		if _, err := c.Write(out[:resp]); err != nil || !keep {
			return
		}
	}
}

// Result is what the client prints.
type Result struct {
	Seconds      float64 `json:"seconds"`
	Transactions int64   `json:"transactions"`
	P50us        float64 `json:"p50_us"`
	P99us        float64 `json:"p99_us"`
	Failed       int64   `json:"failed"`
	Error        string  `json:"error,omitempty"` // the first failure
}

func client(args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	addr := fs.String("addr", "", "the server's address")
	port := fs.Int("port", 12865, "the server's port")
	secs := fs.Int("time", 4, "seconds to run")
	size := fs.Int("size", 1024, "bytes of each request and of each response")
	reqSize := fs.Int("request", -1, "bytes of each request (default: --size)")
	respSize := fs.Int("response", -1, "bytes of each response (default: --size)")
	keep := fs.Bool("keep", false, "one connection per loop for all its transactions (else a connection per transaction)")
	parallel := fs.Int("parallel", 1, "transactions under way at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *reqSize < 0 {
		reqSize = size
	}
	if *respSize < 0 {
		respSize = size
	}
	switch {
	case *addr == "":
		return errors.New("--addr: give the server's address")
	case *secs < 1 || *secs > 3600:
		return fmt.Errorf("--time %d: want 1 to 3600 seconds", *secs)
	case *size < 0 || *size > maxSize:
		return fmt.Errorf("--size %d: want 0 to %d bytes", *size, maxSize)
	case *reqSize > maxSize || *respSize > maxSize:
		return fmt.Errorf("--request %d, --response %d: want 0 to %d bytes", *reqSize, *respSize, maxSize)
	case *parallel < 1 || *parallel > 1024:
		return fmt.Errorf("--parallel %d: want 1 to 1024", *parallel)
	}
	target := net.JoinHostPort(*addr, strconv.Itoa(*port))
	msg := make([]byte, 8+*reqSize)
	head := uint32(*reqSize)
	if *keep {
		head |= keepBit
	}
	binary.BigEndian.PutUint32(msg[:4], head)
	binary.BigEndian.PutUint32(msg[4:8], uint32(*respSize))
	start := time.Now()
	end := start.Add(time.Duration(*secs) * time.Second)
	var (
		mu     sync.Mutex
		lats   []float64
		failed int64
		first  error
		wg     sync.WaitGroup
	)
	for range *parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			var mine []float64
			var bad int64
			var err1 error
			var kept net.Conn // --keep: the loop's connection, redialled after a failure
			defer func() {
				if kept != nil {
					_ = kept.Close()
				}
			}()
			for time.Now().Before(end) {
				t0 := time.Now()
				var err error
				if *keep {
					kept, err = transactOn(kept, target, msg, int64(*respSize), buf, end)
				} else {
					err = transact(target, msg, int64(*respSize), buf, end)
				}
				if err != nil {
					bad++
					if err1 == nil {
						err1 = err
					}
					if bad > 1000 && len(mine) == 0 {
						break // nothing gets through: stop hammering
					}
					continue
				}
				mine = append(mine, float64(time.Since(t0))/float64(time.Microsecond))
			}
			mu.Lock()
			lats, failed = append(lats, mine...), failed+bad
			if first == nil {
				first = err1
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	r := Result{Seconds: time.Since(start).Seconds(), Transactions: int64(len(lats)), Failed: failed}
	if first != nil {
		r.Error = first.Error()
	}
	slices.Sort(lats)
	r.P50us, r.P99us = quantile(lats, 0.50), quantile(lats, 0.99)
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		return err
	}
	if r.Transactions == 0 {
		return fmt.Errorf("no transaction completed: %s", r.Error)
	}
	return nil
}

// transact is one transaction: connect, send header and request, read the response to the server's close.
func transact(target string, msg []byte, resp int64, buf []byte, end time.Time) error {
	d := net.Dialer{Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", target)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(end.Add(5 * time.Second))
	if _, err := c.Write(msg); err != nil {
		return err
	}
	var got int64
	for {
		n, err := c.Read(buf)
		got += int64(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if got != resp {
		return fmt.Errorf("response of %d bytes, want %d", got, resp)
	}
	return nil
}

// transactOn is one transaction on connection c, dialled first when nil: send header and request, read
// the whole response. It returns the connection to use next, nil after a failure (closed).
func transactOn(c net.Conn, target string, msg []byte, resp int64, buf []byte, end time.Time) (net.Conn, error) {
	if c == nil {
		d := net.Dialer{Timeout: 5 * time.Second}
		var err error
		if c, err = d.Dial("tcp", target); err != nil {
			return nil, err
		}
		_ = c.SetDeadline(end.Add(5 * time.Second))
	}
	fail := func(err error) (net.Conn, error) {
		_ = c.Close()
		return nil, err
	}
	if _, err := c.Write(msg); err != nil {
		return fail(err)
	}
	for got := int64(0); got < resp; {
		n, err := c.Read(buf[:min(int64(len(buf)), resp-got)])
		got += int64(n)
		if err != nil {
			if got < resp {
				return fail(fmt.Errorf("response of %d bytes, want %d: %w", got, resp, err))
			}
		}
	}
	return c, nil
}

// quantile is the q-quantile of sorted xs, interpolated between the two nearest ranks; 0 when empty (JSON
// has no NaN, and no transaction took no time).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (pos-float64(i))*(xs[i+1]-xs[i])
}
