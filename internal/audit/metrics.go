package audit

import (
	"fmt"
	"io"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tare-dev/tare/internal/output"
)

// Without an audit log, kube-apiserver's own apiserver_request_total counter still says how many requests
// of each verb on each resource it served, though not who sent them.

// MetricsGap is said next to the metrics view: what it cannot tell.
const MetricsGap = "from kube-apiserver's apiserver_request_total: requests per verb and resource, but not per client (user agent), namespace or lease; for those, enable an audit log: " + EnableHint

// RequestTotals is apiserver_request_total summed per verb and resource.
type RequestTotals map[[2]string]float64

// ParseRequestTotals reads apiserver_request_total from a /metrics scrape (Prometheus text format).
func ParseRequestTotals(r io.Reader) (RequestTotals, error) {
	m, err := ParseAPIServerMetrics(r)
	return m.Requests, err
}

// APIServerMetrics are what one scrape of kube-apiserver's /metrics says of the load its clients put on
// it: the request totals, and the watches open at the moment of the scrape (the
// apiserver_longrunning_requests gauge with verb WATCH; -1 when the scrape has no such gauge).
type APIServerMetrics struct {
	Requests RequestTotals
	Watches  float64
}

// ParseAPIServerMetrics reads apiserver_request_total and the open watches from a /metrics scrape
// (Prometheus text format), parsing it once.
func ParseAPIServerMetrics(r io.Reader) (_ APIServerMetrics, err error) {
	// A scrape is untrusted input, and prometheus/common's text parser up to v0.67 panics on some of it
	// ("{}" before any metric name; prometheus/common#922): make that an error like any other bad text.
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("parsing kube-apiserver metrics: malformed text (the parser failed: %v)", v)
		}
	}()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return APIServerMetrics{}, fmt.Errorf("parsing kube-apiserver metrics: %w", err)
	}
	fam, ok := fams["apiserver_request_total"]
	if !ok {
		return APIServerMetrics{}, fmt.Errorf("kube-apiserver metrics have no apiserver_request_total")
	}
	out := RequestTotals{}
	for _, m := range fam.GetMetric() {
		var verb, resource, group, sub string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "verb":
				verb = l.GetValue()
			case "resource":
				resource = l.GetValue()
			case "group":
				group = l.GetValue()
			case "subresource":
				sub = l.GetValue()
			}
		}
		if group != "" {
			resource += "." + group
		}
		if sub != "" {
			resource += "/" + sub
		}
		if resource == "" {
			resource = "(non-resource)"
		}
		out[[2]string{verb, resource}] += m.GetCounter().GetValue()
	}
	return APIServerMetrics{Requests: out, Watches: openWatches(fams["apiserver_longrunning_requests"])}, nil
}

// openWatches sums the long-running requests whose verb is WATCH; -1 without the gauge.
func openWatches(fam *dto.MetricFamily) float64 {
	if fam == nil {
		return -1
	}
	n := 0.0
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "verb" && l.GetValue() == "WATCH" {
				n += m.GetGauge().GetValue()
			}
		}
	}
	return n
}

// MetricRow is requests of one verb on one resource between two scrapes.
type MetricRow struct {
	Verb      string  `json:"verb"`
	Resource  string  `json:"resource"`
	Requests  float64 `json:"requests"`
	PerMinute float64 `json:"requests_per_minute"`
}

// MetricsReport is the API view when there is no audit log.
type MetricsReport struct {
	Minutes   float64     `json:"minutes"`
	Requests  float64     `json:"requests"`
	PerMinute float64     `json:"requests_per_minute"`
	Rows      []MetricRow `json:"rows"`
	Missing   string      `json:"missing"`
}

// Delta is what the counters grew by between two scrapes taken minutes apart. A counter that went down
// (an API server restart) counts from zero.
func Delta(before, after RequestTotals, minutes float64) MetricsReport {
	rep := MetricsReport{Minutes: output.Round(minutes, 2), Missing: MetricsGap, Rows: []MetricRow{}}
	for k, v := range after {
		d := v - before[k]
		if d < 0 {
			d = v
		}
		if d <= 0 {
			continue
		}
		rep.Requests += d
		rep.Rows = append(rep.Rows, MetricRow{Verb: k[0], Resource: k[1], Requests: d, PerMinute: output.Round(d/max(minutes, 1.0/60), 2)})
	}
	rep.PerMinute = output.Round(rep.Requests/max(minutes, 1.0/60), 2)
	sort.Slice(rep.Rows, func(i, j int) bool {
		if rep.Rows[i].Requests != rep.Rows[j].Requests {
			return rep.Rows[i].Requests > rep.Rows[j].Requests
		}
		return rep.Rows[i].Verb+rep.Rows[i].Resource < rep.Rows[j].Verb+rep.Rows[j].Resource
	})
	return rep
}
