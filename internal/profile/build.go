package profile

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tare-dev/tare/internal/classify"
)

// Label keys of every sample: tare's group and its kind, the pod (namespace/name, or UID when the API
// did not name it), the container, the command (comm) and, as a numeric label, the PID.
const (
	LabelGroup     = "group"
	LabelKind      = "kind"
	LabelPod       = "pod"
	LabelContainer = "container"
	LabelCommand   = "command"
	LabelPID       = "pid"
)

// Filter keeps part of the node's samples; its zero value keeps all.
type Filter struct {
	PID   int    // only this process
	Group string // only this group (as the group label shows it)
	Pod   string // only this pod, namespace/name (or UID)
}

func (f Filter) keep(pid int, l labels) bool {
	switch {
	case f.PID != 0 && pid != f.PID:
		return false
	case f.Group != "" && l.group != f.Group:
		return false
	case f.Pod != "" && l.pod != f.Pod:
		return false
	}
	return true
}

// BuildOptions say how samples are labelled and which are kept.
type BuildOptions struct {
	// SelfPID is tare's own PID, grouped as tare (self).
	SelfPID int
	// PodNames names pods by UID and containers by ID (through the API); nil labels pods by UID.
	PodNames func(uid, container string) (namespace, name, containerName string, ok bool)
	Filter   Filter
}

// labels are one process's sample labels.
type labels struct {
	group, kind, pod, container, command string
}

// classifyProc labels a process as the sampler groups it (internal/classify), naming its pod when it can.
func classifyProc(p *Proc, o BuildOptions) labels {
	if p == nil || p.Err != nil && p.Identity.Stat.Comm == "" {
		return labels{group: "other", kind: classify.KindOther, command: "[exited]"}
	}
	id := p.Identity
	c := classify.Process(id.Exe, id.Stat.Comm, id.Cmdline, id.Cgroup, id.Kernel, p.PID == o.SelfPID)
	l := labels{group: c.Group, kind: c.Kind, command: id.Stat.Comm}
	if c.InPod {
		l.pod, l.container = c.Pod.UID, c.Pod.Container
		if o.PodNames != nil {
			if ns, name, ctr, ok := o.PodNames(c.Pod.UID, c.Pod.Container); ok {
				l.pod, l.container = ns+"/"+name, ctr
				if c.Kind == classify.KindPod {
					l.group = "pod " + l.pod
				}
			}
		}
	}
	return l
}

// Build turns a recording into a pprof profile: one sample per perf sample (values: 1 sample and its CPU in
// ns), frames named by sym, labelled per process. Samples outside o.Filter are left out.
func Build(raw *Raw, sym *Symbolizer, o BuildOptions) *profile.Profile {
	period := int64(time.Second) / int64(raw.Frequency)
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        period,
		TimeNanos:     raw.Start.UnixNano(),
		DurationNanos: raw.Elapsed.Nanoseconds(),
		Comments: []string{fmt.Sprintf("tare profile: event %s at %d Hz on %d CPUs for %s; %d samples lost",
			raw.Event.Name, raw.Frequency, raw.CPUs, raw.Elapsed.Round(time.Millisecond), raw.Lost)},
	}
	// go tool pprof names the profile after its first mapping ("File:"): the node, not the kernel.
	p.Mapping = append(p.Mapping, &profile.Mapping{ID: 1, File: "[every process on the node]", HasFunctions: true})
	b := builder{p: p, locs: map[[2]string]*profile.Location{}, funcs: map[string]*profile.Function{}, maps: map[string]*profile.Mapping{}}
	byPID := map[uint32]labels{}
	kept := make([]bool, len(raw.Samples))
	for i, s := range raw.Samples {
		l, ok := byPID[s.PID]
		if !ok {
			l = labels{group: "kernel threads", kind: classify.KindKernel, command: "swapper"}
			if s.PID != 0 {
				l = classifyProc(raw.Procs[s.PID], o)
			}
			byPID[s.PID] = l
		}
		if kept[i] = o.Filter.keep(int(s.PID), l); kept[i] {
			sym.Want(s.Chain, raw.Procs[s.PID]) // every address first: each binary's symbols are read once
		}
	}
	for i, s := range raw.Samples {
		if !kept[i] {
			continue
		}
		l := byPID[s.PID]
		v := period
		if raw.Event == cpuClock && s.Period > 0 {
			v = int64(s.Period)
		}
		frames := sym.Frames(s.Chain, raw.Procs[s.PID])
		smp := &profile.Sample{Value: []int64{1, v}, Location: make([]*profile.Location, 0, len(frames)),
			Label:    map[string][]string{LabelGroup: {l.group}, LabelKind: {l.kind}, LabelCommand: {l.command}},
			NumLabel: map[string][]int64{LabelPID: {int64(s.PID)}}}
		if l.pod != "" {
			smp.Label[LabelPod] = []string{l.pod}
		}
		if l.container != "" {
			smp.Label[LabelContainer] = []string{l.container}
		}
		for _, f := range frames {
			smp.Location = append(smp.Location, b.location(f))
		}
		p.Sample = append(p.Sample, smp)
	}
	return p
}

