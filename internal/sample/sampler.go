package sample

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/classify"
)

// userHZ is the unit of /proc/PID/stat times (sysconf(_SC_CLK_TCK), 100 on every Linux ABI).
const userHZ = 100

// Options configure a Sampler.
type Options struct {
	ProcRoot string
	SysRoot  string
	Interval time.Duration
	// Detail is the cadence of the slower reads (smaps_rollup, io, thread count); a multiple of Interval.
	Detail time.Duration
	// Unprivileged forces the sources that work without root (schedstat, cutime), for tests and comparison.
	Unprivileged bool
	// SelfPID is tare's own PID, reported apart (defaults to os.Getpid()).
	SelfPID int
	// PodNames names pods by UID and containers by ID (through the API); nil names pods by UID.
	PodNames func(uid, container string) (namespace, name, containerName string, ok bool)
	// HostRoot is where the measured host's / is mounted (default "/"): tare reads the kernel's build
	// configuration from HostRoot/boot/config-RELEASE when /proc/config.gz is missing.
	HostRoot string
	// CgroupRoot names the cgroup hierarchy node busy is read from: a cgroup v2 root, or a v1 hierarchy
	// with cpuacct. "" picks one under SysRoot (v2 at fs/cgroup, v1 cpuacct, hybrid fs/cgroup/unified).
	CgroupRoot string
}

type procState struct {
	info        *ProcInfo
	last        uint64 // cumulative CPU ns at the previous sample
	credited    uint64 // CPU ns credited to this process so far
	lastCut     uint64 // cutime+cstime in ns
	lastOwn     uint64 // utime+stime in ns at the last stat reading: unlike schedstat, it keeps exited threads
	missing     int    // samples in a row the process was not listed without an exit notification
	kernel      bool
	threads     *threadCounters // nil when tare could not keep the thread files open
	idle        int             // readings in a row without CPU
	sinceDetail uint64          // CPU since the last detail sample
	detail      *procDetail     // last slow-cadence reading
	details     int             // slow-cadence readings so far
}

func (st *procState) close() {
	if st.threads != nil {
		st.threads.close()
		st.threads = nil
	}
}

type recentExit struct {
	id    int64
	ppid  int
	total uint64
	seq   int
}

// Sampler takes samples of the node. It is not safe for concurrent use.
type Sampler struct {
	opts         Options
	pfs          procfs.FS
	node         *NodeReader
	res          *ResourceReader
	ts           *TaskstatsClient
	exits        *ExitListener
	execs        *ExecWatcher
	procs        map[int]*procState
	recent       map[int]recentExit
	reapedBy     map[int]int64   // parent PID -> synthetic process of children tare never saw (ledger.go)
	ledgers      map[int]*ledger // PID -> its cutime+cstime account (ledger.go)
	heldExits    []ExitRecord    // exits of listed processes met while closing the baseline sample
	ending       []*procState    // processes found gone during this sample's pass (ledger.go)
	cuts         []pendingCut    // cutime readings of this pass, booked after the ended processes
	nextID       int64
	seq          int
	lastTime     time.Time
	detailEvery  int
	meta         Meta
	denied       map[string]int
	warned       map[string]bool
	warn         func(string)
	uncached     bool   // the open file limit was reached: new processes are read without thread counters
	idleEvery    int    // idle processes are read every idleEvery samples (one second)
	lastListBoot uint64 // boot ticks at the last full listing of /proc
	pidBuf       []int
	lastNode     Node
	stuck        stuckView // reads of cmdline and smaps_rollup that did not answer (blockingread.go)
	act          *activity // which processes ran since the previous sample (activity.go); nil without it
}

