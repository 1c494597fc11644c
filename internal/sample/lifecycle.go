package sample

import (
	"errors"
	"os"
	"time"

	"github.com/tare-dev/tare/internal/classify"
	"github.com/tare-dev/tare/internal/kernel"
)

// A process's life in the sampler: first sight (sampleNew reads its identity, opens its thread counters and
// credits the CPU it ran since it started, if it started during the window), each later reading
// (sampleKnown), and its end (exits.go).

// maxThreadFiles is the most threads a process may have for its CPU to be read from its threads' schedstat
// files (one pread each, about 2 µs) when taskstats is there: one taskstats query costs about 4 µs
// whatever the number of threads, and is exact, so processes with more threads are read through it.
const maxThreadFiles = 2

type procState struct {
	info        *ProcInfo
	last        uint64 // cumulative CPU ns at the previous sample
	credited    uint64 // CPU ns credited to this process so far
	lastCut     uint64 // cutime+cstime in ns
	lastOwn     uint64 // utime+stime in ns at the last stat reading: unlike schedstat, it keeps exited threads
	missing     int    // samples in a row the process was not listed without an exit notification
	kernel      bool
	threads     *kernel.ThreadCounters // nil when tare could not keep the thread files open
	idle        int                    // readings in a row without CPU
	sinceDetail uint64                 // CPU since the last detail sample
	detail      *kernel.Detail         // last slow-cadence reading
	details     int                    // slow-cadence readings so far
	identAt     time.Time              // when its identity (command line, executable, cgroup) was read
}

func (st *procState) close() {
	if st.threads != nil {
		st.threads.Close()
		st.threads = nil
	}
}

// cpuOf returns the cumulative CPU (ns) of a process without the thread-counter cache: a taskstats query,
// or the sum of the threads' schedstat files.
func (s *Sampler) cpuOf(pid int) (uint64, error) {
	if s.ts != nil {
		st, err := s.ts.TGID(pid)
		return st.CPUNs, err
	}
	return kernel.SchedstatCPU(s.pfs, pid)
}

// cumulative returns the process's cumulative CPU from its open thread counters (or, without them, from
// cpuOf); with exact set it is resynchronised with taskstats. gone reports that the process no longer
// exists.
func (s *Sampler) cumulative(st *procState, pid int, exact bool) (cpu uint64, gone bool) {
	if st.threads == nil {
		cpu, err := s.cpuOf(pid)
		return cpu, err != nil
	}
	cpu, gone = st.threads.Total(pid)
	if gone || !exact {
		return cpu, gone
	}
	return s.resync(st, pid, cpu), false
}

