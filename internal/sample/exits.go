package sample

import (
	"sort"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
)

// The end of a process: settled from its taskstats exit notification (creditExits), or, without one, when
// it is missing from /proc or its PID was reused (finish). Its CPU then goes into its parent's ledger
// (ledger.go) so that the parent's cutime does not count it again. Before Linux 5.19 a notification does
// not say whether it is a process's end or one thread's (kernel.ExitRecord.MaybeThread): forkedProcess
// decides.

type recentExit struct {
	id    int64
	ppid  int
	total uint64
	seq   int
	// transient: tare never read the process, which was forked and ended between two samples
	// (addTransient); its fork is among the starts the exec watcher reports for the interval.
	transient bool
}

// finish settles a process that ended without an exit notification (or whose PID was reused).
func (s *Sampler) finish(smp *Sample, st *procState) {
	smp.Exited = append(smp.Exited, st.info.ID)
	// Whether it ended or its PID was reused, its parent reaped (or will reap) all of it. With taskstats a
	// late exit notification adds what ran after the last reading.
	s.childEnded(st.info.PPID, st.info.ID, max(st.last, st.lastOwn), s.knownCut(st.info.Key.PID, st.lastCut))
	s.recent[st.info.Key.PID] = recentExit{id: st.info.ID, ppid: st.info.PPID, total: st.last, seq: s.seq}
	st.close()
	delete(s.procs, st.info.Key.PID)
}

// finishMissing settles processes that vanished from /proc without an exit notification: after two samples
// with taskstats (the notification may still be on its way), at once without it.
func (s *Sampler) finishMissing(smp *Sample, listed map[int]bool) {
	limit := 0
	if s.exits != nil {
		limit = 2
	}
	var done []*procState
	for pid, st := range s.procs {
		if listed[pid] {
			continue
		}
		st.missing++
		if st.missing <= limit {
			continue
		}
		done = append(done, st)
	}
	for _, st := range childrenFirst(done) {
		s.finish(smp, st)
	}
}

// childrenFirst orders processes that ended together so that each comes after its descendants among them:
// a child's CPU must be in its parent's ledger before the parent's ledger goes to the grandparent.
func childrenFirst(ps []*procState) []*procState {
	byPID := make(map[int]*procState, len(ps))
	for _, st := range ps {
		byPID[st.info.Key.PID] = st
	}
	kids := map[int][]*procState{}
	for _, st := range ps {
		if _, ok := byPID[st.info.PPID]; ok && st.info.PPID != st.info.Key.PID {
			kids[st.info.PPID] = append(kids[st.info.PPID], st)
		}
	}
	out := make([]*procState, 0, len(ps))
	seen := make(map[int]bool, len(ps))
	var visit func(st *procState)
	visit = func(st *procState) {
		pid := st.info.Key.PID
		if seen[pid] {
			return
		}
		seen[pid] = true
		for _, k := range kids[pid] {
			visit(k)
		}
		out = append(out, st)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].info.Key.PID < ps[j].info.Key.PID })
	for _, st := range ps {
		visit(st)
	}
	return out
}

// mergeExits keeps one record per process, the one with the most CPU (the thread-group total).
func mergeExits(recs []kernel.ExitRecord) []kernel.ExitRecord {
	byPID := map[int]int{}
	var out []kernel.ExitRecord
	for _, r := range recs {
		if i, ok := byPID[r.PID]; ok {
			if r.CPUNs > out[i].CPUNs {
				out[i] = r
			}
			continue
		}
		byPID[r.PID] = len(out)
		out = append(out, r)
	}
	return out
}