// New opens every source this host and privilege level allow and says what it could not open.
// warn receives one-line warnings (nil discards them).
func New(ctx context.Context, opts Options, warn func(string)) (*Sampler, error) {
	if opts.ProcRoot == "" {
		opts.ProcRoot = "/proc"
	}
	if opts.SysRoot == "" {
		opts.SysRoot = "/sys"
	}
	if opts.SelfPID == 0 {
		opts.SelfPID = os.Getpid()
	}
	if warn == nil {
		warn = func(string) {}
	}
	pfs, err := procfs.NewFS(opts.ProcRoot)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", opts.ProcRoot, err)
	}
	node, err := NewNodeReader(opts.ProcRoot, opts.SysRoot)
	if err != nil {
		return nil, err
	}
	res, err := NewResourceReader(opts.ProcRoot, opts.SysRoot)
	if err != nil {
		return nil, err
	}
	s := &Sampler{opts: opts, pfs: pfs, node: node, res: res, procs: map[int]*procState{}, recent: map[int]recentExit{},
		reapedBy: map[int]int64{}, ledgers: map[int]*ledger{}, denied: map[string]int{}, warned: map[string]bool{}, warn: warn}
	s.detailEvery = max(1, int(opts.Detail/opts.Interval))
	s.idleEvery = max(1, int(time.Second/opts.Interval))
	s.stuck = blockingReads(opts.ProcRoot).view()
	host, _ := os.Hostname()
	if opts.CgroupRoot != "" {
		if err := node.UseCgroupRoot(opts.CgroupRoot); err != nil {
			node.Close()
			return nil, fmt.Errorf("cgroup root: %w", err)
		}
	}
	s.meta = Meta{CPUs: onlineCPUs(opts.SysRoot), ClockTicks: userHZ, Interval: opts.Interval, Detail: opts.Interval * time.Duration(s.detailEvery),
		SelfPID: opts.SelfPID, CgroupSource: node.CgroupSource(), NodeReference: node.Reference(), Limitations: append([]string(nil), node.Limitations...)}
	kc := s.meta.describeHost(opts.ProcRoot, opts.HostRoot, host)
	s.meta.KernelHZ, s.meta.IRQTime = kc.HZ, kc.IRQTimeAccounting
	s.openPrivileged(ctx)
	return s, nil
}

func (s *Sampler) openPrivileged(ctx context.Context) {
	s.meta.CPUSource, s.meta.ExitSource = "schedstat", "cutime"
	if s.opts.Unprivileged {
		s.meta.Limitations = append(s.meta.Limitations, "unprivileged sources forced: per-thread schedstat and parents' cutime/cstime")
		return
	}
	ts, err := OpenTaskstats()
	if err != nil {
		s.meta.Limitations = append(s.meta.Limitations,
			fmt.Sprintf("taskstats: %v; per-process CPU comes from per-thread schedstat (threads that exit between samples lose their last interval)", err),
			"short-lived processes: taskstats exit notifications and the proc connector need CAP_NET_ADMIN; their CPU is credited through their parents' cutime/cstime (10 ms resolution, no command lines)")
		return
	}
	exits, err := ListenExits(s.opts.SysRoot)
	if err != nil {
		_ = ts.Close()
		s.meta.Limitations = append(s.meta.Limitations, fmt.Sprintf("taskstats exit notifications: %v", err))
		return
	}
	s.ts, s.exits, s.meta.CPUSource = ts, exits, "schedstat+taskstats"
	// Skipping processes that did not run relies on exit notifications to settle those that end. The
	// iterator is loaded later, once it pays for itself (activity.go).
	if act, err := newActivity(s.opts.ProcRoot); err != nil {
		s.meta.Limitations = append(s.meta.Limitations,
			fmt.Sprintf("%v; every process is read each second whether it ran or not (costlier with thousands of processes)", err))
	} else {
		s.act = act
	}
	execs, err := WatchExecs(ctx, cmdlineReader(s.opts.ProcRoot))
	if err != nil {
		s.meta.Limitations = append(s.meta.Limitations,
			fmt.Sprintf("proc connector: %v; short-lived processes are named by their 16-character comm only", err))
		s.meta.ExitSource = "taskstats"
		return
	}
	s.execs, s.meta.ExitSource = execs, "taskstats+connector"
}