func (s *Sampler) sampleNew(smp *Sample, pid int, boot uint64, detail bool) {
	identAt := time.Now()
	id, io, described, err := s.identity(pid)
	if err != nil {
		return // gone before we could read it; its exit notification credits it
	}
	if described {
		// Its stat is the pass's, from before this sample's reads: an exec since comes after it (the exec
		// watcher's next report then reads the process again, reexec.go).
		identAt = s.act.passAt
	}
	if id.Stat.State == 'Z' {
		// A zombie: ended, waiting for its parent to reap it. At the baseline its CPU was spent before the
		// window, booked once the listing is done (baselineExits: its parent may come later in the
		// listing); later, its exit was already settled.
		if s.seq == 0 && !s.baseDone[pid] {
			s.baseDone[pid] = true // its notification, drained later, is not booked again
			s.baseZombies = append(s.baseZombies, kernel.ExitRecord{PID: pid, PPID: id.Stat.PPID})
		}
		return
	}
	st := &procState{kernel: id.Kernel, lastCut: id.Stat.ChildTimeNs(), lastOwn: id.Stat.OwnTimeNs(), identAt: identAt}
	// With the task iterator, only processes that ran are read: a taskstats query then costs less than
	// opening every process's thread files at its first sight.
	if !s.uncached && (s.ts == nil || (id.Stat.NumThreads <= maxThreadFiles && !s.act.loaded())) {
		th, err := kernel.OpenThreads(s.opts.ProcRoot, pid)
		switch {
		case errors.Is(err, kernel.ErrFDLimit):
			s.uncached = true
			s.meta.Limitations = append(s.meta.Limitations, "open file limit reached: further processes are read without the per-thread cache (costlier per sample); raise ulimit -n")
		case err != nil:
			return // gone
		default:
			st.threads = th
		}
	}
	// The task pass that ran before this sample's reads read the same sum as a taskstats query (activity.cpu):
	// with thousands of processes at the baseline, that is thousands of queries saved.
	var cpu uint64
	var fromPass, gone bool
	if st.threads == nil { // open thread counters are read (and resynchronised) as before
		cpu, fromPass, _ = s.act.cpu(pid, id.Stat.Starttime)
	}
	if !fromPass {
		cpu, gone = s.cumulative(st, pid, true)
	}
	if gone {
		st.close()
		return
	}
	info := s.newInfo(pid, id.Stat.Starttime, id.Stat.PPID, id.Stat.Comm, id.Cmdline, id.Exe, id.Cgroup, id.Kernel)
	info.Seen, info.UID = true, id.UID
	if boot >= id.Stat.Starttime {
		info.StartTime = time.Now().Add(-time.Duration(boot-id.Stat.Starttime) * (time.Second / kernel.UserHZ)).Round(0)
	}
	st.info, st.last = info, cpu
	ps := ProcSample{ID: info.ID}
	// Born during this interval (allowing 20 ms for the start-time tick): all its CPU is this interval's.
	if s.seq > 0 && id.Stat.Starttime+2 >= s.lastListBoot {
		info.BornSeq = s.seq
		ps.CPUNs = cpu
		st.credited = cpu
		st.lastCut = 0 // a new process starts with no children's time: what it reaped so far is in its ledger
	} else {
		delete(s.ledgers, pid) // an older process seen late: its cutime now is its baseline
	}
	s.procs[pid] = st
	smp.New = append(smp.New, *info)
	// Without taskstats a parent's cutime is read at every sighting. With it, a new process whose children
	// already ended has its ledger read at the next sample, before that sample's drain (ledgerReadings).
	if info.BornSeq > 0 && s.ts == nil {
		s.cuts = append(s.cuts, pendingCut{st, id.Stat.ChildTimeNs()})
	}
	if detail && !id.Kernel {
		d := kernel.ReadDetailIO(s.opts.ProcRoot, pid, &id.Stat, nil, s.firstSmaps(boot, info, false), io)
		if described {
			d.Quiet = false // the pass's state is not a stat reading just before: its smaps_rollup keeps the deadline
		}
		st.detail = &d
		s.addDetail(&ps, d)
	}
	if ps.CPUNs > 0 || ps.HasDetail {
		smp.Procs = append(smp.Procs, ps)
	}
}

// identity reads what tare keeps of a process it sees for the first time. When this sample's task pass
// described it (every process at the baseline, and any born since: it ran), its stat, owner and, for a
// process of one thread, I/O counters come from the pass (described), and only its command line,
// executable and cgroup are read: three files of the six ReadIdentity and ReadDetail open (3,000 idle
// processes: about 0.1 s of CPU less at start). Its command line is read with the deadline: the pass's
// state is from before this sample's reads, not a stat just before, so it cannot tell the process quiet
// (kernel.ProcStat.Quiet). A process the exec watcher saw exec since the pass is read from /proc whole: the
// pass's name is the one before. io is nil when /proc/PID/io is to be read.
func (s *Sampler) identity(pid int) (id kernel.Identity, io *kernel.IOCounters, described bool, err error) {
	g, ok := s.act.described(pid)
	if at, execed := s.execed[pid]; ok && execed && !at.Before(s.act.passAt) {
		ok = false
	}
	if !ok {
		id, err = kernel.ReadIdentity(s.opts.ProcRoot, pid)
		return id, nil, false, err
	}
	st, _ := g.ProcStat()
	// The baseline's processes go by their cgroup IDs (the cgroup file once per cgroup); a process new
	// later is read whole: it is often one a container runtime is moving into its cgroup (runc init), and
	// the IDs, from the pass before the read, would name the cgroup it left.
	ids := g.Desc.CgroupKey
	if s.seq > 0 {
		ids = kernel.CgroupIDs{}
	}
	if id, err = kernel.IdentityOf(s.opts.ProcRoot, pid, st, int(g.Desc.EUID), false, &s.cgroups, ids); err != nil {
		return id, nil, true, err
	}
	if g.Desc.HasIO {
		io = &kernel.IOCounters{ReadBytes: g.Desc.ReadBytes, WriteBytes: g.Desc.WriteBytes}
	}
	return id, io, true, nil
}

