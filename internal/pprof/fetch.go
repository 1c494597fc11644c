package pprof

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tare-dev/tare/internal/bounded"
	"github.com/tare-dev/tare/internal/redact"
)

// UserAgent names tare's profile requests, so they are recognised (and discounted) in audit logs.
const UserAgent = "tare-pprof"

// Target is one component's pprof endpoint: Base is the URL that /debug/pprof/... is appended to.
type Target struct {
	Component string
	Base      string
	Client    *http.Client
}

// maxProfile bounds a fetched profile: a component's CPU profile is a few megabytes.
const maxProfile = 128 << 20

// Fetch takes a CPU profile of d (whole seconds, at least 1). Errors name the component, the URL and the
// reason (refused, forbidden, not a profile).
func Fetch(ctx context.Context, t Target, d time.Duration) (*profile.Profile, error) {
	secs := max(1, int(d.Round(time.Second)/time.Second))
	u := strings.TrimRight(t.Base, "/") + fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs)
	c := t.Client
	if c == nil {
		c = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%s pprof: bad URL %s: %w", t.Component, redact.Text(u), err)
	}
	req.Header.Set("User-Agent", UserAgent)
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s pprof at %s: %w", t.Component, redact.Text(u), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		hint := ""
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			hint = " (the credentials may not be allowed to read /debug/pprof: it needs get on the nonResourceURL /debug/*)"
		case http.StatusNotFound:
			hint = " (profiling is off: start the component with --profiling=true, or etcd with --enable-pprof)"
		}
		return nil, fmt.Errorf("%s pprof at %s: %s: %s%s", t.Component, redact.Text(u), resp.Status, redact.Text(strings.TrimSpace(string(b))), hint)
	}
	p, err := profile.Parse(bounded.Reader(resp.Body, maxProfile, t.Component+"'s profile"))
	if err != nil {
		return nil, fmt.Errorf("%s pprof at %s: not a profile: %w", t.Component, redact.Text(u), err)
	}
	return p, nil
}
