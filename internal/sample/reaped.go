package sample

import (
	"fmt"
	"strconv"
	"strings"
)

// Without taskstats, processes that start and end between two samples are found through their parents:
// when a parent reaps a child, the child's whole CPU time lands in the parent's cutime/cstime. tare credits
// the growth of cutime+cstime, minus what it already credited to children it saw alive, to one synthetic
// "reaped children" process per parent. Resolution is the 10 ms clock tick, and the children's command lines
// are unknown.

// creditReaped credits the children a live process reaped since the previous sample.
func (s *Sampler) creditReaped(smp *Sample, st *procState, stat *procStat) {
	cut := stat.childTimeNs()
	if cut <= st.lastCut {
		st.lastCut = cut
		return
	}
	delta := cut - st.lastCut
	st.lastCut = cut
	seen := s.seenChildren[st.info.Key.PID]
	delete(s.seenChildren, st.info.Key.PID)
	if delta <= seen {
		return
	}
	id, ok := s.reapedBy[st.info.Key.PID]
	if !ok {
		info := s.newInfo(0, 0, st.info.Key.PID, st.info.Comm+" children",
			fmt.Sprintf("(children reaped by %s; command lines need root)", st.info.Comm), "", "", false)
		info.Group, info.GroupKind, info.PodUID, info.Container = st.info.Group, st.info.GroupKind, st.info.PodUID, st.info.Container
		info.ParentID, info.BornSeq = st.info.ID, max(1, s.seq)
		smp.New = append(smp.New, *info)
		id = info.ID
		s.reapedBy[st.info.Key.PID] = id
	}
	smp.Procs = append(smp.Procs, ProcSample{ID: id, CPUNs: delta - seen})
	smp.Exited = append(smp.Exited, id)
}

// reapedCredit remembers the CPU already credited to a child that ended, so its parent's cutime growth
// does not count it twice.
func (s *Sampler) reapedCredit(st *procState) {
	s.seenChildren[st.info.PPID] += st.credited
}

// parseCPUList counts the CPUs in a list such as "0-3,8,10-11".
func parseCPUList(s string) (int, error) {
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return 0, fmt.Errorf("cpu list %q: %w", s, err)
			}
		}
		n += b - a + 1
	}
	return n, nil
}
