package sample

import (
	"time"

	"github.com/tare-dev/tare/internal/kernel"
)

// How often the detail of a process that did not run is read again. Detail samples (every 5 s by default)
// read memory, I/O and the thread count of every process that ran since the previous one. A process that
// did not run cannot have done I/O or started threads, but its memory can change without it: reclaim
// shrinks its resident set, and its PSS moves when processes sharing its pages start or end. So its
// memory is re-read every memoryEvery detail samples, from statm first (no lock, no page walk), with
// smaps_rollup only when the resident size changed, and whatever statm says every smapsEvery detail
// samples. Turns are spread over the samples by process ID, so that no sample re-reads every process.
const (
	memoryEvery = 6  // 30 s at the default detail interval
	smapsEvery  = 36 // 3 min at the default detail interval
)

// turn reports whether this detail sample is st's turn for a reading due every n detail samples.
func (st *procState) turn(n int) bool { return (st.details+int(st.info.ID%int64(n)))%n == 0 }

// refreshMemory re-reads the memory of a process that did not run since its last detail reading, on its
// turn; its I/O and thread count are carried over, and so is Quiet: a process Quiet at that reading's stat
// that has not run since still is, and its smaps_rollup is read without the deadline.
func (s *Sampler) refreshMemory(st *procState, boot uint64) {
	if st.kernel || st.detail == nil {
		return
	}
	if st.detail.StatmOnly { // not read from smaps_rollup yet: as soon as it is old enough
		if s.firstSmaps(boot, st.info, false) == kernel.SmapsNot {
			return
		}
		if d := *st.detail; s.likes.firstMemory(s.opts.ProcRoot, st.info, s.details, &d) {
			st.detail = &d
			return
		}
	} else if !st.turn(memoryEvery) {
		return
	}
	d := *st.detail
	kernel.ReadMemory(s.opts.ProcRoot, st.info.Key.PID, st.info.Comm, st.detail, st.turn(smapsEvery), &d)
	// A failed read keeps the statm figures it started from: they stay marked as such.
	d.StatmOnly = st.detail.StatmOnly && d.SmapsErr != nil
	st.detail = &d
}

// firstSmaps says how a process that has no smaps_rollup reading yet is read: at once, except in two cases,
// where its memory comes from statm alone (StatmOnly) until then.
//
// Processes found by the baseline sample that have not run since (unless Options.ExactBaseline): their smaps_rollup, a walk of their page
// tables (about 50 µs even for a sleeper), is read on their turn, spread by process ID over the smapsSpread
// detail samples after the baseline, or at the final sample, whichever comes first. So start-up does not pay
// for the smaps_rollup of every idle process on the node (with 3,000 of them, some 150 ms of CPU), and no
// detail sample pays for all of them either; a process that ran is read at once (ran), and the final summary
// has a smaps_rollup reading of every process that lived a detail interval.
//
// A long-running sampler (the agent) while the process is younger than the detail interval. On a busy node
// most processes live a second or two (a build's compilers, the kubelet's mounts and probes), and the first
// smaps_rollup of each was most of the agent's CPU (under a Go build, 75% of the time it spent in
// smaps_rollup); a process that has lived a detail interval is read at its next detail sample. boot is clock
// ticks since boot now.
func (s *Sampler) firstSmaps(boot uint64, info *ProcInfo, ran bool) kernel.Smaps {
	if s.final {
		return kernel.SmapsNow
	}
	if !s.opts.ExactBaseline && !ran && info.FirstSeq == 0 && info.BornSeq == 0 && s.details < 1+int(info.ID%smapsSpread) {
		return kernel.SmapsNot
	}
	start := info.Key.Start
	if !s.opts.LongRunning || boot < start ||
		time.Duration(boot-start)*(time.Second/kernel.UserHZ) >= s.meta.Detail {
		return kernel.SmapsNow
	}
	return kernel.SmapsNot
}

// smapsSpread is how many detail samples after the baseline the first smaps_rollup readings of the
// processes it found idle are spread over (firstSmaps): as their later readings are (smapsEvery), 3 min at
// the default detail interval; a shorter run reads the rest at its final sample.
const smapsSpread = smapsEvery

// idleDetail is the detail reading of a process the task iterator says did not run since the previous
// detail sample: its CPU is not read (it did not move), its memory is refreshed on its turn, and its
// carried-over detail goes into the sample like any other.
func (s *Sampler) idleDetail(smp *Sample, st *procState, boot uint64) {
	st.details++
	s.refreshMemory(st, boot)
	if st.detail == nil { // a kernel thread: nothing to carry
		return
	}
	ps := ProcSample{ID: st.info.ID}
	s.addDetail(&ps, *st.detail)
	smp.Procs = append(smp.Procs, ps)
}