// builder dedups the profile's functions, locations and mappings: one location per function and binary.
type builder struct {
	p     *profile.Profile
	locs  map[[2]string]*profile.Location
	funcs map[string]*profile.Function
	maps  map[string]*profile.Mapping
}

func (b *builder) location(f Frame) *profile.Location {
	key := [2]string{f.Name, f.Module}
	if l, ok := b.locs[key]; ok {
		return l
	}
	fn, ok := b.funcs[f.Name]
	if !ok {
		fn = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: f.Name, SystemName: f.Name}
		b.funcs[f.Name] = fn
		b.p.Function = append(b.p.Function, fn)
	}
	m, ok := b.maps[f.Module]
	if !ok {
		m = &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), File: f.Module, HasFunctions: true}
		b.maps[f.Module] = m
		b.p.Mapping = append(b.p.Mapping, m)
	}
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Mapping: m, Line: []profile.Line{{Function: fn}}}
	b.locs[key] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

// GroupedByGroup returns a copy of p whose every stack starts (at its root) with a frame named after the
// sample's group, so that a flame graph's first level is tare's groups.
func GroupedByGroup(p *profile.Profile) *profile.Profile {
	q := p.Copy()
	roots := map[string]*profile.Location{}
	for _, s := range q.Sample {
		g := "[no group]"
		if v := s.Label[LabelGroup]; len(v) > 0 {
			g = v[0]
		}
		l, ok := roots[g]
		if !ok {
			fn := &profile.Function{ID: uint64(len(q.Function) + 1), Name: g}
			q.Function = append(q.Function, fn)
			l = &profile.Location{ID: uint64(len(q.Location) + 1), Line: []profile.Line{{Function: fn}}}
			q.Location = append(q.Location, l)
			roots[g] = l
		}
		// A new slice: the parsed copy's samples share one backing array, so append would overwrite the
		// next sample's leaf.
		s.Location = append(slices.Clip(s.Location), l)
	}
	return q
}

// GroupOf returns the samples of one group as a profile of their own. It shares p's samples, locations,
// functions and mappings (it copies none of them, which for a large profile cost more than summing it), so
// it is for reading only.
func GroupOf(p *profile.Profile, group string) *profile.Profile {
	q := &profile.Profile{SampleType: p.SampleType, PeriodType: p.PeriodType, Period: p.Period, TimeNanos: p.TimeNanos,
		DurationNanos: p.DurationNanos, Comments: p.Comments, Mapping: p.Mapping, Location: p.Location, Function: p.Function}
	for _, s := range p.Sample {
		if v := s.Label[LabelGroup]; len(v) > 0 && v[0] == group {
			q.Sample = append(q.Sample, s)
		}
	}
	return q
}
