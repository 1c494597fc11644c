package promread_test

import (
	"context"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/promread"
	"github.com/tare-dev/tare/internal/promread/promtest"
)

var update = flag.Bool("update", false, "rewrite testdata/ with the responses of the real Prometheus")

// window is short so the test is: Prometheus scrapes every second, so five seconds hold five scrapes.
const window = 5 * time.Second

// TestReadRealPrometheus starts Debian's prometheus scraping two fake agents whose counters advance at known
// rates, reads the report back and compares it with those rates. With -update it saves the API's answers
// to the report's queries as the fixtures of TestMapFixtures.
func TestReadRealPrometheus(t *testing.T) {
	t.Parallel()
	srv := promtest.StartScenario(t, promtest.TwoNodes)
	at := srv.WaitCovered(t, len(promtest.TwoNodes), window)
	rep, err := promread.Read(t.Context(), promread.Options{URL: srv.URL, Window: window, Time: at})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(twoNodes, rep, within5); diff != "" {
		t.Errorf("report differs from the agents' rates by more than 5%% (-want +got):\n%s", diff)
	}
	if rep.Window != "5s" || rep.Prometheus != srv.URL || !rep.Time.Equal(at.UTC()) {
		t.Errorf("report header: window %q, prometheus %q, time %v; want 5s, %s, %v", rep.Window, rep.Prometheus, rep.Time, srv.URL, at)
	}
	// The targets' health, as a failing test's message shows it: every fake agent up, no error.
	if health, err := srv.TargetHealth(t.Context()); err != nil || len(health) != len(promtest.TwoNodes) {
		t.Errorf("target health: %q, %v; want one line for each of the %d agents", health, err, len(promtest.TwoNodes))
	} else {
		for _, h := range health {
			if !strings.Contains(h, ": up, \"\"") {
				t.Errorf("target %s: want up with no error", h)
			}
		}
	}

	one, err := promread.Read(t.Context(), promread.Options{URL: srv.URL, Window: window, Time: at, Node: "n2"})
	if err != nil {
		t.Fatal(err)
	}
	// n2's figures and its one pod, as the agents' rates give them (the expected report's second node and pod).
	if diff := cmp.Diff(twoNodes.Nodes[1:], one.Nodes, within5); diff != "" {
		t.Errorf("--node n2 read nodes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(twoNodes.Cluster.Pods[1:], one.Cluster.Pods, within5); diff != "" {
		t.Errorf("--node n2 read pods (-want +got):\n%s", diff)
	}
	if _, err := promread.Read(t.Context(), promread.Options{URL: srv.URL, Window: window, Time: at, Node: "n9"}); !errors.Is(err, promread.ErrNoAgents) {
		t.Errorf("a node without an agent: %v; want ErrNoAgents", err)
	}
	if *update {
		capture(t, srv, at)
	}
}

// capture writes the API's answer to each of the report's queries to testdata/twonodes/FIELD.json.
func capture(t *testing.T, srv *promtest.Server, at time.Time) {
	dir := filepath.Join("testdata", "twonodes")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, expr := range queryFields(promread.Build(window, "")) {
		body, err := srv.Raw(t.Context(), expr, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), append(body, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecordingRulesRunInPrometheus loads the shipped rules into a real Prometheus and checks what one of
// them records: per-pod CPU keyed by the measured pod's namespace and name, not the agent's (the shipped
// scrape job's honor_labels), equal to the rule's expression evaluated at the same instant.
func TestRecordingRulesRunInPrometheus(t *testing.T) {
	t.Parallel()
	srv := promtest.StartScenario(t, promtest.TwoNodes)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		n, err := srv.Count(ctx, `namespace_pod:tare_cpu_cores:rate1m{node="n1",namespace="default",pod="burner"} > 0`, time.Now())
		if err == nil && n == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the rule never recorded the burner pod on n1 (last error %v)", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	n, err := srv.Count(ctx, `namespace_pod:tare_cpu_cores:rate1m{namespace="tare"}`, time.Now())
	if err != nil || n != 0 {
		t.Errorf("%d pod series credited to the agent's own pod (err %v); want 0", n, err)
	}
	// The rule's last value agrees with its expression evaluated at the rule's evaluation time (within 5%: a
	// scrape stamped before that time may have been stored after the rule ran).
	const rule = `namespace_pod:tare_cpu_cores:rate1m{pod="burner"}`
	ts, err := srv.Value(ctx, "timestamp("+rule+")", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(int64(ts * 1000))
	recorded, err := srv.Value(ctx, rule, at)
	if err != nil {
		t.Fatal(err)
	}
	computed, err := srv.Value(ctx, promread.Build(time.Minute, "n1").Pods, at) // burner is n1's one pod
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(recorded-computed) > 0.05*computed {
		t.Errorf("rule recorded %g at %v, its expression gives %g", recorded, at, computed)
	}
}

func TestReadBadInput(t *testing.T) {
	t.Parallel()
	closed, notProm, empty := promtest.BadTargets(t)

	for _, tc := range []struct {
		name, url string
		want      []string
		is        error
	}{
		{"unreachable", closed, []string{closed, "does not answer", "connection refused", "/-/ready"}, nil},
		{"not prometheus", notProm, []string{notProm, "does not answer like a Prometheus server", "404"}, nil},
		{"no agents", empty, []string{empty, "no tare agent was scraped", "tare agent manifest", "prometheus.yml"}, promread.ErrNoAgents},
		{"no scheme", "localhost:9090", []string{"localhost:9090", "http://"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := promread.Read(t.Context(), promread.Options{URL: tc.url, Window: time.Minute})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
		})
	}
}
