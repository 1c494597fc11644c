package audit

import (
	"bytes"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/redact"
)

// Report is what an audit log says about the API's clients. Rates are per minute of the counted span.
type Report struct {
	Source      string    `json:"source,omitempty"`
	Lines       int       `json:"lines"`
	Events      int       `json:"events"`
	Requests    int       `json:"requests"`
	OutOfWindow int       `json:"out_of_window"`
	BadLines    int       `json:"bad_lines"`
	Bad         []BadLine `json:"bad,omitempty"`
	From        time.Time `json:"from,omitzero"`
	To          time.Time `json:"to,omitzero"`
	Minutes     float64   `json:"minutes"`
	PerMinute   float64   `json:"requests_per_minute"`
	Clients     []Client  `json:"clients"`
	Rows        []Row     `json:"rows"`
	// LeaderElection lists lease renewals by leader-electing components (lease locks in any namespace but
	// kube-node-lease, whose leases are node heartbeats).
	LeaderElection []Lease `json:"leader_election"`
	// NodeLeases counts node heartbeats (kube-node-lease), for comparison.
	NodeLeases []Lease `json:"node_heartbeats"`
	// Hot lists list and watch calls repeated more than HotPerMinute times a minute by one client.
	Hot []Row `json:"hot_list_watch"`
}

// HotPerMinute is the list/watch rate above which a client is highlighted: an informer lists once and
// then watches, so a client that lists a resource more than once every 10 s is polling, not watching.
const HotPerMinute = 6.0

// Client is one user agent, versions stripped.
type Client struct {
	Name      string   `json:"name"`
	Users     []string `json:"users"`
	Requests  int      `json:"requests"`
	PerMinute float64  `json:"requests_per_minute"`
	SharePct  float64  `json:"share_percent"`
	Errors    int      `json:"errors"` // responses with code >= 400
	// Series is requests per minute, one entry per minute from the report's From (truncated to the minute).
	Series []int `json:"per_minute_series"`
}

// Row is one client's requests of one verb on one resource in one namespace.
type Row struct {
	Client    string  `json:"client"`
	Verb      string  `json:"verb"`
	Resource  string  `json:"resource"`
	Namespace string  `json:"namespace,omitempty"`
	Requests  int     `json:"requests"`
	PerMinute float64 `json:"requests_per_minute"`
}

// Lease is one client renewing one lease.
type Lease struct {
	Client    string  `json:"client"`
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	Renewals  int     `json:"renewals"` // update and patch
	Reads     int     `json:"reads"`    // get
	PerMinute float64 `json:"renewals_per_minute"`
}

type rowKey struct{ client, verb, resource, namespace string }
type leaseKey struct{ client, namespace, name string }

type clientAcc struct {
	users   map[string]int
	n, errs int
	minutes map[int64]int
}

type aggregator struct {
	opts        Options
	r           Report
	rows        map[rowKey]int
	leases      map[leaseKey]*Lease
	clients     map[string]*clientAcc
	names       map[string]string // user agent -> client name
	first, last time.Time
}

func newAggregator(opts Options) *aggregator {
	return &aggregator{opts: opts, rows: map[rowKey]int{}, leases: map[leaseKey]*Lease{},
		clients: map[string]*clientAcc{}, names: map[string]string{}}
}

func (a *aggregator) bad(line int, reason string) {
	a.r.BadLines++
	if len(a.r.Bad) < a.opts.MaxBadLines {
		a.r.Bad = append(a.r.Bad, BadLine{Line: line, Reason: reason})
	}
}

// chunk counts every line of a chunk.
func (a *aggregator) chunk(p *fastjson.Parser, c chunk) {
	n := c.firstLine
	for b := c.data; len(b) > 0; n++ {
		i := bytes.IndexByte(b, '\n')
		line := b
		if i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		a.line(p, n, bytes.TrimRight(line, "\r"))
	}
}

// merge adds another aggregator's tallies (of other chunks of the same log) to a's.
func (a *aggregator) merge(o *aggregator) {
	a.r.Lines += o.r.Lines
	a.r.Events += o.r.Events
	a.r.Requests += o.r.Requests
	a.r.OutOfWindow += o.r.OutOfWindow
	a.r.BadLines += o.r.BadLines
	a.r.Bad = append(a.r.Bad, o.r.Bad...)
	sort.Slice(a.r.Bad, func(i, j int) bool { return a.r.Bad[i].Line < a.r.Bad[j].Line })
	if len(a.r.Bad) > a.opts.MaxBadLines {
		a.r.Bad = a.r.Bad[:a.opts.MaxBadLines]
	}
	if !o.first.IsZero() && (a.first.IsZero() || o.first.Before(a.first)) {
		a.first = o.first
	}
	if o.last.After(a.last) {
		a.last = o.last
	}
	for k, n := range o.rows {
		a.rows[k] += n
	}
	for k, l := range o.leases {
		if m := a.leases[k]; m != nil {
			m.Renewals += l.Renewals
			m.Reads += l.Reads
		} else {
			a.leases[k] = l
		}
	}
	for name, c := range o.clients {
		m := a.clients[name]
		if m == nil {
			a.clients[name] = c
			continue
		}
		m.n += c.n
		m.errs += c.errs
		for u, n := range c.users {
			m.users[u] += n
		}
		for t, n := range c.minutes {
			m.minutes[t] += n
		}
	}
}

