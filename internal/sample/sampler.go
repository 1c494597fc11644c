package sample

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/tare-dev/tare/internal/bpfstats"
	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/taskiter"
)

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
	// PodRoot is the cgroup above this node's kubepods cgroup (classify.Pod.Root; OwnPodRoot finds it for
	// tare in a pod). Pods under another root run under another kubelet sharing this kernel (another
	// node of a one-machine cluster) and are grouped as classify.ForeignGroup. "" counts every pod as
	// this node's.
	PodRoot string
	// NoResources skips the node's memory, disk and network counters (Node.Resources, which explain's USE
	// view and recordings use): for the agent, which serves none of them, and would read them every second.
	NoResources bool
	// LongRunning says the sampler runs for hours (tare agent): the task iterator is loaded at the first
	// sample whatever the node's size, as its load (about 25 ms of CPU) pays for itself within minutes, and
	// no process is read each second, nor given per-thread counters, while it would wait to pay; the exec
	// tracepoints are loaded at once too (ExecTracepoints, unless ExecSource says otherwise).
	LongRunning bool
	// ExactBaseline has the baseline sample read the smaps_rollup of every process it finds, as the closing
	// sample does: for a caller that reports memory averaged over a short window (tare density's
	// kube-reserved PSS), where statm's estimates (Detail.StatmOnly) of the idle processes would stand in
	// for most of the window. Without it the baseline reads statm only and the smaps_rollup of the
	// processes it found idle is spread over the detail samples after it (firstSmaps): start-up does not
	// grow with the node's idle processes.
	ExactBaseline bool
	// ExecSource chooses what follows process starts (starts.go): ExecAuto, ExecConnector or
	// ExecTracepoints. The last two are for tests, and to compare the two.
	ExecSource ExecSource
	// BPFPrograms returns BPF programs of tare's loaded outside the sampler (the block I/O tracer's), whose
	// run time Sample.SelfBPF includes; nil for none.
	BPFPrograms func() []bpfstats.Program
}

// Sampler takes samples of the node. It is not safe for concurrent use.
type Sampler struct {
	opts         Options
	pfs          procfs.FS
	node         *NodeReader
	res          *kernel.ResourceReader
	ts           *kernel.TaskstatsClient
	exits        *kernel.ExitListener
	execs        *starts
	execed       map[int]time.Time  // the processes the exec watcher saw exec, as this sample took them
	cgroups      kernel.CgroupPaths // cgroup paths by the task pass's cgroup IDs, for identity
	procs        map[int]*procState
	recent       map[int]recentExit
	reapedBy     map[int]int64       // parent PID -> synthetic process of children tare never saw (ledger.go)
	ledgers      map[int]*ledger     // PID -> its cutime+cstime account (ledger.go)
	heldExits    []kernel.ExitRecord // exits of listed processes met while closing the baseline sample
	earlyExits   []kernel.ExitRecord // exits drained before the baseline sample listed /proc
	baseDone     map[int]bool        // PIDs whose end the baseline booked (ledger.go): a late notification is not news
	baseZombies  []kernel.ExitRecord // zombies the baseline listed, booked when it ends (ledger.go)
	ending       []*procState        // processes found gone during this sample's pass (ledger.go)
	cuts         []pendingCut        // cutime readings of this pass, booked after the ended processes
	nextID       int64
	seq          int
	lastTime     time.Time
	meta         Meta
	denied       map[string]int            // processes whose kind of file was refused, each counted once
	deniedIDs    map[string]map[int64]bool // which ones (noteDenied)
	warned       map[string]bool
	warn         func(string)
	uncached     bool // the open file limit was reached: new processes are read without thread counters
	idleEvery    int  // idle processes are read every idleEvery samples (one second)
	lastList     time.Time
	listedLoss   int    // notifications lost (exits dropped or unread, starts lost) when /proc was last listed
	drainErrs    int    // exit notification reads that failed part way
	lastListBoot uint64 // boot ticks at the last full listing of /proc
	pidBuf       []int
	lastNode     Node
	final        bool             // this sample is the window's closing one: every process lacking smaps_rollup is read
	details      int              // detail samples taken after the baseline (refresh.go: firstSmaps)
	stuck        kernel.StuckView // reads of cmdline and smaps_rollup that did not answer (kernel/blockingread.go)
	act          *activity        // which processes ran since the previous sample (activity.go); nil without it
	likes        *lookAlikes      // idle processes' memory read once a kind (lookalike.go); nil to read each
	bpfStats     io.Closer        // keeps the kernel's BPF run-time statistics on (selfbpf.go); nil without them
}

