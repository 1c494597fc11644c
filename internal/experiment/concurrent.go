package experiment

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tare-dev/tare/internal/compare"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/summary"
)

// A concurrent experiment (target.lab.concurrent) runs every variant of a round at the same time, each on
// its share of the replicas, and measures them in one window: what the machine does to every lab at once
// (its memory speed drifting, a neighbour's build, a burst of interrupts) hits the variants alike and
// cancels. Each round deals the labs to the variants anew, at random in equal shares (seeded with the
// spec's seed, so --resume deals the same): a lab's own level (its etcd's size, the phase of its periodic
// work) is then measured on every variant in turn and removed by the lab-level estimate
// (stats.LabEffect), and, unlike shares that rotate in a fixed order, no lab's periodic work can keep
// landing on the same variant. A trial is one variant's share in one round's window: its metrics summed
// over the share's labs, and lab by lab (Trial.Labs), from the processes of those labs (ofLabs: as the
// labs' states record them, or whose command line names a lab's directory) and of the run commands
// started beside them.

// concurrent says whether the spec runs a round's variants at once, each on its share of the replicas.
func (s *Spec) concurrent() bool { return s.Target.Lab != nil && s.Target.Lab.Concurrent }

// dealLabs is the variant (index in the spec's variants, of v) each of labs labs runs in round: a random
// permutation of the labs, seeded by the spec's seed and the round, dealt to the variants in turn, so
// each variant gets labs/v of them.
func dealLabs(seed uint64, round, labs, v int) []int {
	// PCG's first outputs barely differ for states that barely do: the round is mixed in first.
	perm := rand.New(rand.NewPCG(mix(seed^mix(uint64(round))), mix(uint64(round)+0xdea1))).Perm(labs)
	out := make([]int, labs)
	for i, k := range perm {
		out[k] = i % v
	}
	return out
}

// mix is splitmix64's finaliser: every bit of x moves about half of the result's.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// concurrentMetrics are the metric families a concurrent experiment can split by lab: the processes'
// and the API servers'. Node busy is the whole machine's, every share's at once.
var concurrentMetrics = []string{compare.ControlPlaneCPU, compare.ComponentCPU, compare.ComponentMemory, compare.EtcdWrites, compare.APIRequests}

// roundEnd is the index after the last trial of the round trial i belongs to (a round's trials are
// stored together).
func roundEnd(trials []Trial, i int) int {
	j := i
	for j < len(trials) && trials[j].Round == trials[i].Round {
		j++
	}
	return j
}