func (s *Sampler) sampleKnown(smp *Sample, st *procState, boot uint64, detail bool) {
	pid := st.info.Key.PID
	var stat *kernel.ProcStat
	if s.ts == nil { // unprivileged: stat gives cutime, and the start time that reveals PID reuse
		if stat = s.readStat(pid); stat == nil {
			s.ending = append(s.ending, st)
			return
		}
		st.lastOwn = stat.OwnTimeNs()
		if stat.Starttime != st.info.Key.Start {
			s.finish(smp, st)
			s.sampleNew(smp, pid, boot, detail)
			return
		}
	}
	// With taskstats, a process without per-thread counters would cost a thread-group query: the task
	// iterator's pass has read the same sum already.
	cpu, fromPass, reused := s.act.cpu(pid, st.info.Key.Start)
	if reused && s.ts != nil { // as the start time in stat says without taskstats, above
		s.finish(smp, st)
		s.sampleNew(smp, pid, boot, detail)
		return
	}
	gone := false
	if !fromPass || st.threads != nil || s.ts == nil {
		cpu, gone = s.cumulative(st, pid, false)
	}
	if gone {
		// Exited (or its PID already belongs to another process): settled after this sample's pass; a
		// late exit notification adds what ran after the last reading.
		s.ending = append(s.ending, st)
		return
	}
	// A process that did not run since the last detail sample cannot have done I/O, started threads or
	// touched its memory: its detail is carried over, and its memory re-read on its turn (refresh.go).
	var d *kernel.Detail
	if detail {
		st.details++
		ran := cpu > st.last || st.sinceDetail > 0 || s.act.ran(pid)
		// Without the task iterator a thread born since the last scan may have run unseen: the exact
		// total is checked on the memory turn too.
		first := st.detail == nil && !st.kernel
		if ran || first || (st.turn(memoryEvery) && !s.act.loaded()) {
			// Open threads born since the last scan first, so that the exact total below only adds
			// what exited threads ran after their last reading.
			if st.threads != nil {
				if st.threads.Rescan(false) != nil || (s.ts != nil && st.threads.Open() > maxThreadFiles) {
					st.close()
				} else if c, gone := st.threads.Total(pid); !gone {
					cpu = c
				}
			}
			cpu = s.resync(st, pid, cpu)
		}
		switch {
		case st.kernel:
		case ran || first:
			smaps := kernel.SmapsOnDrift
			switch {
			case st.detail == nil || st.detail.StatmOnly || st.detail.Like: // no reading of its own yet
				smaps = s.firstSmaps(boot, st.info, ran)
			case st.turn(smapsEvery):
				smaps = kernel.SmapsNow
			}
			dd := kernel.ReadDetail(s.opts.ProcRoot, pid, stat, st.detail, smaps)
			st.detail = &dd
		default:
			s.refreshMemory(st, boot)
		}
		st.sinceDetail = 0
		d = st.detail
	}
	ps := ProcSample{ID: st.info.ID}
	if cpu > st.last {
		ps.CPUNs = cpu - st.last
		st.idle = 0
	} else {
		st.idle++
	}
	st.last = max(st.last, cpu)
	st.credited += ps.CPUNs
	st.sinceDetail += ps.CPUNs
	st.missing = 0
	if s.ts == nil { // without exit notifications the parents' cutime is read every time
		s.cuts = append(s.cuts, pendingCut{st, stat.ChildTimeNs()})
	}
	if d != nil {
		s.addDetail(&ps, *d)
	}
	if ps.CPUNs > 0 || ps.HasDetail {
		smp.Procs = append(smp.Procs, ps)
	}
}