func (a *aggregator) line(p *fastjson.Parser, n int, b []byte) {
	a.r.Lines++
	if len(bytes.TrimSpace(b)) == 0 {
		return
	}
	e, err := parseEvent(p, b)
	if err != nil {
		// Never echo the line: it may carry a secret. Say what kind of damage it is.
		reason := err.Error()
		if !errors.Is(err, errNotEvent) && strings.HasPrefix(reason, "not JSON") {
			reason = "not JSON"
			if b[0] == '{' && b[len(b)-1] != '}' {
				reason = "not JSON (cut short: the line does not end with })"
			}
		}
		a.bad(n, redact.Text(reason))
		return
	}
	a.r.Events++
	if !e.counted() {
		return
	}
	if (!a.opts.From.IsZero() && e.at.Before(a.opts.From)) || (!a.opts.To.IsZero() && !e.at.Before(a.opts.To)) {
		a.r.OutOfWindow++
		return
	}
	a.count(e)
}

func (a *aggregator) count(e event) {
	a.r.Requests++
	if a.first.IsZero() || e.at.Before(a.first) {
		a.first = e.at
	}
	if e.at.After(a.last) {
		a.last = e.at
	}
	name, ok := a.names[e.userAgent]
	if !ok {
		name = ClientName(redact.Text(e.userAgent))
		a.names[strings.Clone(e.userAgent)] = name
	}
	c := a.clients[name]
	if c == nil {
		c = &clientAcc{users: map[string]int{}, minutes: map[int64]int{}}
		a.clients[name] = c
	}
	c.n++
	c.users[e.user]++
	c.minutes[e.at.Unix()/60]++
	if e.code >= 400 {
		c.errs++
	}
	resource := e.resource
	if e.subresource != "" {
		resource += "/" + e.subresource
	}
	a.rows[rowKey{name, e.verb, resource, e.namespace}]++
	if strings.HasPrefix(e.resource, "leases.") && e.name != "" {
		k := leaseKey{name, e.namespace, e.name}
		l := a.leases[k]
		if l == nil {
			l = &Lease{Client: name, Namespace: e.namespace, Name: e.name}
			a.leases[k] = l
		}
		switch e.verb {
		case "update", "patch":
			l.Renewals++
		case "get":
			l.Reads++
		}
	}
}

// report finishes the counts: rates, shares, sorting, redaction of free text.
func (a *aggregator) report() *Report {
	r := a.r
	r.From, r.To = a.first, a.last
	if !a.opts.From.IsZero() {
		r.From = a.opts.From
	}
	if !a.opts.To.IsZero() {
		r.To = a.opts.To
	}
	span := r.To.Sub(r.From)
	if span < time.Second {
		span = time.Second
	}
	r.Minutes = span.Minutes()
	rate := func(n int) float64 { return output.Round(float64(n)/r.Minutes, 2) }
	r.PerMinute = rate(r.Requests)
	startMin := r.From.Unix() / 60
	for name, c := range a.clients {
		cl := Client{Name: name, Requests: c.n, PerMinute: rate(c.n), Errors: c.errs,
			SharePct: output.Round(output.Percent(float64(c.n), float64(r.Requests)), 2)}
		for u := range c.users {
			cl.Users = append(cl.Users, redact.Text(u))
		}
		sort.Strings(cl.Users)
		endMin := r.To.Add(-time.Nanosecond).Unix() / 60 // To is exclusive
		for m := startMin; m <= endMin && m-startMin < 100000; m++ {
			cl.Series = append(cl.Series, c.minutes[m])
		}
		r.Clients = append(r.Clients, cl)
	}
	sort.Slice(r.Clients, func(i, j int) bool {
		if r.Clients[i].Requests != r.Clients[j].Requests {
			return r.Clients[i].Requests > r.Clients[j].Requests
		}
		return r.Clients[i].Name < r.Clients[j].Name
	})
	for k, n := range a.rows {
		row := Row{Client: k.client, Verb: k.verb, Resource: redact.Text(k.resource), Namespace: k.namespace, Requests: n, PerMinute: rate(n)}
		r.Rows = append(r.Rows, row)
		if (k.verb == "list" || k.verb == "watch") && row.PerMinute > HotPerMinute {
			r.Hot = append(r.Hot, row)
		}
	}
	sortRows(r.Rows)
	sortRows(r.Hot)
	for _, l := range a.leases {
		l.PerMinute = rate(l.Renewals)
		if l.Namespace == "kube-node-lease" {
			r.NodeLeases = append(r.NodeLeases, *l)
		} else {
			r.LeaderElection = append(r.LeaderElection, *l)
		}
	}
	sortLeases(r.LeaderElection)
	sortLeases(r.NodeLeases)
	return &r
}

func sortRows(rs []Row) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Requests != rs[j].Requests {
			return rs[i].Requests > rs[j].Requests
		}
		a, b := rs[i], rs[j]
		return a.Client+a.Verb+a.Resource+a.Namespace < b.Client+b.Verb+b.Resource+b.Namespace
	})
}

func sortLeases(ls []Lease) {
	sort.Slice(ls, func(i, j int) bool {
		if ls[i].Renewals != ls[j].Renewals {
			return ls[i].Renewals > ls[j].Renewals
		}
		return ls[i].Client+ls[i].Name < ls[j].Client+ls[j].Name
	})
}