// Meta describes the sources in use; Limitations grows as the sampler meets unreadable files.
func (s *Sampler) Meta() Meta {
	m := s.meta
	m.Limitations = append([]string(nil), s.meta.Limitations...)
	m.Limitations = append(m.Limitations, s.stuck.limitations()...)
	for _, kind := range sortedKeys(s.denied) {
		why := "run as root to read other users' processes"
		if os.Geteuid() == 0 {
			why = "the kernel's ptrace access check refused root: another user namespace or a protected process"
		}
		m.Limitations = append(m.Limitations, fmt.Sprintf("%s of %d processes: permission denied (%s)", kind, s.denied[kind], why))
	}
	if s.exits != nil && s.exits.Dropped > 0 {
		m.Limitations = append(m.Limitations, fmt.Sprintf("%d batches of exit notifications were dropped by the kernel (socket buffer full)", s.exits.Dropped))
	}
	if s.execs != nil && s.execs.Lost() > 0 {
		m.Limitations = append(m.Limitations, fmt.Sprintf("%d batches of exec notifications were dropped (some short-lived command lines are unknown)", s.execs.Lost()))
	}
	return m
}

// Close stops the exec watcher and releases every file and socket the sampler holds.
func (s *Sampler) Close() {
	if s.execs != nil {
		s.execs.Close()
	}
	s.node.Close()
	for _, st := range s.procs {
		st.close()
	}
	if s.ts != nil {
		_ = s.ts.Close()
	}
	if s.exits != nil {
		_ = s.exits.Close()
	}
	s.act.close()
}

// Sample takes one sample. The first call is the baseline: it records who is there and credits nothing.
func (s *Sampler) Sample() (Sample, error) { return s.sample(false) }

// SampleFinal takes the window's closing sample: every process is read, idle or not, and /proc is listed,
// so that no CPU is left between a process's last reading and the end of the window.
func (s *Sampler) SampleFinal() (Sample, error) { return s.sample(true) }

func (s *Sampler) sample(final bool) (Sample, error) {
	now := time.Now()
	boot := bootTicks()
	detail := s.seq%s.detailEvery == 0 || final
	// The slow node figures are read at least once a second. With the proc connector naming new processes
	// and taskstats reporting exits, listing /proc is only a safety net, done on detail samples.
	full := s.execs == nil || detail || s.seq%s.idleEvery == 0
	list := s.execs == nil || detail
	node, err := s.node.Read(full, s.lastNode)
	if err != nil {
		return Sample{}, err
	}
	if full && s.res != nil {
		var err error
		if node.Resources, err = s.res.Read(); err != nil {
			s.warnOnce("resources", err.Error())
		}
	}
	s.lastNode = node
	smp := Sample{Seq: s.seq, Time: now, Node: node}
	if s.seq > 0 {
		smp.Elapsed = now.Sub(s.lastTime)
	}
	if s.exits != nil {
		recs, err := s.exits.Drain()
		if err != nil {
			s.warnOnce("drain", err.Error())
		}
		recs, s.heldExits = append(s.heldExits, recs...), nil
		if s.execs != nil {
			s.execs.Sync() // every exec that preceded these exits is queued by now
		}
		s.creditExits(&smp, mergeExits(recs))
		s.settleLedgers(&smp)
	}
	var pids []int
	if list {
		if pids, err = s.listPIDs(); err != nil {
			return Sample{}, err
		}
		listed := make(map[int]bool, len(pids))
		for _, pid := range pids {
			listed[pid] = true
		}
		s.finishMissing(&smp, listed)
		s.act.forget(listed)
	} else {
		pids = s.knownAndNewPIDs()
	}
	if s.seq == 0 {
		s.act.expect(len(pids))
	}
	s.passActivity() // which processes ran since the previous sample (activity.go)
	for _, pid := range pids {
		st, ok := s.procs[pid]
		if !ok {
			s.sampleNew(&smp, pid, boot, detail)
			continue
		}
		// A process that did not run has nothing new to read. On a detail sample, one that did not run since
		// the previous detail sample only has its memory re-read, on its turn (refresh.go).
		if s.act.idle(pid) {
			if !detail {
				continue
			}
			if st.sinceDetail == 0 && (st.detail != nil || st.kernel) {
				s.idleDetail(&smp, st)
				continue
			}
		}
		// Without the iterator, a process idle for its last two readings is read once a second instead of
		// every sample: its counters are cumulative, so nothing is lost, its CPU just lands in the interval
		// it is next read.
		if !detail && st.idle >= 2 && s.idleEvery > 1 && (s.seq+int(st.info.ID))%s.idleEvery != 0 {
			continue
		}
		if !detail {
			s.act.read()
		}
		s.sampleKnown(&smp, st, boot, detail)
	}
	s.settleEnded(&smp)
	if list {
		s.lastListBoot = boot
	}
	if s.seq == 0 && s.exits != nil {
		s.baselineExits()
	}
	if s.execs != nil {
		s.execs.Forget(2 * time.Minute)
	}
	for pid, r := range s.recent {
		if s.seq-r.seq > 3 {
			delete(s.recent, pid)
		}
	}
	smp.Node.TasksCPUNs = s.node.TasksCPU()
	smp.Took = time.Since(now)
	s.lastNode.TasksCPUNs = smp.Node.TasksCPUNs
	smp.Procs = coalesce(smp.Procs)
	s.seq++
	s.lastTime = now
	return smp, nil
}