// resync raises a process's thread-counter total to the exact taskstats thread-group total, which also
// counts threads that exited or started since their last reading.
func (s *Sampler) resync(st *procState, pid int, cpu uint64) uint64 {
	if s.ts == nil || st.threads == nil {
		return cpu
	}
	ts, err := s.ts.TGID(pid)
	if err != nil {
		return cpu
	}
	st.threads.Resync(ts.CPUNs, cpu)
	// Threads born between the scan and the query are inside the exact total already.
	if st.threads.Rescan(true) != nil {
		st.close()
	}
	return max(cpu, ts.CPUNs)
}

func (s *Sampler) readStat(pid int) *kernel.ProcStat {
	st, err := kernel.ReadProcStat(s.opts.ProcRoot, pid)
	if err != nil {
		return nil
	}
	return &st
}

func (s *Sampler) newInfo(pid int, start uint64, ppid int, comm, cmdline, exe, cgroup string, kernel bool) *ProcInfo {
	s.nextID++
	self := pid == s.opts.SelfPID
	c := classify.Process(exe, comm, cmdline, cgroup, kernel, self)
	info := &ProcInfo{ID: s.nextID, Key: ProcKey{PID: pid, Start: start}, PPID: ppid, Comm: comm, Cmdline: cmdline,
		Exe: exe, Kernel: kernel, Self: self, Group: c.Group, GroupKind: c.Kind, Cgroup: cgroup, FirstSeq: s.seq}
	if c.InPod && !self && s.opts.PodRoot != "" && c.Pod.Root != s.opts.PodRoot {
		info.Group, info.GroupKind = classify.ForeignGroup, classify.KindForeign
		info.PodUID, info.Container = c.Pod.UID, c.Pod.Container
	} else if c.InPod {
		info.PodUID, info.Container = c.Pod.UID, c.Pod.Container
		if s.opts.PodNames != nil {
			if ns, name, ctr, ok := s.opts.PodNames(c.Pod.UID, c.Pod.Container); ok {
				info.PodNS, info.PodName, info.CtrName = ns, name, ctr
				if c.Kind == classify.KindPod {
					info.Group = "pod " + ns + "/" + name
				}
			}
		}
	}
	if parent, ok := s.procs[ppid]; ok {
		info.ParentID = parent.info.ID
	} else if r, ok := s.recent[ppid]; ok {
		info.ParentID = r.id
	}
	return info
}

func (s *Sampler) addDetail(ps *ProcSample, d kernel.Detail) {
	ps.HasDetail = true
	ps.RSS, ps.PSS, ps.Private, ps.StatmOnly = d.RSS, d.PSS, d.Private, d.StatmOnly
	ps.ReadBytes, ps.WriteBytes, ps.Threads = d.ReadBytes, d.WriteBytes, d.Threads
	s.noteDenied("smaps_rollup", ps.ID, d.SmapsErr)
	s.noteDenied("io", ps.ID, d.IOErr)
}

// noteDenied counts a process whose kind of file was refused, once: a process's smaps_rollup may first be
// read at any detail sample (firstSmaps), not only at the baseline.
func (s *Sampler) noteDenied(kind string, id int64, err error) {
	if err == nil || !errors.Is(err, os.ErrPermission) {
		return
	}
	seen := s.deniedIDs[kind]
	if seen == nil {
		seen = map[int64]bool{}
		s.deniedIDs[kind] = seen
	}
	if !seen[id] {
		seen[id] = true
		s.denied[kind]++
	}
}
