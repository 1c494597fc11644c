package agent

import (
	"sync"
	"time"

	"github.com/tare-dev/tare/internal/classify"
	"github.com/tare-dev/tare/internal/redact"
	"github.com/tare-dev/tare/internal/sample"
)

// groupKey names one group's series: a component, kernel threads, tare itself, other processes, or one
// container of a pod (namespace, pod and container are empty unless kind is pod).
type groupKey struct{ group, kind, ns, pod, ctr string }

// podKey is a groupKey without the container: the series that sum a pod's containers.
type podKey struct{ group, kind, ns, pod string }

func (k groupKey) podOf() podKey { return podKey{k.group, k.kind, k.ns, k.pod} }

// proc is a process the agent knows: one that lives, or that a sample in the ring names.
type proc struct {
	info    sample.ProcInfo // Comm and Group redacted (Cmdline is redacted by the sampler)
	key     groupKey
	cpuNs   uint64            // credited since the agent started
	winNs   uint64            // credited in the samples the ring holds
	refs    int               // rows and exits naming it in the ring
	exitSeq int               // the sample that reported its end; 0 while it lives
	last    sample.ProcSample // its last detail reading (HasDetail false until there is one)
}

// group is one groupKey's counters since the agent started.
type group struct {
	cpuNs, childNs, runs uint64
	readB, writeB        uint64
	live                 int         // processes of the group alive now
	seen                 time.Time   // the last sample in which it lived or used CPU
	io                   *ioCounters // block I/O, nil until the group does some (and without the tracer)
}

// state is everything the agent serves, updated by the sampling goroutine and read by the HTTP handlers.
type state struct {
	mu     sync.RWMutex
	window time.Duration
	ring   []sample.Sample // circular, New stripped: identities live in procs
	head   int             // index of the oldest sample
	n      int             // samples held
	procs  map[int64]*proc
	groups map[groupKey]*group

	meta    sample.Meta
	samples uint64
	first   sample.NodeCPU // /proc/stat at the first sample
	prev    sample.Sample  // the previous sample's node part, for the last interval
	busy    map[sample.Reference]float64
	// noTask is the CPU on no task summed over every interval (sample.BusyMeter.Parts), noTaskShown the
	// most of it node busy has been credited so far.
	noTask, noTaskShown float64
	nodeCPU             sample.NodeCPU // /proc/stat since the first sample
	selfNs              uint64
	bpf                 bpfState // tare's in-kernel BPF time (selfbpf.go)
	took                time.Duration
	gap, res            float64 // unattributed and its resolution over the last interval, in cores
	warnings            map[string]uint64
	io                  blockIOState
}

func newState(ringLen int, window time.Duration) *state {
	return &state{window: window, ring: make([]sample.Sample, ringLen), procs: map[int64]*proc{},
		groups: map[groupKey]*group{}, busy: map[sample.Reference]float64{}, warnings: map[string]uint64{}}
}

// warn counts a warning of kind.
func (s *state) warn(kind string) {
	s.mu.Lock()
	s.warnings[kind]++
	s.mu.Unlock()
}

// add takes one sample: it credits the counters and pushes the sample into the ring.
func (s *state) add(x sample.Sample, meta sample.Meta) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.meta = meta
	for _, info := range x.New {
		s.born(info, x.Time)
	}
	var procNs, selfNs uint64
	for _, ps := range x.Procs {
		p := s.procs[ps.ID]
		if p == nil {
			continue
		}
		g := s.groupOf(p.key, x.Time)
		if s.samples > 0 { // the baseline's rows carry no CPU of the window
			p.cpuNs += ps.CPUNs
			g.cpuNs += ps.CPUNs
			if ps.CPUNs > 0 {
				g.seen = x.Time
			}
			if p.info.Self {
				selfNs += ps.CPUNs
			} else {
				procNs += ps.CPUNs
			}
		}
		if ps.HasDetail {
			s.disk(p, g, ps)
			p.last = ps
		}
	}
	s.selfNs += selfNs
	s.bpf.add(x.SelfBPF, s.samples == 0)
	for _, id := range x.Exited {
		if p := s.procs[id]; p != nil && p.exitSeq == 0 {
			s.ended(p, x)
		}
	}
	s.node(x, meta, procNs+selfNs)
	s.push(x)
	s.sweep(x.Time)
	s.samples++
	s.took = x.Took
}

// born registers a new process under its redacted identity.
func (s *state) born(info sample.ProcInfo, at time.Time) {
	info.Comm, info.Group = redact.Text(info.Comm), redact.Text(info.Group)
	info.Cmdline = redact.Text(info.Cmdline) // already redacted by the sampler: masking twice is harmless
	p := &proc{info: info, key: keyOf(info)}
	s.procs[info.ID] = p
	g := s.groupOf(p.key, at)
	g.live++
	g.seen = at
}

func keyOf(info sample.ProcInfo) groupKey {
	k := groupKey{group: info.Group, kind: info.GroupKind}
	if info.GroupKind != classify.KindPod {
		return k
	}
	k.ns, k.pod, k.ctr = info.PodNS, info.PodName, info.CtrName
	if k.pod == "" { // pods not named through the API keep their UID
		k.pod = info.PodUID
	}
	if k.ctr == "" && info.Container != "" {
		k.ctr = info.Container[:min(12, len(info.Container))]
	}
	return k
}

