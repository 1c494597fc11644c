package promread

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"

	"github.com/tare-dev/tare/internal/bounded"
	"github.com/tare-dev/tare/internal/warning"
)

// queryTimeout bounds a whole Read: a server that accepts connections but never answers is named, not
// waited on forever.
const queryTimeout = 30 * time.Second

// maxAnswer bounds one answer of Prometheus: tare's queries return a few series per node.
const maxAnswer = 256 << 20

// Options say what Read asks Prometheus for.
type Options struct {
	URL    string        // the Prometheus server, e.g. http://prometheus:9090
	Window time.Duration // how far back the rates reach; at least a second
	Node   string        // one node's figures only; "" for every node
	Top    int           // groups and pods the table lists; 0 for all
	Time   time.Time     // end of the window; zero for now
}

// Read queries Prometheus at o.URL and returns the Report. An error names the URL and what to check; when
// Prometheus holds no tare series it wraps ErrNoAgents.
func Read(ctx context.Context, o Options) (Report, error) {
	if o.Window < time.Second {
		return Report{}, fmt.Errorf("window %v is too short: give at least a second (e.g. 10m)", o.Window)
	}
	if err := checkURL(o.URL); err != nil {
		return Report{}, err
	}
	client, err := api.NewClient(api.Config{Address: o.URL, RoundTripper: bounded.Transport(api.DefaultRoundTripper, maxAnswer)})
	if err != nil {
		return Report{}, fmt.Errorf("prometheus %s: %w", o.URL, err)
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	at := o.Time
	if at.IsZero() {
		at = time.Now()
	}
	q := Build(o.Window, o.Node)
	var r Results
	var warnings []string
	// The CPUs query comes first: it fails fast on a URL that is not Prometheus and tells whether there is
	// anything to read.
	qapi := v1.NewAPI(client)
	if r.CPUs, warnings, err = query(ctx, qapi, o.URL, q.CPUs, at); err != nil {
		return Report{}, err
	}
	if len(r.CPUs) == 0 {
		return Report{}, noAgents(o)
	}
	jobs := []struct {
		expr string
		dst  *model.Vector
	}{
		{q.Busy, &r.Busy}, {q.Overhead, &r.Overhead}, {q.KubeletRuntime, &r.KubeletRuntime}, {q.Self, &r.Self},
		{q.Groups, &r.Groups}, {q.Memory, &r.Memory}, {q.ControlPlane, &r.ControlPlane}, {q.Pods, &r.Pods},
		{q.First, &r.First}, {q.Samples, &r.Samples},
	}
	ws := make([][]string, len(jobs))
	g, gctx := errgroup.WithContext(ctx)
	for i, job := range jobs {
		g.Go(func() error {
			v, w, err := query(gctx, qapi, o.URL, job.expr, at)
			*job.dst, ws[i] = v, w
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return Report{}, err
	}
	rep, err := Map(r)
	if err != nil {
		return Report{}, noAgents(o)
	}
	rep.Prometheus, rep.Window, rep.Time, rep.Top = o.URL, model.Duration(o.Window).String(), at.UTC(), o.Top
	for _, w := range ws {
		warnings = append(warnings, w...)
	}
	for _, w := range warnings {
		rep.Warnings = append(rep.Warnings, warning.Warning{Code: WarnPrometheus, Message: "prometheus: " + w})
	}
	rep.Warnings = append(rep.Warnings, coverageWarnings(r, at, o.Window)...)
	return rep, nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("prometheus URL %q: give the server's address with its scheme, e.g. http://prometheus:9090", s)
	}
	return nil
}

func noAgents(o Options) error {
	where := "any node"
	if o.Node != "" {
		where = fmt.Sprintf("node %q", o.Node)
	}
	return fmt.Errorf("%w: prometheus %s has no tare series for %s in the last %v: deploy the agents "+
		"(tare agent manifest | kubectl apply -f -) and add the tare-agent scrape job of deploy/prometheus/prometheus.yml "+
		"to Prometheus's configuration", ErrNoAgents, o.URL, where, model.Duration(o.Window))
}

// query runs one instant query and turns the client's errors into ones that say what to check.
func query(ctx context.Context, a v1.API, base, expr string, at time.Time) (model.Vector, []string, error) {
	val, warnings, err := a.Query(ctx, expr, at)
	if err != nil {
		return nil, nil, explain(base, expr, err)
	}
	vec, ok := val.(model.Vector)
	if !ok {
		return nil, nil, fmt.Errorf("prometheus %s answered %s with a %s, not an instant vector", base, expr, val.Type())
	}
	return vec, warnings, nil
}

func explain(base, expr string, err error) error {
	var apiErr *v1.Error
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("prometheus %s did not answer within %v (%w): check that it is Prometheus and not overloaded "+
			"(curl %s/-/ready)", base, queryTimeout, err, strings.TrimSuffix(base, "/"))
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("querying prometheus %s: %w", base, err)
	case errors.As(err, &apiErr) && notPrometheus(apiErr):
		return fmt.Errorf("%s does not answer like a Prometheus server (%w): check that the URL is Prometheus's web "+
			"address, with its --web.route-prefix if it has one", base, err)
	case errors.As(err, &apiErr):
		return fmt.Errorf("prometheus %s refused the query %s: %w", base, expr, err)
	case errors.As(err, &opErr), errors.As(err, &netErr):
		return fmt.Errorf("prometheus %s does not answer (%w): check the URL and that Prometheus runs and is reachable "+
			"from here (curl %s/-/ready)", base, err, strings.TrimSuffix(base, "/"))
	default:
		return fmt.Errorf("querying prometheus %s: %w", base, err)
	}
}

// notPrometheus tells an answer no Prometheus gives (a body that is not the API's JSON, a 404 page) from
// Prometheus refusing a query.
func notPrometheus(e *v1.Error) bool {
	switch e.Type {
	case v1.ErrBadResponse:
		return true
	case v1.ErrClient, v1.ErrServer:
		return !strings.Contains(e.Detail, `"status"`)
	}
	return false
}