// round runs the trials of one round of a concurrent experiment at once: every lab switched to its
// variant (the varied components restarted, all labs in parallel), each variant's scale, guard and run
// commands on its share, one window over the node, and each trial's metrics from its share's processes.
func (r *Runner) round(ctx context.Context, ts []*Trial) error {
	spec := r.Store.Spec
	lt := spec.Target.Lab
	dirs := r.labDirs()
	nv := len(spec.Variants)
	round := ts[0].Round
	// Started with the first variant's flags: variants that share the labs then all run them (no retune
	// follows), and a retune only changes what differs.
	base, err := labSets(lt, spec.Variants[0])
	if err != nil {
		return err
	}
	up := r.upOptions(lt, base, true)
	sts, err := r.ensureLabs(ctx, up, dirs)
	if err != nil {
		return err
	}
	variantAt := make([]Variant, len(dirs))
	for k, v := range dealLabs(spec.Seed, round, len(dirs), nv) {
		variantAt[k] = spec.Variants[v]
	}
	since := time.Now()
	if !spec.SharedLab() {
		sets := make([][]lab.Tuning, len(dirs))
		for k, v := range variantAt {
			if sets[k], err = labSets(lt, v); err != nil {
				return err
			}
		}
		if sts, err = r.retuneAll(ctx, dirs, sets, spec.variedComponents()); err != nil {
			return err
		}
	}
	var kcs []string
	for _, st := range sts {
		kcs = append(kcs, st.Kubeconfig)
	}
	cls, err := connectAll(kcs)
	if err != nil {
		return err
	}
	share := map[string][]int{} // variant name: its labs' indexes
	for k, v := range variantAt {
		share[v.Name] = append(share[v.Name], k)
	}
	first := map[string]*Trial{} // the round's trial of each variant
	for _, t := range ts {
		t.Started = since
		t.Guard = map[string]float64{}
		first[t.Variant] = t
	}
	for k, v := range variantAt {
		if err := scale(ctx, cls[k].Clientset(), v.Scale); err != nil {
			return fmt.Errorf("lab %d of %d (%s): %w", k+1, len(cls), v.Name, err)
		}
	}
	if spec.Guard.apiLatency() {
		for name, labs := range share {
			ms, err := apiLatency(ctx, cls[labs[0]].Clientset())
			if err != nil {
				return fmt.Errorf("variant %s: %w", name, err)
			}
			if t := first[name]; t != nil {
				t.Guard[GuardLatency] = ms
			}
		}
	}
	runShells := make([][]sample.ProcKey, len(dirs)) // by lab
	var runs []runAt
	for k, v := range variantAt {
		t := first[v.Name]
		if v.Run == "" || t == nil {
			continue
		}
		log := filepath.Join(r.Store.Dir, fmt.Sprintf("trial-%03d-run-%d.log", t.Seq, k+1))
		runs = append(runs, runAt{v: v, logPath: log, kubeconfig: sts[k].Kubeconfig, replica: k + 1})
	}
	if len(runs) > 0 {
		shells, stop, err := startRuns(ctx, r.Store.Dir, runs)
		if err != nil {
			return err
		}
		defer stop()
		for i, sh := range shells { // in the order of runs, each beside lab replica - 1
			k := runs[i].replica - 1
			runShells[k] = append(runShells[k], sh)
		}
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(spec.Warmup.Duration):
	}
	lead := ts[0]
	res, rates, err := r.record(ctx, lead, cls, false)
	if err != nil {
		return err
	}
	// measure is the metrics of the labs at indexes ks, from their processes in the window.
	measure := func(ks []int) (map[string]float64, error) {
		var marks []string
		var procs []lab.Process
		var shells []sample.ProcKey
		for _, k := range ks {
			marks = append(marks, dirs[k]+string(filepath.Separator))
			procs = append(procs, sts[k].Processes...)
			shells = append(shells, runShells[k]...)
		}
		keep, err := ofLabs(res.Samples, procs, marks, shells)
		if err != nil {
			return nil, err
		}
		sum := summary.Build(res.Meta, res.Samples, summary.Options{Keep: func(p sample.ProcInfo) bool { return keep[p.ID] }})
		return compare.Measure(sum, rates.perMinute(ks), spec.Metrics), nil
	}
	for _, t := range ts {
		labs := share[t.Variant]
		if t.Metrics, err = measure(labs); err != nil {
			return fmt.Errorf("variant %s: %w", t.Variant, err)
		}
		t.Labs = t.Labs[:0]
		for _, k := range labs {
			m, err := measure([]int{k})
			if err != nil {
				return fmt.Errorf("variant %s, lab %d: %w", t.Variant, k+1, err)
			}
			t.Labs = append(t.Labs, compare.LabMetrics{Lab: k + 1, Metrics: m})
		}
		t.Recording, t.Warnings = lead.Recording, lead.Warnings
	}
	return nil
}

// ofLabs picks the processes of a share of labs from a window's samples: the labs' own (procs, by PID
// and start time as their states record them, exact even where a command line could not be read; or a
// command line naming one of the labs' directories, marks, each ending in a separator), the run commands'
// shells beside them (by PID and start time; a start time of 0 matches the PID alone), and their
// descendants. A lab process the window never saw
// is an error: the share would be measured short.
func ofLabs(samples []sample.Sample, procs []lab.Process, marks []string, shells []sample.ProcKey) (map[int64]bool, error) {
	infos := map[int64]sample.ProcInfo{}
	seen := map[int][]uint64{} // PID: the start times the window saw
	for _, smp := range samples {
		for _, p := range smp.New {
			infos[p.ID] = p
			seen[p.Key.PID] = append(seen[p.Key.PID], p.Key.Start)
		}
	}
	// started says whether the lab's p (its PID matched) started at start; a state without the start
	// time goes by PID.
	started := func(p lab.Process, start uint64) bool { return p.StartTicks == 0 || p.StartTicks == start }
	labProc := map[int]lab.Process{}
	var missing []string
	for _, p := range procs {
		labProc[p.PID] = p
		if !slices.ContainsFunc(seen[p.PID], func(start uint64) bool { return started(p, start) }) {
			missing = append(missing, fmt.Sprintf("%s (PID %d)", p.Name, p.PID))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the window's recording lacks %s of the share's labs: the share is not measured whole", strings.Join(missing, ", "))
	}
	own := func(p sample.ProcInfo) bool {
		if lp, ok := labProc[p.Key.PID]; ok && started(lp, p.Key.Start) {
			return true
		}
		if slices.ContainsFunc(shells, func(k sample.ProcKey) bool { return k.PID == p.Key.PID && (k.Start == 0 || k.Start == p.Key.Start) }) {
			return true
		}
		for _, m := range marks {
			if strings.Contains(p.Cmdline, m) {
				return true
			}
		}
		return false
	}
	keep := map[int64]bool{}
	for id, p := range infos {
		for cur, depth := p, 0; depth < 64; depth++ {
			if own(cur) {
				keep[id] = true
				break
			}
			parent, ok := infos[cur.ParentID]
			if cur.ParentID == 0 || !ok {
				break
			}
			cur = parent
		}
	}
	return keep, nil
}
