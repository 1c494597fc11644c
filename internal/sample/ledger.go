package sample

import (
	"fmt"

	"github.com/tare-dev/tare/internal/kernel"
)

// The child-CPU ledger. When a parent reaps a child, the kernel adds the child's whole CPU to the parent's
// cutime+cstime: the child's own utime+stime and, recursively, its own cutime+cstime (every descendant it
// reaped). tare keeps one ledger per process for that counter: what tare already knows the counter will
// gain, because the CPU was credited to someone in the window or was spent before the window (baseline).
// Each reading of a parent's cutime compares its growth with that expectation; only the balance is new CPU:
//
//   - with taskstats, the balance is the teardown of children after their exit notification (the kernel
//     sends it before freeing the address space and files: a few hundred microseconds for a Go binary), and
//     is credited to the latest child that ended;
//   - without taskstats, the balance is the CPU of children tare never saw alive (started and ended between
//     two samples), credited to one synthetic "<comm> children" process of the parent.
//
// What a child brings to its parent's ledger when it ends is its total CPU (all of it: what ran before the
// window is baseline, what ran inside was credited) plus what tare knew of its own cutime: the last reading
// and whatever its own ledger still expected. Forgetting the second part credits CPU that a process tree
// spent before the window to the window in which its middle process exits (issue 14's phantom CPU). The
// balance is cumulative, so the 10 ms resolution of cutime does not add up over a window; a negative
// balance (a child expected but not yet reaped) waits for the reap.

// ledger is one process's cutime+cstime account. It is keyed by PID and may exist before tare has seen the
// process alive (its children's exit notifications arrive first) or after it ended (until its parent's
// ledger takes it over).
type ledger struct {
	expected  uint64 // CPU of ended children accounted for, not yet seen in cutime+cstime
	balance   int64  // cutime growth minus expected, carried over between readings
	lastChild int64  // ProcInfo.ID credited with a positive balance (with taskstats)
	checks    int    // readings left before an idle, balanced ledger is dropped
	stale     int    // samples in a row its process was not followed (dropped after a few)
}

// ledgerChecks is how many samples a ledger stays after a child ended: reaping may lag the exit.
const ledgerChecks = 3

func (s *Sampler) ledgerOf(pid int) *ledger {
	l := s.ledgers[pid]
	if l == nil {
		l = &ledger{}
		s.ledgers[pid] = l
	}
	return l
}

// childEnded notes that a child of ppid ended with total CPU cpu (ns) and known cutime knownCut: its parent's
// cutime will grow by their sum (plus the child's teardown) when it reaps it. id is the child's ProcInfo.ID
// (0 for a baseline child tare never followed).
func (s *Sampler) childEnded(ppid int, id int64, cpu, knownCut uint64) {
	if ppid <= 0 {
		return
	}
	l := s.ledgerOf(ppid)
	l.expected += cpu + knownCut
	if id != 0 {
		l.lastChild = id
	}
	l.checks, l.stale = ledgerChecks, 0
}

// knownCut closes the ledger of a process that ended and returns what tare knew of its cutime+cstime: the
// last reading (lastCut) plus the children it still expected, and the reaps a negative balance waited for.
func (s *Sampler) knownCut(pid int, lastCut uint64) uint64 {
	l := s.ledgers[pid]
	if l == nil {
		return lastCut
	}
	delete(s.ledgers, pid)
	known := lastCut + l.expected
	if l.balance < 0 {
		known += uint64(-l.balance)
	}
	return known
}

// settle books a reading cut of a followed process's cutime+cstime and credits the balance: to the latest
// ended child with taskstats, to the synthetic children process without it. At the baseline sample the
// balance is dropped: whatever the counter holds then was spent before the window.
func (s *Sampler) settle(smp *Sample, st *procState, cut uint64) {
	pid := st.info.Key.PID
	l := s.ledgers[pid]
	if cut < st.lastCut { // cannot shrink; a PID reused under our feet
		st.lastCut = cut
	}
	growth := cut - st.lastCut
	st.lastCut = cut
	if l == nil {
		if growth == 0 {
			return
		}
		l = s.ledgerOf(pid)
	}
	l.balance += int64(growth) - int64(l.expected)
	l.expected = 0
	switch {
	case l.balance > 0 && s.seq == 0:
		l.balance = 0
	case l.balance > 0 && s.ts != nil && l.lastChild != 0:
		smp.Procs = append(smp.Procs, ProcSample{ID: l.lastChild, CPUNs: uint64(l.balance)})
		l.balance = 0
	case l.balance > 0:
		id := s.unseenChildren(smp, st)
		smp.Procs = append(smp.Procs, ProcSample{ID: id, CPUNs: uint64(l.balance)})
		smp.Exited = append(smp.Exited, id)
		l.balance = 0
	}
	l.checks--
	if l.checks <= 0 && l.balance >= 0 && l.expected == 0 {
		delete(s.ledgers, pid)
	}
}

// unseenChildren returns the synthetic process that carries the CPU of children of st that tare never saw
// alive, creating it on first use.
func (s *Sampler) unseenChildren(smp *Sample, st *procState) int64 {
	pid := st.info.Key.PID
	if id, ok := s.reapedBy[pid]; ok {
		return id
	}
	why := "command lines need root"
	if s.ts != nil {
		why = "ended unseen"
	}
	info := s.newInfo(0, 0, pid, st.info.Comm+" children", fmt.Sprintf("(children reaped by %s; %s)", st.info.Comm, why), "", "", false)
	info.Group, info.GroupKind, info.PodUID, info.Container = st.info.Group, st.info.GroupKind, st.info.PodUID, st.info.Container
	info.PodNS, info.PodName, info.CtrName = st.info.PodNS, st.info.PodName, st.info.CtrName
	info.ParentID, info.BornSeq = st.info.ID, max(1, s.seq)
	smp.New = append(smp.New, *info)
	s.reapedBy[pid] = info.ID
	return info.ID
}