// New opens every source this host and privilege level allow and says what it could not open.
// warn receives one-line warnings (nil discards them).
func New(ctx context.Context, opts Options, warn func(string)) (*Sampler, error) {
	opts.ProcRoot, opts.SysRoot = kernel.ProcRootOr(opts.ProcRoot), kernel.SysRootOr(opts.SysRoot)
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
	var res *kernel.ResourceReader
	if !opts.NoResources {
		if res, err = kernel.NewResourceReader(opts.ProcRoot, opts.SysRoot); err != nil {
			return nil, err
		}
	}
	s := &Sampler{opts: opts, pfs: pfs, node: node, res: res, procs: map[int]*procState{}, recent: map[int]recentExit{},
		reapedBy: map[int]int64{}, ledgers: map[int]*ledger{}, baseDone: map[int]bool{}, denied: map[string]int{}, deniedIDs: map[string]map[int64]bool{}, warned: map[string]bool{}, warn: warn}
	detailEvery := max(1, int(opts.Detail/opts.Interval))
	s.idleEvery = max(1, int(time.Second/opts.Interval))
	s.stuck = kernel.BlockingReads(opts.ProcRoot).View()
	s.likes = newLookAlikes(opts)
	host, _ := os.Hostname()
	if opts.CgroupRoot != "" {
		if err := node.UseCgroupRoot(opts.CgroupRoot); err != nil {
			node.Close()
			return nil, fmt.Errorf("cgroup root: %w", err)
		}
	}
	s.meta = Meta{CPUs: kernel.OnlineCPUs(opts.SysRoot), ClockTicks: kernel.UserHZ, Interval: opts.Interval, Detail: opts.Interval * time.Duration(detailEvery),
		SelfPID: opts.SelfPID, CgroupSource: node.CgroupSource(), NodeReference: node.Reference(), Limitations: node.Limitations()}
	kc := s.meta.describeHost(opts.ProcRoot, opts.HostRoot, host)
	s.meta.KernelHZ, s.meta.IRQTime, s.meta.TicklessIdle = kc.HZ, kc.IRQTimeAccounting, kc.TicklessIdle
	s.meta.PodRoot, s.meta.PIDNamespace = opts.PodRoot, kernel.Namespace(opts.ProcRoot, opts.SelfPID, "pid")
	if err := s.openPrivileged(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// openPrivileged opens the sources that need privileges, each falling back with a limitation that says
// why; the error is for a task pass forced by taskiter.PassEnv that cannot be used.
func (s *Sampler) openPrivileged(ctx context.Context) error {
	pass, err := taskiter.PassFromEnv()
	if err != nil {
		return err
	}
	before := len(s.meta.Limitations)
	s.openSources(ctx, pass)
	switch {
	case pass == taskiter.PassProc:
		s.meta.Limitations = append(s.meta.Limitations, fmt.Sprintf("no task pass (%s=%s): every process is read each second whether it ran or not", taskiter.PassEnv, pass))
	case pass == taskiter.PassAuto:
	case s.act == nil:
		return fmt.Errorf("task pass %s, forced by %s: the sampler cannot use a task pass here: %s", pass, taskiter.PassEnv, strings.Join(s.meta.Limitations[before:], "; "))
	default:
		if err := s.act.load(); err != nil {
			return err
		}
		s.usingPass()
	}
	return nil
}

func (s *Sampler) openSources(ctx context.Context, pass taskiter.Pass) {
	s.meta.CPUSource, s.meta.ExitSource = "schedstat", "cutime"
	if s.opts.Unprivileged {
		s.meta.Limitations = append(s.meta.Limitations, "unprivileged sources forced: per-thread schedstat and parents' cutime/cstime")
		return
	}
	if kernel.CanLoadBPF() {
		s.openBPFStats()
	}
	ts, err := kernel.OpenTaskstats()
	if err != nil {
		why := "taskstats exit notifications and the proc connector need CAP_NET_ADMIN"
		if !errors.Is(err, kernel.ErrPermission) {
			why = "taskstats cannot be used (above)"
		}
		s.meta.Limitations = append(s.meta.Limitations,
			fmt.Sprintf("taskstats: %v; per-process CPU comes from per-thread schedstat (threads that exit between samples lose their last interval)", err),
			"short-lived processes: "+why+"; their CPU is credited through their parents' cutime/cstime (10 ms resolution, no command lines)")
		return
	}
	exits, err := kernel.ListenExits(s.opts.SysRoot)
	if err != nil {
		_ = ts.Close()
		s.meta.Limitations = append(s.meta.Limitations, fmt.Sprintf("taskstats exit notifications: %v", err))
		return
	}
	s.ts, s.exits, s.meta.CPUSource = ts, exits, "schedstat+taskstats"
	// Skipping processes that did not run relies on exit notifications to settle those that end. The
	// iterator is loaded later, once it pays for itself (activity.go).
	if pass == taskiter.PassProc {
		// Named by openPrivileged.
	} else if act, err := newActivity(s.opts.ProcRoot, pass); err != nil {
		s.meta.Limitations = append(s.meta.Limitations,
			fmt.Sprintf("%v; every process is read each second whether it ran or not (costlier with thousands of processes)", err))
	} else {
		s.act = act
		if s.opts.LongRunning {
			act.reads = loadAfterReads
		}
	}
	// The tracepoints cost tare nothing per process started; the proc connector wakes it at each.
	// Both report the initial PID namespace's PIDs: they name the processes of ProcRoot only if its PID 1 is
	// in that namespace (tare itself may be in another and read the host's /proc).
	if ns := kernel.Namespace(s.opts.ProcRoot, 1, "pid"); ns != "" && ns != kernel.InitPIDNamespace {
		s.meta.Limitations = append(s.meta.Limitations, fmt.Sprintf("process starts: %s lists a PID namespace of its own (%s), "+
			"and the exec tracepoints and the proc connector report the host's PIDs: short-lived processes are named by their comm only (give tare the host's /proc, or the host's PID namespace: hostPID)", s.opts.ProcRoot, ns))
		s.meta.ExitSource = "taskstats"
		return
	}
	mode := s.opts.ExecSource
	if mode == ExecAuto && s.opts.LongRunning {
		mode = ExecTracepoints // they pay for themselves within minutes on any node (starts.go)
	}
	st, err := openStarts(ctx, s.opts.ProcRoot, mode)
	if err != nil {
		s.meta.Limitations = append(s.meta.Limitations,
			fmt.Sprintf("%v; short-lived processes are named by their 16-character comm only", err))
		s.meta.ExitSource = "taskstats"
		return
	}
	s.execs = st // Meta names it: it changes when the tracepoints take over
}

// Meta describes the sources in use; Limitations grows as the sampler meets unreadable files.
func (s *Sampler) Meta() Meta {
	m := s.meta
	m.Limitations = append([]string(nil), s.meta.Limitations...)
	if s.execs != nil {
		m.ExitSource = s.execs.source()
		if l := s.execs.limitation(); l != "" {
			m.Limitations = append(m.Limitations, l)
		}
	}
	m.Limitations = append(m.Limitations, s.stuck.Limitations()...)
	if l := s.act.limitation(); l != "" {
		m.Limitations = append(m.Limitations, l)
	}
	if l := s.likes.limitation(); l != "" {
		m.Limitations = append(m.Limitations, l)
	}
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
		m.Limitations = append(m.Limitations, fmt.Sprintf("%d process-start notifications (or batches of them) were dropped: tare fell behind, some short-lived command lines are unknown", s.execs.Lost()))
	}
	return m
}

// Close stops the exec watcher and releases every file and socket the sampler holds.
func (s *Sampler) Close() {
	if s.execs != nil {
		_ = s.execs.Close()
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
	if s.bpfStats != nil {
		_ = s.bpfStats.Close()
	}
}

// Sample takes one sample. The first call is the baseline: it records who is there and credits nothing.
func (s *Sampler) Sample() (Sample, error) { return s.sample(false) }

// SampleFinal takes the window's closing sample: every process is read, idle or not, and /proc is listed,
// so that no CPU is left between a process's last reading and the end of the window.
func (s *Sampler) SampleFinal() (Sample, error) { return s.sample(true) }

func (s *Sampler) sample(final bool) (Sample, error) {
	start := time.Now()
	boot := kernel.BootTicks()
	detail := s.meta.DetailSample(s.seq) || final
	s.final = final
	if detail && s.seq > 0 {
		s.details++
	}
	// The slow node figures are read at least once a second. With the proc connector naming new processes
	// and taskstats reporting exits, listing /proc is only a safety net (listing).
	full := s.execs == nil || detail || s.seq%s.idleEvery == 0
	// The task time is read with /proc/stat, and the sample's time is when /proc/stat was read, not when
	// the sample began: node busy is the CPUs' time less /proc/stat's idle, so a sampler held up between
	// taking the time and reading /proc/stat (a busy node) would count the hold-up as busy. Read after the
	// processes (as it once was), the task time spanned Took more or less than the interval: a quick
	// opening pass and a slow closing one read 2.2 cores of task time in a one-second window on a 2-core
	// node. The processes are read after it, so at the window's end they can be ahead of it by what they
	// ran during the closing pass: the window's resolution allows for it.
	node, now, err := s.node.Read(full, s.lastNode)
	if err != nil {
		return Sample{}, err
	}
	// The memory, disk and network counters are compared between a window's first and last samples (the
	// USE view), so they are read on detail samples, the baseline and the final one among them, and carried
	// over between: at 3,000 processes, reading them every second was a tenth of tare measure's steady cost.
	switch {
	case s.res == nil:
	case detail:
		var err error
		if node.Resources, err = s.res.Read(); err != nil {
			s.warnOnce("resources", err.Error())
		}
	default:
		node.Resources = s.lastNode.Resources
	}
	s.lastNode = node
	smp := Sample{Seq: s.seq, Time: now, Node: node}
	if s.seq > 0 {
		smp.Elapsed = now.Sub(s.lastTime)
	}
	if s.exits != nil {
		s.heldExits = append(s.heldExits, s.drainExits()...)
		recs := s.heldExits
		s.heldExits = nil
		if s.seq == 0 {
			s.earlyExits = recs // settled with the baseline, once /proc is listed (baselineExits)
		} else {
			// The ledgers are read between two drains (ledger.go): every reap a reading holds has its
			// notification in one of them.
			s.creditExits(&smp, mergeExits(recs))
			cuts := s.ledgerReadings()
			s.creditExits(&smp, mergeExits(s.drainExits()))
			s.settleLedgers(&smp, cuts)
		}
	}
	var pids []int
	list, loss := s.listing(now, detail, final)
	if list {
		if pids, err = kernel.ListPIDs(s.opts.ProcRoot); err != nil {
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
	var execed map[int]time.Time
	if s.execs != nil {
		execed = s.execs.Execed()
	}
	s.execed = execed // for the processes new in this sample (identity)
	for _, pid := range pids {
		st, ok := s.procs[pid]
		if !ok {
			s.sampleNew(&smp, pid, boot, detail)
			continue
		}
		if at, ok := execed[pid]; ok && at.After(st.identAt) {
			s.reidentify(&smp, st) // reexec.go
		}
		// A process that did not run has nothing new to read. On a detail sample, one that did not run since
		// the previous detail sample only has its memory re-read, on its turn (refresh.go).
		if s.act.idle(pid) {
			if !detail {
				continue
			}
			if st.sinceDetail == 0 && (st.detail != nil || st.kernel) {
				s.idleDetail(&smp, st, boot)
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
		s.lastListBoot, s.lastList, s.listedLoss = boot, now, loss
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
	if s.seq == ledgerChecks {
		clear(s.baseDone) // a notification this late is another process's under a reused PID
	}
	smp.SelfBPF = s.selfBPF()
	smp.Took = time.Since(start)
	smp.Procs = coalesce(smp.Procs)
	s.seq++
	s.lastTime = now
	return smp, nil
}

// drainExits reads the exit notifications queued so far, with the command lines of their execs.
func (s *Sampler) drainExits() []kernel.ExitRecord {
	recs, err := s.exits.Drain()
	if err != nil {
		s.warnOnce("drain", err.Error())
		s.drainErrs++ // the rest of that read is lost: list /proc at the next chance
	}
	if s.execs != nil {
		s.execs.Sync() // every exec that preceded these exits is queued by now
	}
	return recs
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

// knownAndNewPIDs lists the processes tare follows plus those forked since the last sample.
func (s *Sampler) knownAndNewPIDs() []int {
	pids := s.pidBuf[:0]
	for pid := range s.procs {
		pids = append(pids, pid)
	}
	born := s.execs.NewPIDs()
	sort.Ints(born) // parents before children, so children find their parent's ID
	for _, pid := range born {
		if _, ok := s.procs[pid]; ok {
			continue
		}
		// Forked and already ended: this sample's exit notifications credited it (addTransient), so
		// there is nothing in /proc to read (on a node starting short processes, most of those forked
		// since the last sample). A PID forked twice within one interval would need the kernel to wrap
		// around pid_max meanwhile; such a process is found at the next listing. A process tare had read
		// that ended, its PID taken by a new one, is no such case: the new one is read.
		if r, ok := s.recent[pid]; ok && r.seq == s.seq && r.transient {
			continue
		}
		pids = append(pids, pid)
	}
	s.pidBuf = pids
	return pids
}

// listEvery is how often a long-running sampler lists /proc when no start or exit notification was lost.
const listEvery = time.Minute

// listing says whether this sample lists /proc, and the count of lost notifications the listing covers
// (to keep once it succeeded). Without start notifications every sample lists: that is how it finds new
// processes. With them, the listing is a safety net for notifications the kernel dropped (or tare could
// not read), taken at the baseline and the final sample, and on a detail sample (with exit notifications
// too) only when one was lost since the last listing or listEvery has passed: a listing costs about
// 0.3 ms on a quiet node of ~100 processes and 4 ms at 3,000, which on every detail sample was a tenth
// of tare measure's steady cost there.
func (s *Sampler) listing(now time.Time, detail, final bool) (bool, int) {
	switch {
	case s.execs == nil || final || s.seq == 0:
		return true, s.listedLoss
	case !detail:
		return false, s.listedLoss
	case s.exits == nil:
		return true, s.listedLoss
	}
	loss := s.exits.Dropped + s.execs.Lost() + s.drainErrs
	return loss != s.listedLoss || now.Sub(s.lastList) >= listEvery, loss
}

func (s *Sampler) warnOnce(key, msg string) {
	if !s.warned[key] {
		s.warned[key] = true
		s.warn(msg)
	}
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