func (s *state) groupOf(k groupKey, at time.Time) *group {
	g := s.groups[k]
	if g == nil {
		g = &group{seen: at}
		s.groups[k] = g
	}
	return g
}

// disk credits the bytes a process read and wrote since its previous detail reading; a process born while
// the agent runs brings all its bytes, an older one's first reading is its baseline.
func (s *state) disk(p *proc, g *group, ps sample.ProcSample) {
	switch {
	case p.last.HasDetail:
		if ps.ReadBytes > p.last.ReadBytes {
			g.readB += ps.ReadBytes - p.last.ReadBytes
		}
		if ps.WriteBytes > p.last.WriteBytes {
			g.writeB += ps.WriteBytes - p.last.WriteBytes
		}
	case p.info.BornSeq > 0:
		g.readB += ps.ReadBytes
		g.writeB += ps.WriteBytes
	}
}

// ended settles a process whose end sample x reports: a short-lived one (born while the agent runs and
// gone within the window) counts as a run of its nearest long-lived ancestor's group, with its CPU.
func (s *state) ended(p *proc, x sample.Sample) {
	p.exitSeq = x.Seq
	if g := s.groups[p.key]; g != nil {
		g.live--
	}
	if !s.shortLived(p, x) {
		return
	}
	a := s.ancestor(p)
	if a == nil {
		return
	}
	g := s.groupOf(a.key, x.Time)
	g.childNs += p.cpuNs
	g.runs++
}

func (s *state) shortLived(p *proc, x sample.Sample) bool {
	if p.info.BornSeq == 0 || p.info.Self {
		return false
	}
	if !p.info.StartTime.IsZero() {
		return x.Time.Sub(p.info.StartTime) <= s.window
	}
	return time.Duration(x.Seq-p.info.BornSeq)*s.meta.Interval <= s.window
}

// ancestor is the nearest ancestor of p that is not itself short-lived (born while the agent runs and
// ended), or nil when the agent does not know one.
func (s *state) ancestor(p *proc) *proc {
	cur := p
	for range 64 {
		par := s.procs[cur.info.ParentID]
		if cur.info.ParentID == 0 || par == nil {
			return nil
		}
		if par.info.BornSeq == 0 || par.exitSeq == 0 {
			return par
		}
		cur = par
	}
	return nil
}

// node credits node busy and /proc/stat, and the last interval's reconciliation: node busy minus every
// process's CPU (tare's included), in cores.
func (s *state) node(x sample.Sample, meta sample.Meta, procNs uint64) {
	if s.samples == 0 {
		s.first = x.Node.CPU
		s.busy[sample.NewBusyMeter(meta, []sample.Sample{x}).Ref] = 0 // exported from the first scrape on
	} else {
		pair := []sample.Sample{s.prev, x}
		m := sample.NewBusyMeter(meta, pair)
		ref, notask := m.Parts(s.prev, x)
		// The CPU on no task is summed raw, so that its 10 ms noise cancels as it does over a window, and
		// exported as its highest sum so far, so that the counter never goes back.
		s.noTask += notask
		shown := max(s.noTaskShown, s.noTask)
		busy := ref + shown - s.noTaskShown
		s.noTaskShown = shown
		s.busy[m.Ref] += busy
		if el := x.Elapsed.Seconds(); el > 0 {
			s.gap = (busy - float64(procNs)/1e9) / el
			s.res = m.Window(pair).Resolution / 1000
		}
	}
	s.nodeCPU = x.Node.CPU.Sub(s.first)
	s.prev = sample.Sample{Seq: x.Seq, Time: x.Time, Elapsed: x.Elapsed, Took: x.Took, Node: x.Node}
}

// push stores x in the ring, evicting the oldest sample when it is full.
func (s *state) push(x sample.Sample) {
	if s.n == len(s.ring) {
		s.evict(s.ring[s.head])
		s.ring[s.head] = sample.Sample{}
		s.head = (s.head + 1) % len(s.ring)
		s.n--
	}
	x.New = nil
	for _, ps := range x.Procs {
		if p := s.procs[ps.ID]; p != nil {
			p.refs++
			p.winNs += ps.CPUNs
		}
	}
	for _, id := range x.Exited {
		if p := s.procs[id]; p != nil {
			p.refs++
		}
	}
	s.ring[(s.head+s.n)%len(s.ring)] = x
	s.n++
}

// evict forgets a sample leaving the ring, and the ended processes no sample names any more.
func (s *state) evict(old sample.Sample) {
	drop := func(id int64, cpu uint64) {
		p := s.procs[id]
		if p == nil {
			return
		}
		p.refs--
		p.winNs -= min(cpu, p.winNs)
		if p.refs <= 0 && p.exitSeq != 0 {
			delete(s.procs, id)
		}
	}
	for _, ps := range old.Procs {
		drop(ps.ID, ps.CPUNs)
	}
	for _, id := range old.Exited {
		drop(id, 0)
	}
}

// sweep deletes the series of groups that have had no process alive and used no CPU for longer than the
// window, so that churning pods do not grow the series count.
func (s *state) sweep(now time.Time) {
	for k, g := range s.groups {
		if g.live > 0 {
			g.seen = now
			continue
		}
		if now.Sub(g.seen) > s.window {
			delete(s.groups, k)
		}
	}
}

// at is the i-th sample of the ring, oldest first.
func (s *state) at(i int) *sample.Sample { return &s.ring[(s.head+i)%len(s.ring)] }