// ledgerReadings reads, with taskstats, the cutime of followed processes whose children ended recently. The
// sample drains the exit notifications before and after it: the kernel sends a child's notification before
// the child can be reaped, so every reap the reading holds has its notification in one of the two drains,
// and the children of the first have torn down by the time they are reaped. With one drain before the
// reading, a child that ended and was reaped in between is in its parent's cutime and not in the ledger:
// its whole tree is credited to the parent's last child, and taken back a sample later (on a busy build,
// 700m in one sample and the rest of the window short of it). With one drain after it, the teardown of
// the children it holds is credited a sample late, past the window's end for the last one.
func (s *Sampler) ledgerReadings() []pendingCut {
	var cuts []pendingCut
	for pid, l := range s.ledgers {
		st, ok := s.procs[pid]
		if !ok || (l.checks <= 0 && l.expected == 0) {
			continue // not followed (dropped in settleLedgers), or a negative balance waiting for a reap
		}
		if stat := s.readStat(pid); stat != nil {
			cuts = append(cuts, pendingCut{st, stat.ChildTimeNs()})
		}
	}
	return cuts
}

// settleLedgers books the readings ledgerReadings took, for the processes still followed once the exits are
// credited, and drops ledgers of processes tare no longer follows (or never did) after a few samples.
// Ledgers opened by the second drain are read at the next sample: the balance is cumulative.
func (s *Sampler) settleLedgers(smp *Sample, cuts []pendingCut) {
	for pid, l := range s.ledgers {
		if _, ok := s.procs[pid]; !ok {
			l.stale++
			if l.stale > ledgerChecks {
				delete(s.ledgers, pid)
			}
		}
	}
	for _, c := range cuts {
		if s.procs[c.st.info.Key.PID] == c.st {
			s.settle(smp, c.st, c.cut)
		}
	}
}

// baselineExits closes the baseline sample. Processes that ended around it were either listed alive (their
// notification is kept for the next sample, which settles them as usual), listed as zombies, or not
// listed at all: those ended before the window, and count as baseline. Each end is booked once (a zombie
// listed and then drained, or drained twice, would be expected twice in its parent's cutime, and the
// negative balance would swallow the next children's CPU: a build's teardown credits, 100m on a busy
// node), and only once the whole listing is done: PIDs wrap (pid_max is 32768 on small machines), so a
// child can be listed before its parent, whose first reading would otherwise drop the expectation and
// count the reap as new CPU (a build's whole tree, −170m). A zombie still unreaped is expected in its
// parent's cutime; for an end already reaped, the parent's cutime is read again and settled as the
// baseline: what it gained is dropped, what it still expects waits. Exits drained before the listing are
// of processes that ended before it: a listed process under the same PID is another one.
func (s *Sampler) baselineExits() {
	recs := s.drainExits()
	early := mergeExits(s.earlyExits)
	s.earlyExits = nil
	for _, r := range s.baseZombies {
		s.baselineEnd(r, false, true)
	}
	s.baseZombies = nil
	for _, r := range early {
		s.baselineEnd(r, false, false)
	}
	for _, r := range mergeExits(recs) {
		s.baselineEnd(r, true, false)
	}
}

// baselineEnd books one end met while the baseline sample was taken: an exit notification (listed says
// that /proc was listed before it was drained) or a zombie the listing found.
func (s *Sampler) baselineEnd(r kernel.ExitRecord, listed, zombie bool) {
	if _, ok := s.procs[r.PID]; ok {
		if listed {
			s.heldExits = append(s.heldExits, r)
		}
		return
	}
	if s.baseDone[r.PID] && !zombie {
		return
	}
	s.baseDone[r.PID] = true
	if stat := s.readStat(r.PID); stat != nil && stat.State == 'Z' {
		s.childEnded(r.PPID, 0, stat.OwnTimeNs(), stat.ChildTimeNs())
		return
	}
	if parent, ok := s.procs[r.PPID]; ok {
		if stat := s.readStat(r.PPID); stat != nil {
			s.settle(nil, parent, stat.ChildTimeNs())
		}
	}
}

// pendingCut is a cutime+cstime reading taken during a sample's pass.
type pendingCut struct {
	st  *procState
	cut uint64
}

// settleEnded closes a sample's pass over the processes: first the processes found gone, children before
// parents, so that each ended child is in its parent's ledger before the parent's goes to the grandparent;
// then the cutime readings of live processes, so that a parent's reading and the children it just reaped
// are booked in the same sample (otherwise the reap is credited once now and taken back later).
func (s *Sampler) settleEnded(smp *Sample) {
	for _, st := range childrenFirst(s.ending) {
		if s.procs[st.info.Key.PID] == st {
			s.finish(smp, st)
		}
	}
	s.ending = s.ending[:0]
	for _, c := range s.cuts {
		if s.procs[c.st.info.Key.PID] == c.st {
			s.settle(smp, c.st, c.cut)
		}
	}
	s.cuts = s.cuts[:0]
}