// coalesce merges rows for the same process (an exit remainder and a teardown credit, say) into one.
func coalesce(ps []ProcSample) []ProcSample {
	at := make(map[int64]int, len(ps))
	out := ps[:0]
	for _, p := range ps {
		i, ok := at[p.ID]
		if !ok {
			at[p.ID] = len(out)
			out = append(out, p)
			continue
		}
		q := &out[i]
		q.CPUNs += p.CPUNs
		if p.HasDetail && !q.HasDetail {
			cpu := q.CPUNs
			*q = p
			q.CPUNs = cpu
		}
	}
	return out
}

// cpuOf returns the cumulative CPU (ns) of a process without the thread-counter cache: a taskstats query,
// or the sum of the threads' schedstat files.
func (s *Sampler) cpuOf(pid int) (uint64, error) {
	if s.ts != nil {
		st, err := s.ts.TGID(pid)
		return st.CPUNs, err
	}
	return schedstatCPU(s.pfs, pid)
}

// cumulative returns the process's cumulative CPU from its open thread counters (or, without them, from
// cpuOf); with exact set it is resynchronised with taskstats. gone reports that the process no longer
// exists.
func (s *Sampler) cumulative(st *procState, pid int, exact bool) (cpu uint64, gone bool) {
	if st.threads == nil {
		cpu, err := s.cpuOf(pid)
		return cpu, err != nil
	}
	cpu, gone = st.threads.total(pid)
	if gone || !exact {
		return cpu, gone
	}
	return s.resync(st, pid, cpu), false
}

func (s *Sampler) sampleKnown(smp *Sample, st *procState, boot uint64, detail bool) {
	pid := st.info.Key.PID
	var stat *procStat
	if s.ts == nil { // unprivileged: stat gives cutime, and the start time that reveals PID reuse
		if stat = s.readStat(pid); stat == nil {
			s.ending = append(s.ending, st)
			return
		}
		st.lastOwn = stat.ownTimeNs()
		if stat.Starttime != st.info.Key.Start {
			s.finish(smp, st)
			s.sampleNew(smp, pid, boot, detail)
			return
		}
	}
	cpu, gone := s.cumulative(st, pid, false)
	if gone {
		// Exited (or its PID already belongs to another process): settled after this sample's pass; a
		// late exit notification adds what ran after the last reading.
		s.ending = append(s.ending, st)
		return
	}
	// A process that did not run since the last detail sample cannot have done I/O, started threads or
	// touched its memory: its detail is carried over, and its memory re-read on its turn (refresh.go).
	var d *procDetail
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
				if st.threads.rescan(false) != nil || (s.ts != nil && len(st.threads.fds) > maxThreadFiles) {
					st.close()
				} else if c, gone := st.threads.total(pid); !gone {
					cpu = c
				}
			}
			cpu = s.resync(st, pid, cpu)
		}
		switch {
		case st.kernel:
		case ran || first:
			dd := readDetail(s.opts.ProcRoot, pid, stat, st.detail, st.turn(smapsEvery))
			st.detail = &dd
		default:
			s.refreshMemory(st)
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
		s.cuts = append(s.cuts, pendingCut{st, stat.childTimeNs()})
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
	st.threads.resync(ts.CPUNs, cpu)
	// Threads born between the scan and the query are inside the exact total already.
	if st.threads.rescan(true) != nil {
		st.close()
	}
	return max(cpu, ts.CPUNs)
}

