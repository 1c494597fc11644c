package collect

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tare-dev/tare/internal/pprof"
)

// topFunctions is how many functions each profile's summary keeps.
const topFunctions = 15

// flameDir makes the directory the flame graphs go to, when asked for one and there is something to
// profile; "" (and a note) when it cannot be made.
func (s *Sources) flameDir(n *notes) string {
	dir := s.opts.FlameDir
	if dir == "" || len(s.Targets) == 0 {
		return ""
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		n.add(fmt.Sprintf("flame graphs: %v", err))
		return ""
	}
	return dir
}

// takeProfile takes one CPU profile of d and summarises it, writing its flame graph into flameDir unless that
// is "". A flame graph that cannot be written leaves the summary without one, and says why in the error
// returned alongside it.
func takeProfile(ctx context.Context, t pprof.Target, d time.Duration, flameDir string) (*pprof.Summary, error) {
	p, err := pprof.Fetch(ctx, t, d)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	sum := pprof.Summarize(t.Component, p, topFunctions)
	sum.Frames = pprof.Frames(p)
	if flameDir == "" {
		return &sum, nil
	}
	path := filepath.Join(flameDir, t.Component+".svg")
	if err := writeFlame(path, t.Component, p); err != nil {
		return &sum, fmt.Errorf("flame graph of %s: %w", t.Component, err)
	}
	sum.Flame = path
	return &sum, nil
}

func writeFlame(path, component string, p *profile.Profile) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.FlameSVG(f, component+" CPU", p); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// sortProfiles keeps the profiles taken, most CPU first, and notes the errors in the targets' order.
func sortProfiles(ps []*pprof.Summary, errs []error, n *notes) []pprof.Summary {
	out := []pprof.Summary{}
	for i, p := range ps {
		if errs[i] != nil {
			n.add(errs[i].Error())
		}
		if p != nil {
			out = append(out, *p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Mc > out[j].Mc })
	return out
}
