package progress

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/tare-dev/tare/internal/sample"
)

// trailing is the span the live figures average over.
const trailing = 3 * time.Second

// redraw limits how often the line is drawn.
const redraw = 250 * time.Millisecond

// Line is one status line on a terminal.
type Line struct {
	mu      sync.Mutex
	w       io.Writer
	width   func() int
	label   string
	start   time.Time
	total   time.Duration
	groups  map[int64]string // process ID -> group
	meta    sample.Meta      // what the samples come from, for node busy (zero: /proc/stat busy)
	prev    *sample.Sample   // the node part of the previous sample
	window  []interval
	drawn   bool
	lastOut time.Time
	now     func() time.Time
	stop    chan struct{} // ends the ticker that keeps the clock moving between samples
}

// interval is one sample's share of the live figures.
type interval struct {
	elapsed time.Duration
	busyNs  float64
	groups  map[string]uint64
}

// Terminal says whether both files are terminals.
func Terminal(out, errOut io.Writer) bool {
	o, ok1 := out.(*os.File)
	e, ok2 := errOut.(*os.File)
	return ok1 && ok2 && term.IsTerminal(int(o.Fd())) && term.IsTerminal(int(e.Fd()))
}

// New draws on w, a terminal. Start begins a timed phase.
func New(w io.Writer) *Line {
	l := &Line{w: w, now: time.Now, groups: map[int64]string{}, width: func() int { return 100 }}
	if f, ok := w.(*os.File); ok {
		l.width = func() int {
			if c, _, err := term.GetSize(int(f.Fd())); err == nil && c > 20 {
				return c
			}
			return 100
		}
	}
	return l
}

// Start begins a phase of total length (0: open-ended) named label, and resets the live figures.
func (l *Line) Start(label string, total time.Duration) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.label, l.total, l.start = label, total, l.now()
	l.prev, l.window = nil, nil
	l.draw(true)
	if l.stop == nil {
		// Between samples (and in phases without any, such as a lab starting) the clock still moves.
		l.stop = make(chan struct{})
		go l.tick(l.stop)
	}
}

func (l *Line) tick(stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			l.mu.Lock()
			l.draw(false)
			l.mu.Unlock()
		}
	}
}

// Measuring tells the line what the samples it will observe come from, so that its node busy is the
// figure the report prints (sample.BusyMeter). Without it, node busy is /proc/stat busy.
func (l *Line) Measuring(m sample.Meta) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.meta = m
}

// Observe takes one sample into the live figures and redraws (at most 4 times a second).
func (l *Line) Observe(s sample.Sample) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range s.New {
		l.groups[p.ID] = p.Group
	}
	cur := sample.Sample{Time: s.Time, Elapsed: s.Elapsed, Node: s.Node}
	if l.prev != nil && s.Elapsed > 0 {
		pair := []sample.Sample{*l.prev, cur}
		busy := sample.NewBusyMeter(l.meta, pair).Between(pair[0], pair[1])
		iv := interval{elapsed: s.Elapsed, busyNs: busy * 1e9, groups: map[string]uint64{}}
		for _, p := range s.Procs {
			if g := l.groups[p.ID]; g != "" && p.CPUNs > 0 {
				iv.groups[g] += p.CPUNs
			}
		}
		l.window = append(l.window, iv)
		var span time.Duration
		for i := len(l.window) - 1; i >= 0; i-- {
			span += l.window[i].elapsed
			if span > trailing {
				l.window = l.window[i:]
				break
			}
		}
	}
	l.prev = &cur
	l.draw(false)
}

// Printf prints a line of its own above the status line.
func (l *Line) Printf(format string, a ...any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	fmt.Fprintf(l.w, format+"\n", a...)
	l.draw(true)
}

// Done removes the status line.
func (l *Line) Done() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	l.label = ""
	if l.stop != nil {
		close(l.stop)
		l.stop = nil
	}
}

func (l *Line) clear() {
	if l.drawn {
		fmt.Fprint(l.w, "\r\x1b[2K")
		l.drawn = false
	}
}

func (l *Line) draw(force bool) {
	if l.label == "" {
		return
	}
	now := l.now()
	if !force && now.Sub(l.lastOut) < redraw {
		return
	}
	l.lastOut = now
	line := text(l.label, now.Sub(l.start), l.total, l.window)
	if r, w := []rune(line), l.width()-1; len(r) > w {
		line = string(r[:w])
	}
	fmt.Fprint(l.w, "\r\x1b[2K"+line)
	l.drawn = true
}

// text is the status line: label, elapsed / total (remaining), node busy and the three busiest groups
// over the trailing intervals.
func text(label string, elapsed, total time.Duration, window []interval) string {
	var b strings.Builder
	b.WriteString(label)
	b.WriteString(" " + clock(elapsed))
	if total > 0 {
		left := max(total-elapsed, 0)
		fmt.Fprintf(&b, " / %s (%s left)", clock(total), clock(left))
	}
	var span time.Duration
	var busy float64
	groups := map[string]float64{}
	for _, iv := range window {
		span += iv.elapsed
		busy += iv.busyNs
		for g, ns := range iv.groups {
			groups[g] += float64(ns)
		}
	}
	if span <= 0 {
		return b.String()
	}
	mc := func(ns float64) float64 { return ns / float64(span.Nanoseconds()) * 1000 }
	fmt.Fprintf(&b, " · node %.0fm", mc(busy))
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Slice(names, func(i, j int) bool {
		if groups[names[i]] != groups[names[j]] {
			return groups[names[i]] > groups[names[j]]
		}
		return names[i] < names[j]
	})
	var top []string
	for _, g := range names[:min(3, len(names))] {
		top = append(top, fmt.Sprintf("%s %.0fm", g, mc(groups[g])))
	}
	if len(top) > 0 {
		b.WriteString(" · " + strings.Join(top, ", "))
	}
	return b.String()
}

// clock is a duration as m:ss, or h:mm:ss from an hour.
func clock(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s%3600/60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