// creditExits settles processes that ended since the previous sample.
func (s *Sampler) creditExits(smp *Sample, recs []kernel.ExitRecord) {
	for _, r := range recs {
		if st, ok := s.procs[r.PID]; ok {
			ps := ProcSample{ID: st.info.ID}
			if r.CPUNs > st.last {
				ps.CPUNs = r.CPUNs - st.last
			}
			if ps.CPUNs > 0 {
				smp.Procs = append(smp.Procs, ps)
			}
			smp.Exited = append(smp.Exited, st.info.ID)
			s.recent[r.PID] = recentExit{id: st.info.ID, ppid: st.info.PPID, total: max(r.CPUNs, st.last), seq: s.seq}
			st.close()
			delete(s.procs, r.PID)
			s.childEnded(r.PPID, st.info.ID, max(r.CPUNs, st.last), s.knownCut(r.PID, st.lastCut))
			continue
		}
		if rec, ok := s.recent[r.PID]; ok { // the group total of a process whose leader was reported first
			if r.CPUNs > rec.total {
				smp.Procs = append(smp.Procs, ProcSample{ID: rec.id, CPUNs: r.CPUNs - rec.total})
				s.childEnded(rec.ppid, rec.id, r.CPUNs-rec.total, 0)
				rec.total = r.CPUNs
				s.recent[r.PID] = rec
			}
			continue
		}
		if s.baseDone[r.PID] {
			continue // ended before the window opened: the baseline booked it (baselineExits)
		}
		if r.MaybeThread && !s.forkedProcess(r.PID) {
			continue // most likely one thread of a running process: see forkedProcess
		}
		s.addTransient(smp, r)
	}
}

// forkedProcess tells, for an exit record that may be one thread's (kernel.ExitRecord.MaybeThread:
// taskstats before version 12, Linux 5.19), whether pid was a process: the exec source (proc connector or
// tracepoints) records every process forked, never a thread, and it has seen every fork that preceded
// the exit by the time the exits are drained (drainExits). A thread's exit is skipped: its CPU is in its
// process's thread-group total already, and booking it as a short-lived child would count it twice. A
// record the exec source cannot vouch for (none running, its events lost, or an entry forgotten after two
// minutes) is skipped too: if it was a child process, its parent's cutime brings its CPU when it reaps it
// (ledger.go), with 10 ms resolution and no command line, rather than a thread's CPU counting twice.
func (s *Sampler) forkedProcess(pid int) bool {
	if s.execs == nil {
		return false
	}
	_, ok := s.execs.Lookup(pid)
	return ok
}

// addTransient records a process that started and ended between two samples.
func (s *Sampler) addTransient(smp *Sample, r kernel.ExitRecord) {
	cmdline, ppid := "["+r.Comm+"]", r.PPID
	var started time.Time
	if s.execs != nil {
		if e, ok := s.execs.Lookup(r.PID); ok {
			started = e.Started
			if e.Cmdline != "" {
				cmdline = e.Cmdline
			}
			if ppid <= 1 && e.PPID > 1 {
				ppid = e.PPID // reparented to init after its parent exited
			}
		}
	}
	info := s.newInfo(r.PID, 0, ppid, r.Comm, cmdline, "", "", false)
	info.StartTime = started
	if parent := s.parentInfo(ppid); parent != nil {
		// Credited to the group that spawned it.
		info.Group, info.GroupKind, info.PodUID, info.Container = parent.Group, parent.GroupKind, parent.PodUID, parent.Container
		info.PodNS, info.PodName, info.CtrName = parent.PodNS, parent.PodName, parent.CtrName
	}
	info.BornSeq, info.ExitSeq = s.seq, s.seq
	smp.New = append(smp.New, *info)
	smp.Procs = append(smp.Procs, ProcSample{ID: info.ID, CPUNs: r.CPUNs})
	smp.Exited = append(smp.Exited, info.ID)
	s.recent[r.PID] = recentExit{id: info.ID, ppid: ppid, total: r.CPUNs, seq: s.seq, transient: true}
	s.childEnded(ppid, info.ID, r.CPUNs, s.knownCut(r.PID, 0))
}

func (s *Sampler) parentInfo(ppid int) *ProcInfo {
	if p, ok := s.procs[ppid]; ok {
		return p.info
	}
	return nil
}
