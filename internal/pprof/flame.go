package pprof

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"html"
	"io"
	"sort"

	"github.com/google/pprof/profile"
)

// node is one frame in the call tree: its function, CPU with callees, and callees by name.
type node struct {
	name     string
	value    int64
	children map[string]*node
}

func (n *node) child(name string) *node {
	if n.children == nil {
		n.children = map[string]*node{}
	}
	c := n.children[name]
	if c == nil {
		c = &node{name: name}
		n.children[name] = c
	}
	return c
}

func (n *node) sorted() []*node {
	out := make([]*node, 0, len(n.children))
	for _, c := range n.children {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name }) // alphabetical, as flamegraph.pl
	return out
}

func tree(p *profile.Profile) *node {
	root := &node{name: "all"}
	idx := cpuIndex(p)
	if idx < 0 {
		return root
	}
	for _, s := range p.Sample {
		v, ok := sampleCPU(s, idx, root.value)
		if !ok {
			continue
		}
		root.value += v
		n := root
		for _, f := range frames(s) {
			n = n.child(f)
			n.value += v
		}
	}
	return root
}

const (
	flameWidth  = 1200.0
	frameHeight = 16.0
	minWidthPx  = 0.3 // frames narrower than this are left out, as flamegraph.pl does
)

// FlameSVG writes a flame graph of the profile's CPU: the root at the bottom, callees above their
// callers, width proportional to CPU, one <title> per frame for its name and share. The SVG is static
// (no script), so it opens anywhere and embeds in the HTML report.
func FlameSVG(w io.Writer, title string, p *profile.Profile) error {
	root := tree(p)
	depth := maxDepth(root, 0)
	height := float64(depth+1)*frameHeight + 40
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Verdana, sans-serif" font-size="11">`+"\n",
		flameWidth+20, height, flameWidth+20, height)
	fmt.Fprintf(bw, `<rect x="0" y="0" width="100%%" height="100%%" fill="#f8f8f8"/><text x="%.0f" y="18" text-anchor="middle" font-size="15">%s</text>`+"\n",
		(flameWidth+20)/2, html.EscapeString(title))
	if frames := layout(root, minWidthPx/flameWidth); len(frames) > 0 {
		total := frames[0].End
		for _, f := range frames {
			x, wpx := f.Start/total*flameWidth, (f.End-f.Start)/total*flameWidth
			y := height - float64(f.Level+1)*frameHeight - 4
			fmt.Fprintf(bw, `<g><title>%s (%.2f%%, %.1f ms)</title><rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s" rx="2"/>`,
				html.EscapeString(f.Name), 100*(f.End-f.Start)/total, f.End-f.Start, 10+x, y, wpx, frameHeight-1, color(f.Name))
			if label := fit(f.Name, wpx); label != "" {
				fmt.Fprintf(bw, `<text x="%.2f" y="%.1f">%s</text>`, 13+x, y+frameHeight-4, html.EscapeString(label))
			}
			fmt.Fprint(bw, "</g>\n")
		}
	}
	fmt.Fprint(bw, "</svg>\n")
	return bw.Flush()
}

func maxDepth(n *node, d int) int {
	m := d
	for _, c := range n.children {
		m = max(m, maxDepth(c, d+1))
	}
	return m
}

// fit shortens a name to the frame's width (about 7 px a character), or nothing if not even two fit.
func fit(name string, wpx float64) string {
	n := int((wpx - 6) / 7)
	switch {
	case n < 3:
		return ""
	case len(name) <= n:
		return name
	}
	return name[:n-2] + ".."
}

// color is a warm hue chosen by the function's name, so a function keeps its colour across graphs.
func color(name string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	v := h.Sum32()
	return fmt.Sprintf("rgb(%d,%d,%d)", 205+v%50, 80+(v>>8)%130, 40+(v>>16)%50)
}

// Frame is one box of a flame graph laid out for a chart: its depth (0 is the root, "all"), where it
// starts and ends on the CPU axis (milliseconds from the left edge) and its function.
type Frame struct {
	Level int     `json:"level"`
	Start float64 `json:"start_ms"`
	End   float64 `json:"end_ms"`
	Name  string  `json:"name"`
}

// minFrameShare: frames below this share of the profile are left out of Frames (at 1200 px, narrower
// than a pixel), which bounds the list for the HTML report.
const minFrameShare = 1.0 / 1200

// Frames lays out the flame graph of the profile's CPU as FlameSVG draws it: callees above their callers,
// siblings in alphabetical order, frames narrower than 1/1200 of the total left out.
func Frames(p *profile.Profile) []Frame { return layout(tree(p), minFrameShare) }

// layout places the frames of the call tree, depth first: each callee starts where its caller (or the
// sibling before it) does, siblings alphabetical, frames below minShare of the root left out with
// their callees. FlameSVG draws it; Frames hands it to the HTML report.
func layout(root *node, minShare float64) []Frame {
	if root.value <= 0 {
		return nil
	}
	var out []Frame
	var walk func(n *node, x int64, level int)
	walk = func(n *node, x int64, level int) {
		if float64(n.value) < minShare*float64(root.value) {
			return
		}
		out = append(out, Frame{Level: level, Start: float64(x) / 1e6, End: float64(x+n.value) / 1e6, Name: n.name})
		for _, c := range n.sorted() {
			walk(c, x, level+1)
			x += c.value
		}
	}
	walk(root, 0, 0)
	return out
}