func (s *Sampler) readStat(pid int) *procStat {
	st, err := readProcStat(s.opts.ProcRoot, pid)
	if err != nil {
		return nil
	}
	return &st
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

func (s *Sampler) sampleNew(smp *Sample, pid int, boot uint64, detail bool) {
	id, err := readIdentity(s.opts.ProcRoot, pid)
	if err != nil {
		return // gone before we could read it; its exit notification credits it
	}
	if id.stat.State == 'Z' {
		// A zombie: ended, waiting for its parent to reap it. At the baseline its CPU was spent before the
		// window, and the reap will add it to the parent's cutime; later, its exit was already settled.
		if s.seq == 0 {
			s.childEnded(id.stat.PPID, 0, id.stat.ownTimeNs(), id.stat.childTimeNs())
		}
		return
	}
	st := &procState{kernel: id.kernel, lastCut: id.stat.childTimeNs(), lastOwn: id.stat.ownTimeNs()}
	// With the task iterator, only processes that ran are read: a taskstats query then costs less than
	// opening every process's thread files at its first sight.
	if !s.uncached && (s.ts == nil || (id.stat.NumThreads <= maxThreadFiles && !s.act.loaded())) {
		th, err := openThreads(s.opts.ProcRoot, pid)
		switch {
		case errors.Is(err, errFDLimit):
			s.uncached = true
			s.meta.Limitations = append(s.meta.Limitations, "open file limit reached: further processes are read without the per-thread cache (costlier per sample); raise ulimit -n")
		case err != nil:
			return // gone
		default:
			st.threads = th
		}
	}
	cpu, gone := s.cumulative(st, pid, true)
	if gone {
		st.close()
		return
	}
	info := s.newInfo(pid, id.stat.Starttime, id.stat.PPID, id.stat.Comm, id.cmdline, id.exe, id.cgroup, id.kernel)
	info.Seen = true
	if boot >= id.stat.Starttime {
		info.StartTime = time.Now().Add(-time.Duration(boot-id.stat.Starttime) * (time.Second / userHZ)).Round(0)
	}
	st.info, st.last = info, cpu
	ps := ProcSample{ID: info.ID}
	// Born during this interval (allowing 20 ms for the start-time tick): all its CPU is this interval's.
	if s.seq > 0 && id.stat.Starttime+2 >= s.lastListBoot {
		info.BornSeq = s.seq
		ps.CPUNs = cpu
		st.credited = cpu
		st.lastCut = 0 // a new process starts with no children's time: what it reaped so far is in its ledger
	} else {
		delete(s.ledgers, pid) // an older process seen late: its cutime now is its baseline
	}
	s.procs[pid] = st
	smp.New = append(smp.New, *info)
	if info.BornSeq > 0 && (s.ts == nil || s.ledgers[pid] != nil) {
		s.cuts = append(s.cuts, pendingCut{st, id.stat.childTimeNs()})
	}
	if detail && !id.kernel {
		d := readDetail(s.opts.ProcRoot, pid, &id.stat, nil, true)
		st.detail = &d
		s.addDetail(&ps, d)
	}
	if ps.CPUNs > 0 || ps.HasDetail {
		smp.Procs = append(smp.Procs, ps)
	}
}

func (s *Sampler) newInfo(pid int, start uint64, ppid int, comm, cmdline, exe, cgroup string, kernel bool) *ProcInfo {
	s.nextID++
	self := pid == s.opts.SelfPID
	c := classify.Process(exe, comm, cmdline, cgroup, kernel, self)
	info := &ProcInfo{ID: s.nextID, Key: ProcKey{PID: pid, Start: start}, PPID: ppid, Comm: comm, Cmdline: cmdline,
		Exe: exe, Kernel: kernel, Self: self, Group: c.Group, GroupKind: c.Kind, Cgroup: cgroup, FirstSeq: s.seq}
	if c.InPod {
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

func (s *Sampler) addDetail(ps *ProcSample, d procDetail) {
	ps.HasDetail = true
	ps.RSS, ps.PSS, ps.Private = d.rss, d.pss, d.private
	ps.ReadBytes, ps.WriteBytes, ps.Threads = d.readB, d.writeB, d.threads
	s.noteDenied("smaps_rollup", d.smapsErr)
	s.noteDenied("io", d.ioErr)
}

func (s *Sampler) noteDenied(kind string, err error) {
	if err != nil && errors.Is(err, os.ErrPermission) && s.seq == 0 {
		s.denied[kind]++
	}
}

// mergeExits keeps one record per process, the one with the most CPU (the thread-group total).
func mergeExits(recs []ExitRecord) []ExitRecord {
	byPID := map[int]int{}
	var out []ExitRecord
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
func (s *Sampler) creditExits(smp *Sample, recs []ExitRecord) {
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
		if s.seq == 0 {
			continue // ended before the window opened
		}
		s.addTransient(smp, r)
	}
}

// addTransient records a process that started and ended between two samples.
func (s *Sampler) addTransient(smp *Sample, r ExitRecord) {
	cmdline, ppid := "["+r.Comm+"]", r.PPID
	var started time.Time
	if s.execs != nil {
		if e, ok := s.execs.Lookup(r.PID); ok {
			cmdline, started = e.Cmdline, e.Started
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
	s.recent[r.PID] = recentExit{id: info.ID, ppid: ppid, total: r.CPUNs, seq: s.seq}
	s.childEnded(ppid, info.ID, r.CPUNs, s.knownCut(r.PID, 0))
}

func (s *Sampler) parentInfo(ppid int) *ProcInfo {
	if p, ok := s.procs[ppid]; ok {
		return p.info
	}
	return nil
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

// knownAndNewPIDs lists the processes tare follows plus those forked since the last sample.
func (s *Sampler) knownAndNewPIDs() []int {
	pids := s.pidBuf[:0]
	for pid := range s.procs {
		pids = append(pids, pid)
	}
	born := s.execs.NewPIDs()
	sort.Ints(born) // parents before children, so children find their parent's ID
	for _, pid := range born {
		if _, ok := s.procs[pid]; !ok {
			pids = append(pids, pid)
		}
	}
	s.pidBuf = pids
	return pids
}

func (s *Sampler) listPIDs() ([]int, error) {
	names, err := readDirNames(s.opts.ProcRoot)
	if err != nil {
		return nil, fmt.Errorf("listing processes in %s: %w", s.opts.ProcRoot, err)
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		if pid, err := strconv.Atoi(n); err == nil {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids) // parents usually have lower PIDs: they get IDs first
	return pids, nil
}

func (s *Sampler) warnOnce(key, msg string) {
	if !s.warned[key] {
		s.warned[key] = true
		s.warn(msg)
	}
}

func bootTicks() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano()) / (1e9 / userHZ)
}

func onlineCPUs(sysRoot string) int {
	b, err := readBounded(sysRoot + "/devices/system/cpu/online")
	if err != nil {
		return 1
	}
	n, err := parseCPUList(string(b))
	if err != nil || n == 0 {
		return 1
	}
	return n
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
