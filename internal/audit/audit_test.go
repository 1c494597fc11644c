package audit

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestClientName(t *testing.T) {
	for ua, want := range map[string]string{
		"kube-controller-manager/v1.32.4 (linux/amd64) kubernetes/59526cd/leader-election":                                  "kube-controller-manager/leader-election",
		"kube-controller-manager/v1.32.4 (linux/amd64) kubernetes/59526cd/system:serviceaccount:kube-system:job-controller": "kube-controller-manager/system:serviceaccount:kube-system:job-controller",
		"kubectl/v1.32.4 (linux/amd64) kubernetes/59526cd":                                                                  "kubectl",
		"kubelet/v1.29.0+k3s1 (linux/arm64) kubernetes/abcdef0":                                                             "kubelet",
		"kube-apiserver/v0.0.0 (linux/amd64) kubernetes/$Format":                                                            "kube-apiserver",
		"Go-http-client/2.0": "Go-http-client",
		"coredns/1.11.1":     "coredns",
		"":                   "(no user agent)",
		"kwok/v0.8.0 (linux/amd64) kubernetes/v0.8.0":                       "kwok",
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0.0": "Mozilla/AppleWebKit/Chrome",
	} {
		if got := ClientName(ua); got != want {
			t.Errorf("ClientName(%q) = %q, want %q", ua, got, want)
		}
	}
}

