package agent

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/testload"
)

func TestMain(m *testing.M) {
	testload.Main()
	os.Exit(m.Run())
}

// running is an agent started in-process on 127.0.0.1:0 for one test.
type running struct {
	url    string
	client *http.Client
	mu     sync.Mutex
	times  map[int]time.Time // sample Seq -> its time
	seqs   chan int          // every sample's Seq, as it lands (dropped when nobody reads)
	stop   func() error      // cancels the agent and returns Run's error
}

// startAgent runs the agent with o (its listener, hook and defaults filled in) until the test ends, and
// waits for its first sample.
func startAgent(t *testing.T, o Options) *running {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &running{url: "http://" + ln.Addr().String(), client: &http.Client{Timeout: 10 * time.Second},
		times: map[int]time.Time{}, seqs: make(chan int, 1)}
	if o.Access != nil { // TLS, with a certificate the agent made: not verified
		r.url = "https://" + ln.Addr().String()
		r.client.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // the agent's own certificate
	}
	o.Listener = ln
	if o.Interval == 0 {
		o.Interval = 200 * time.Millisecond
	}
	if o.Window == 0 {
		o.Window = 20 * time.Second
	}
	if o.TopProcesses == 0 {
		o.TopProcesses = 20
	}
	o.Version, o.Node = "test", "test-node"
	o.OnSample = func(x sample.Sample) {
		r.mu.Lock()
		r.times[x.Seq] = x.Time
		r.mu.Unlock()
		select {
		case r.seqs <- x.Seq:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	var once sync.Once
	var runErr error
	r.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(15 * time.Second):
				runErr = errors.New("the agent did not stop within 15s of its context being cancelled")
			}
			r.client.CloseIdleConnections()
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("stopping the agent: %v", err)
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		if code, _ := r.get(t, "/healthz"); code == http.StatusOK {
			return r
		}
		select {
		case err := <-done:
			t.Fatalf("the agent stopped before its first sample: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent took no sample within 15s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// get fetches path and returns the status and body.
func (r *running) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := r.client.Get(r.url + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// sampleTime is the time of the sample with seq, as the hook saw it.
func (r *running) sampleTime(t *testing.T, seq int) time.Time {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.times[seq]
	if !ok {
		t.Fatalf("no sample %d was seen", seq)
	}
	return at
}

// nextSample waits for the next sample to land.
func (r *running) nextSample(t *testing.T) int {
	t.Helper()
	select {
	case <-r.seqs: // one that may have been waiting
	default:
	}
	select {
	case seq := <-r.seqs:
		return seq
	case <-time.After(10 * time.Second):
		t.Fatal("no sample within 10s")
		return 0
	}
}

// scrape is one /metrics text: each series (name{labels}) and its value, and the number of lines.
type scrape struct {
	values map[string]float64
	lines  int
	text   string
}

func (r *running) scrape(t *testing.T) scrape {
	t.Helper()
	code, body := r.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	return parseScrape(t, body)
}

func parseScrape(t *testing.T, body string) scrape {
	t.Helper()
	s := scrape{values: map[string]float64{}, text: body}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		s.lines++
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		s.values[line[:i]] = v
	}
	return s
}

// sum adds the values of every series of metric whose labels contain all of match (`name="value"` each).
func (s scrape) sum(metric string, match ...string) (float64, int) {
	var total float64
	n := 0
	for series, v := range s.values {
		name, labels, _ := strings.Cut(series, "{")
		if name != metric {
			continue
		}
		ok := true
		for _, m := range match {
			ok = ok && strings.Contains(labels, m)
		}
		if ok {
			total += v
			n++
		}
	}
	return total, n
}

// seq is the Seq of the last sample the scrape reflects.
func (s scrape) seq(t *testing.T) int {
	t.Helper()
	n, ok := s.values["tare_samples_total"]
	if !ok {
		t.Fatal("the scrape has no tare_samples_total")
	}
	return int(n) - 1
}

// requireTiming skips tests whose ground truth is the timing of real processes in -short runs (make test
// runs the race detector with -short, where everything runs ten times slower).
func requireTiming(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: real-process timing tests run in the pass without the race detector")
	}
}
