package audit

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fastjson"
)

// event is the part of an audit.k8s.io/v1 Event that tare counts. Strings alias the parser's buffer and
// are copied only when they become map keys.
type event struct {
	stage, verb, userAgent, user           string
	resource, subresource, namespace, name string
	code                                   int
	at                                     time.Time
}

var errNotEvent = errors.New("not an audit event")

// parseEvent extracts the counted fields of one JSON line. The parser is reused across lines.
func parseEvent(p *fastjson.Parser, line []byte) (event, error) {
	v, err := p.ParseBytes(line)
	if err != nil {
		return event{}, fmt.Errorf("not JSON: %w", err)
	}
	if v.Type() != fastjson.TypeObject {
		return event{}, fmt.Errorf("%w: a JSON %s, not an object", errNotEvent, v.Type())
	}
	if k := string(v.GetStringBytes("kind")); k != "Event" {
		return event{}, fmt.Errorf("%w: kind %q, not Event", errNotEvent, k)
	}
	e := event{
		stage:     string(v.GetStringBytes("stage")),
		verb:      string(v.GetStringBytes("verb")),
		userAgent: string(v.GetStringBytes("userAgent")),
		user:      string(v.GetStringBytes("user", "username")),
		code:      v.GetInt("responseStatus", "code"),
	}
	if ref := v.Get("objectRef"); ref != nil {
		e.resource = string(ref.GetStringBytes("resource"))
		if g := ref.GetStringBytes("apiGroup"); len(g) > 0 {
			e.resource += "." + string(g)
		}
		e.subresource = string(ref.GetStringBytes("subresource"))
		e.namespace = string(ref.GetStringBytes("namespace"))
		e.name = string(ref.GetStringBytes("name"))
	} else {
		// Non-resource requests (/healthz, /metrics, /apis discovery) have no objectRef: count them by path.
		uri := string(v.GetStringBytes("requestURI"))
		uri, _, _ = strings.Cut(uri, "?")
		e.resource = uri
	}
	ts := v.GetStringBytes("requestReceivedTimestamp")
	if len(ts) == 0 {
		ts = v.GetStringBytes("stageTimestamp")
	}
	if len(ts) == 0 {
		return event{}, fmt.Errorf("%w: no requestReceivedTimestamp", errNotEvent)
	}
	if e.at, err = time.Parse(time.RFC3339Nano, string(ts)); err != nil {
		return event{}, fmt.Errorf("bad requestReceivedTimestamp: %w", err)
	}
	return e, nil
}

// counted says whether this event stands for its request. Each request is counted once: at
// ResponseComplete, or at ResponseStarted for watches (whose completion comes when the watch ends), or at
// Panic. RequestReceived stages are skipped: the default and lab policies omit them, and a log that keeps
// them has the request again at a later stage.
func (e event) counted() bool {
	switch e.stage {
	case "ResponseStarted":
		return e.verb == "watch"
	case "ResponseComplete":
		return e.verb != "watch"
	case "Panic":
		return true
	}
	return false
}

// ClientName strips versions, platform and build hash from a user agent, so one client keeps one name
// across upgrades: "kube-controller-manager/v1.32.4 (linux/amd64) kubernetes/59526cd/leader-election"
// becomes "kube-controller-manager/leader-election", "kubectl/v1.32.4 (linux/amd64) kubernetes/59526cd"
// becomes "kubectl", "Go-http-client/2.0" becomes "Go-http-client".
func ClientName(ua string) string {
	if ua == "" {
		return "(no user agent)"
	}
	var parts []string
	for _, f := range strings.Fields(stripParens(ua)) {
		for i, seg := range strings.Split(f, "/") {
			switch {
			case seg == "":
			case isVersion(seg):
			case i == 0 && seg == "kubernetes" && len(parts) > 0:
				// "kubernetes/<commit>" after the program name: the build, not the client.
			case i == 1 && strings.HasPrefix(f, "kubernetes/") && len(parts) > 0:
				// the commit (or "$Format" in a build without version stamps)
			default:
				parts = append(parts, seg)
			}
		}
	}
	if len(parts) == 0 {
		return ua
	}
	return strings.Join(parts, "/")
}

func stripParens(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isVersion matches v1.32.4, 1.32.4, 2.0, v1.32.4-gke.100, v0.0.0-master+$Format:%H$.
func isVersion(s string) bool {
	s = strings.TrimPrefix(s, "v")
	if s == "" || s[0] < '0' || s[0] > '9' {
		return false
	}
	return strings.Contains(s, ".")
}