func TestStream(t *testing.T) {
	from := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	r, err := File(context.Background(), "testdata/audit.log", Options{From: from, To: from.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	// Four bad lines, each with its number: free text, a JSON array, another kind, a line cut short.
	var badAt []int
	for _, b := range r.Bad {
		badAt = append(badAt, b.Line)
	}
	if diff := cmp.Diff([]int{12, 23, 34, 147}, badAt); diff != "" || r.BadLines != 4 {
		t.Errorf("bad lines (-want +got):\n%s%+v", diff, r.Bad)
	}
	if !strings.Contains(r.Bad[3].Reason, "cut short") {
		t.Errorf("last line's reason = %q, want it called cut short", r.Bad[3].Reason)
	}
	// 60 + 60 lease requests, 6 heartbeats, one watch counted once, 12 lists, one curl; the RequestReceived
	// stage is not a request of its own; the create at 10:01:10 is outside the window.
	if r.Requests != 140 || r.OutOfWindow != 1 || r.Minutes != 1 {
		t.Errorf("requests %d, out of window %d, minutes %v; want 140, 1, 1", r.Requests, r.OutOfWindow, r.Minutes)
	}
	want := []Lease{
		{Client: "kube-controller-manager/leader-election", Namespace: "kube-system", Name: "kube-controller-manager", Renewals: 30, Reads: 30, PerMinute: 30},
		{Client: "kube-scheduler/leader-election", Namespace: "kube-system", Name: "kube-scheduler", Renewals: 30, Reads: 30, PerMinute: 30},
	}
	if diff := cmp.Diff(want, r.LeaderElection); diff != "" {
		t.Errorf("leader election (-want +got):\n%s", diff)
	}
	if len(r.NodeLeases) != 1 || r.NodeLeases[0].Renewals != 6 {
		t.Errorf("node heartbeats = %+v, want node1 renewing 6 times", r.NodeLeases)
	}
	if len(r.Hot) != 1 || r.Hot[0].Client != "poller" || r.Hot[0].Verb != "list" || r.Hot[0].PerMinute != 12 {
		t.Errorf("hot list/watch = %+v, want the poller's 12 lists a minute", r.Hot)
	}
	if r.Clients[0].Requests != 60 || len(r.Clients[0].Series) != 1 || r.Clients[0].Series[0] != 60 {
		t.Errorf("top client = %+v", r.Clients[0])
	}
}

func TestStreamWithoutWindowUsesTheLogsSpan(t *testing.T) {
	r, err := File(context.Background(), "testdata/audit.log", Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 10:00:00.1 to 10:01:10: 69.9 s.
	if r.Requests != 141 || r.Minutes < 1.16 || r.Minutes > 1.17 {
		t.Errorf("requests %d over %v minutes, want 141 over 69.9 s", r.Requests, r.Minutes)
	}
	for _, c := range r.Clients {
		if c.Name == "kubectl" && (len(c.Series) != 2 || c.Series[0] != 1 || c.Series[1] != 1) {
			t.Errorf("kubectl per-minute series = %v, want [1 1]", c.Series)
		}
	}
}

func TestSecretsNeverLeave(t *testing.T) {
	r, err := File(context.Background(), "testdata/audit.log", Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"sekret123", "sekret456", "hunter2"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("report leaks %q: %s", secret, b)
		}
	}
	if !strings.Contains(string(b), `"curl`) {
		t.Errorf("the client with a secret in its user agent is missing: %s", b)
	}
}

func TestMissingLogSaysHowToEnable(t *testing.T) {
	_, err := File(context.Background(), "testdata/nope.log", Options{})
	if !errors.Is(err, ErrNoLog) || !strings.Contains(err.Error(), "--audit-log-path") || !strings.Contains(err.Error(), "tare lab up --audit") {
		t.Errorf("err = %v, want ErrNoLog with how to enable an audit log", err)
	}
}

func TestStreamLongLineAndCancel(t *testing.T) {
	long := `{"kind":"Event","stage":"ResponseComplete","verb":"get","userAgent":"x/1.0","requestReceivedTimestamp":"2026-11-21T10:00:00Z","requestURI":"/` + strings.Repeat("a", 3<<20) + `"}` + "\n"
	r, err := Stream(context.Background(), strings.NewReader(long+long), Options{})
	if err != nil || r.Requests != 2 || r.BadLines != 0 {
		t.Fatalf("two 3 MiB lines: %+v, %v", r, err)
	}
	// Ctrl-C after the first chunk: what was read is counted, the rest is not read.
	ctx, cancel := context.WithCancel(context.Background())
	many := strings.Repeat(`{"kind":"Event","stage":"ResponseComplete","verb":"get","userAgent":"x/1.0","requestReceivedTimestamp":"2026-11-21T10:00:00Z"}`+"\n", 100000)
	reader := &cancelAfterRead{r: strings.NewReader(many), cancel: cancel}
	r, err = Stream(ctx, reader, Options{})
	// What was read is every whole line in the bytes the reader handed over, counted here from those bytes.
	read := strings.Count(many[:reader.n], "\n")
	if !errors.Is(err, context.Canceled) || r == nil || r.Requests != read || read == 0 || read == 100000 {
		t.Errorf("cancelled stream: %v, report %v; want the %d whole lines of the %d bytes read and the context's error", err, r, read, reader.n)
	}
}

func TestMetricsDelta(t *testing.T) {
	before, err := ParseRequestTotals(strings.NewReader(`# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="",verb="GET",version=""} 7
`))
	if err != nil {
		t.Fatal(err)
	}
	after, err := ParseRequestTotals(strings.NewReader(`# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 160
apiserver_request_total{code="409",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="",verb="GET",version=""} 8
`))
	if err != nil {
		t.Fatal(err)
	}
	got := Delta(before, after, 2)
	want := []MetricRow{{Verb: "PUT", Resource: "leases.coordination.k8s.io", Requests: 62, PerMinute: 31}, {Verb: "GET", Resource: "(non-resource)", Requests: 1, PerMinute: 0.5}}
	if diff := cmp.Diff(want, got.Rows); diff != "" || got.Requests != 63 || !strings.Contains(got.Missing, "audit") {
		t.Errorf("delta (-want +got):\n%s%+v", diff, got)
	}
	if _, err := ParseRequestTotals(strings.NewReader("up 1\n")); err == nil {
		t.Error("metrics without apiserver_request_total: no error")
	}
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }

type cancelAfterRead struct {
	r      io.Reader
	cancel context.CancelFunc
	n      int // bytes handed over
}

func (c *cancelAfterRead) Read(p []byte) (int, error) {
	defer c.cancel()
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
