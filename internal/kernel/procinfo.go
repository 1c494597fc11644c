package kernel

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"unicode"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/redact"
)

const pfKthread = 0x00200000 // PF_KTHREAD in /proc/PID/stat flags

// Identity is what tare reads once when it first sees a process.
type Identity struct {
	Stat    ProcStat
	Cmdline string // redacted; [comm] when it cannot be read
	Exe     string // the executable's path, "" when unreadable
	Cgroup  string // the cgroup that names the process's pod (see cgroupOf)
	UID     int
	Kernel  bool // a kernel thread
}

// ReadIdentity reads stat, cmdline, exe, cgroup and owner of one process. A process whose command line
// cannot be read (a kernel thread, or a process whose memory map is locked: see blockingread.go) is named
// [comm].
func ReadIdentity(procRoot string, pid int) (Identity, error) {
	st, err := ReadProcStat(procRoot, pid)
	if err != nil {
		return Identity{}, err
	}
	id, _ := IdentityOf(procRoot, pid, st, -1, st.Quiet(), nil, CgroupIDs{})
	return id, nil
}

// IdentityOf completes the identity of a process whose stat the caller has (from a task pass): its command
// line, executable and cgroup, read as ReadIdentity reads them, and its owner, uid, or the owner of
// /proc/PID when uid is negative. quiet says the command line may be read without the deadline
// (ProcStat.Quiet at a stat reading just before, after which the process has not run: not a stat of some
// time ago). ids are its cgroups' IDs (from the task pass, or zero): when cgroups (nil for none) has the
// path of a process of the same ones, its cgroup file is read only if its executable cannot be (to tell an
// ended process), and otherwise what it gives is remembered there. The error matches ErrGone when the
// process has ended since the caller's stat (its cgroup file is gone); the identity is then what could be
// read.
func IdentityOf(procRoot string, pid int, st ProcStat, uid int, quiet bool, cgroups *CgroupPaths, ids CgroupIDs) (Identity, error) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	id := Identity{Stat: st, Kernel: st.KernelThread(), UID: max(uid, 0)}
	// A kernel thread has no memory map, hence no command line: not worth a goroutine.
	if !id.Kernel {
		if b, err := BlockingReads(procRoot).readQuiet(pid, st.Comm, "cmdline", quiet); err == nil {
			id.Cmdline = redact.Join(splitCmdline(b))
		}
	}
	if id.Cmdline == "" {
		id.Cmdline = "[" + st.Comm + "]"
	}
	exe, exeErr := os.Readlink(filepath.Join(dir, "exe"))
	if exeErr == nil {
		id.Exe = exe
	}
	var err error
	// An exiting process's file names the root of every v1 hierarchy, whatever its cgroups were: a zombie's
	// is read (one exiting still has no executable left to read: read too).
	if cg, ok := cgroups.Lookup(ids); ok && exeErr == nil && st.State != 'Z' && st.State != 'X' {
		id.Cgroup = cg
	} else if b, rerr := readRecord(filepath.Join(dir, "cgroup")); rerr == nil {
		if cg, err := cgroupOf(b); err == nil {
			id.Cgroup = cg
			cgroups.learn(procRoot, ids, b, cg)
		}
	} else if gerr := gone(pid, rerr); errors.Is(gerr, ErrGone) {
		err = gerr
	}
	if uid < 0 {
		var sys unix.Stat_t
		if unix.Stat(dir, &sys) == nil {
			id.UID = int(sys.Uid)
		}
	}
	return id, err
}

// splitCmdline splits /proc/PID/cmdline at its NUL separators.
func splitCmdline(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}

// gone maps "no such file" and ESRCH to ErrGone so callers can tell an exited process from a real error.
func gone(pid int, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("process %d: %w", pid, ErrGone)
	}
	return fmt.Errorf("process %d: %w", pid, err)
}

// ExecReadFunc reads what the exec watcher keeps of a process: its redacted command line, and, when stat is
// true, its parent from /proc/PID/stat (0 otherwise). The watcher passes false when it knows the parent from
// the process's fork: the stat read cost more than the command line's.
type ExecReadFunc func(pid int, stat bool) (cmdline string, ppid int, err error)

// CmdlineReader returns the reader the exec watcher uses. It waits at most BlockingReadTimeout for a command
// line, and fails with ErrStuck when the process does not answer. An empty command line (a process ending
// as it is read) is named by its comm, from stat, whatever stat says.
func CmdlineReader(procRoot string) ExecReadFunc {
	files := BlockingReads(procRoot)
	return func(pid int, stat bool) (string, int, error) {
		var st ProcStat
		if stat {
			var err error
			if st, err = ReadProcStat(procRoot, pid); err != nil {
				return "", 0, err
			}
		}
		b, err := files.read(pid, st.Comm, "cmdline")
		if err != nil {
			return "", 0, err
		}
		cmd := redact.Join(splitCmdline(b))
		if cmd == "" {
			if !stat {
				if st, err = ReadProcStat(procRoot, pid); err != nil {
					return "", 0, err
				}
			}
			cmd = "[" + st.Comm + "]"
		}
		return cmd, st.PPID, nil
	}
}

// Detail is the slow-cadence reading of a process: memory, I/O and threads.
type Detail struct {
	RSS, PSS, Private     uint64 // bytes, from smaps_rollup (Private is Private_Clean+Private_Dirty)
	ReadBytes, WriteBytes uint64 // cumulative bytes that reached the storage layer, from io
	Threads               int
	StatmRSS              uint64 // resident pages from statm, to tell whether smaps_rollup needs reading again
	StatmShared           uint64 // resident file-backed and shmem pages from statm, to tell look-alikes apart (ReadMemoryLike)
	SmapsAnon             uint64 // bytes of anonymous pages at the last smaps_rollup reading (its Anonymous line)
	// Like says RSS, PSS and private memory follow a look-alike's smaps_rollup reading (ReadMemoryLike), not
	// one of this process's own: Estimated, until its own is read.
	Like bool
	// SmapsStatm is StatmRSS when smaps_rollup was last read, or when a look-alike's reading was followed
	// (Like), 0 when neither: RSS, PSS and private memory follow statm from it while statm stays within
	// smapsDrift of it (see Estimated).
	SmapsStatm uint64
	// StatmOnly says smaps_rollup was not read for this reading (SmapsNot): RSS is statm's resident size,
	// and PSS and private memory are its anonymous resident pages (resident less shared), the part of a
	// process's memory that is its own in nearly every process. Not in a child forked without exec: the
	// anonymous pages it still shares with its parent copy-on-write count as its own until smaps_rollup.
	StatmOnly bool
	// SmapsErr and IOErr say why smaps_rollup or io could not be read (nil when they were).
	SmapsErr, IOErr error
	// Quiet is ProcStat.Quiet at this reading's stat. ReadMemory of a copy of this reading for a process that
	// has not run since (a refresh) reads smaps_rollup without the deadline when it is set.
	Quiet bool
}

// Smaps says whether a detail reading reads smaps_rollup.
type Smaps int

// The choices of Smaps.
const (
	SmapsOnDrift Smaps = iota // when statm moved beyond smapsDrift since it was last read, or never was
	SmapsNow                  // whatever statm says
	SmapsNot                  // not at all: memory from statm alone (StatmOnly)
)

// ReadDetail reads the thread count (from stat, unless the caller has just read it), io and memory
// (ReadMemory). Permission errors are returned per source so the sampler can tell the user which processes
// it could not see into.
func ReadDetail(procRoot string, pid int, stat *ProcStat, prev *Detail, smaps Smaps) Detail {
	return ReadDetailIO(procRoot, pid, stat, prev, smaps, nil)
}

// IOCounters are the figures of /proc/PID/io tare keeps, when the caller has them from elsewhere (a task
// pass's description of the process).
type IOCounters struct{ ReadBytes, WriteBytes uint64 }

// ReadDetailIO is ReadDetail with the process's I/O counters given; nil reads /proc/PID/io.
func ReadDetailIO(procRoot string, pid int, stat *ProcStat, prev *Detail, smaps Smaps, io *IOCounters) Detail {
	var d Detail
	if stat == nil {
		if st, err := ReadProcStat(procRoot, pid); err == nil {
			stat = &st
		}
	}
	comm := ""
	if stat != nil {
		d.Threads, comm, d.Quiet = stat.NumThreads, stat.Comm, stat.Quiet()
	}
	if smaps == SmapsNot {
		readStatm(procRoot, pid, &d)
	} else {
		ReadMemory(procRoot, pid, comm, prev, smaps == SmapsNow, &d)
	}
	if io != nil {
		d.ReadBytes, d.WriteBytes = io.ReadBytes, io.WriteBytes
	} else {
		d.ReadBytes, d.WriteBytes, d.IOErr = ReadIO(procRoot, pid)
	}
	return d
}

// ReadIO reads read_bytes and write_bytes of /proc/PID/io: the bytes the process's threads, live and
// exited, made the storage layer read and write.
func ReadIO(procRoot string, pid int) (read, write uint64, err error) {
	b, err := readRecord(filepath.Join(procRoot, strconv.Itoa(pid), "io"))
	if err != nil {
		return 0, 0, err
	}
	return parseIO(b)
}

// smapsDrift is how far statm's resident size may move from its value at the last smaps_rollup reading
// before smaps_rollup is read again: 2% of it, at least 64 pages (256 KiB with 4 KiB pages). Within it, the
// change is taken as the process's own private pages (a Go or Java heap growing or giving memory back,
// which is what moves the resident size of a long-lived process): RSS, PSS and private memory move by it
// alike. So the figures are at most that far from what smaps_rollup would say, and the whole reading is
// refreshed on the process's turn (ReadMemory's refresh) whatever statm says.
func smapsDrift(statm uint64) uint64 { return max(statm/50, 64) }

// ReadMemory fills d's RSS, PSS and private memory. smaps_rollup walks the page tables and is the costliest
// read tare makes (most of the CPU of a long-running agent on a node of busy Go processes, whose resident
// size moves a little between any two readings), so it is read again only when statm (which needs no lock)
// says the resident size moved by more than smapsDrift since smaps_rollup was last read, or when refresh is
// set; in between, the figures follow statm's change (Estimated).
//
// smaps_rollup waits for the process's memory-map lock, so it is read with a deadline (blockingread.go),
// unless d.Quiet says the process cannot hold it: the caller sets it from a stat reading after which the
// process has not run (ReadDetail's own, or the one of the reading a refresh copies).
// When it does not answer, smapsErr matches ErrStuck, RSS comes from statm, and PSS and private memory are
// carried over from prev, or 0 without it; the next detail reading tries again.
func ReadMemory(procRoot string, pid int, comm string, prev *Detail, refresh bool, d *Detail) {
	d.SmapsErr = nil
	readStatmPages(procRoot, pid, d)
	if prev != nil && !refresh && follows(prev, d) {
		follow(prev, d)
		return
	}
	readSmaps(procRoot, pid, comm, prev, d)
}

// ReadMemoryLike fills d's RSS, PSS and private memory as ReadMemory does for a process with no reading of
// its own yet, from likes, the smaps_rollup readings of processes whose memory the caller expects to be made
// the same way (a node's thousand idle sleepers, one pause process per pod). statm splits a process's
// resident pages into anonymous ones, its own but for a fork's copy-on-write pages, and shared ones (file
// pages and shmem), whose share of PSS depends on how many processes map them. When its anonymous pages are
// within likeDrift of a reading's and its shared ones within sharedDrift, d follows that reading (Estimated):
// its own anonymous pages, and the reading's PSS and private memory beyond its anonymous pages, in
// proportion to the shared pages: as if its shared pages were as shared as the look-alike's. Look-alikes
// fault in their libraries' pages a little differently (3,000 sleepers: the same 27 anonymous pages, 387 to
// 428 shared ones), and those pages are shared alike. d follows the median of the readings it may follow
// when there are likeQuorum of them (followMedian), and the index of that reading is returned; otherwise
// d is read from its own smaps_rollup and -1 is returned.
//
// carried says that d's statm figures are the process's own from a reading it has not run since (a
// statm-only reading of an idle process): they are followed as they are, without reading statm again, as
// the caller's statm-only figures stood in for the process until now. Mostly a process's own running moves
// its resident pages; reclaim does too, and rarer outside hands (KSM, another process's process_madvise, a
// mapped file truncated). When d follows no reading, its statm is read with its smaps_rollup, so that its
// own reading's figures are of one moment.
func ReadMemoryLike(procRoot string, pid int, comm string, likes []Detail, d *Detail, carried bool) int {
	d.SmapsErr = nil
	if !carried || d.StatmRSS == 0 {
		carried = false
		readStatmPages(procRoot, pid, d)
	}
	if i := followMedian(likes, d); i >= 0 {
		return i
	}
	if carried {
		readStatmPages(procRoot, pid, d)
	}
	readSmaps(procRoot, pid, comm, nil, d)
	return -1
}

// MaxLikes is how many readings ReadMemoryLike considers: a caller keeps no more for one kind.
const MaxLikes = 8

// likeQuorum is how many readings d must be able to follow for it to follow one: one process of a kind
// may map a few file pages no other maps, which its reading counts as its own in full; followed alone, it
// would lend its followers those pages (600 sleepers: their PSS summed 10% high).
const likeQuorum = 3

// followMedian fills d from the reading, among those it may follow, whose estimate of its PSS is the
// median, when there are likeQuorum of them at least, and returns that reading's index; -1 otherwise.
func followMedian(likes []Detail, d *Detail) int {
	type est struct {
		i int
		d Detail
	}
	var ests [MaxLikes]est
	n := 0
	for i := range likes {
		e := *d
		if n < len(ests) && followLike(&likes[i], &e) {
			ests[n] = est{i, e}
			n++
		}
	}
	if n < likeQuorum {
		return -1
	}
	sort.Slice(ests[:n], func(a, b int) bool { return ests[a].d.PSS < ests[b].d.PSS })
	m := ests[n/2]
	*d = m.d
	return m.i
}

// followLike fills d from l as ReadMemoryLike says, and reports whether it could.
func followLike(l, d *Detail) bool {
	page := uint64(os.Getpagesize())
	if !Followable(l) || d.StatmRSS == 0 || d.StatmShared > d.StatmRSS {
		return false
	}
	anon, lanon := d.StatmRSS-d.StatmShared, l.StatmRSS-l.StatmShared
	if absDiff(anon, lanon) > likeDrift(lanon) || absDiff(d.StatmShared, l.StatmShared) > sharedDrift(l.StatmShared) ||
		l.PSS < lanon*page || l.Private < lanon*page {
		return false
	}
	scale := func(v uint64) uint64 { // the reading's memory beyond its anonymous pages, for d's shared pages
		if l.StatmShared == 0 {
			return 0
		}
		return uint64(float64(v-lanon*page) * float64(d.StatmShared) / float64(l.StatmShared))
	}
	d.RSS = addClamped(l.RSS, (int64(d.StatmRSS)-int64(l.StatmRSS))*int64(page))
	d.PSS, d.Private = anon*page+scale(l.PSS), anon*page+scale(l.Private)
	d.SmapsStatm, d.Like = d.StatmRSS, true
	return true
}

// Followable reports whether other processes may follow d (ReadMemoryLike): it is a smaps_rollup reading of
// the process's own, taken with its statm, whose anonymous pages statm counts as smaps_rollup does (within
// 4 pages). From Linux 6.2 to 6.15 statm sums the per-CPU RSS counters without their unfolded parts, so it can
// read a small process's anonymous pages low by tens of pages on a node of many CPUs: a follower's anonymous
// pages, from its own statm, would be off as much, so a kind whose reading disagrees is read process by
// process.
func Followable(d *Detail) bool {
	if d.StatmOnly || d.Like || d.SmapsErr != nil || d.SmapsStatm != d.StatmRSS || d.StatmRSS == 0 || d.StatmShared > d.StatmRSS {
		return false
	}
	page := uint64(os.Getpagesize())
	return absDiff((d.StatmRSS-d.StatmShared)*page, d.SmapsAnon) <= 4*page
}

// likeDrift is how far statm's anonymous pages may be from a look-alike's for a process to follow its
// reading (ReadMemoryLike): 2%, as smapsDrift, but at least 4 pages instead of 64, as the processes that
// follow look-alikes are mostly small (a sleeper has some 27 anonymous pages).
func likeDrift(pages uint64) uint64 { return max(pages/50, 4) }

// sharedDrift is how far statm's shared pages may be from a look-alike's for a process to follow its
// reading: an eighth, at least 4 pages.
func sharedDrift(pages uint64) uint64 { return max(pages/8, 4) }

// readStatmPages sets d's statm figures, 0 when statm cannot be read (a process gone: its smaps_rollup
// cannot be read either), and reports whether it could be read.
func readStatmPages(procRoot string, pid int, d *Detail) bool {
	d.StatmRSS, d.StatmShared = 0, 0
	b, err := readRecord(filepath.Join(procRoot, strconv.Itoa(pid), "statm"))
	if err != nil {
		return false
	}
	d.StatmRSS, d.StatmShared = parseStatm(b)
	return true
}

// follows reports whether d, whose statm was just read, may follow prev's smaps_rollup reading: prev has
// one, and statm's resident size is within smapsDrift of what it was then.
func follows(prev, d *Detail) bool {
	return !prev.StatmOnly && prev.SmapsErr == nil && d.StatmRSS != 0 && prev.SmapsStatm != 0 &&
		absDiff(d.StatmRSS, prev.SmapsStatm) <= smapsDrift(prev.SmapsStatm)
}

// follow moves prev's RSS, PSS and private memory by statm's change since prev into d.
func follow(prev, d *Detail) {
	d.SmapsStatm, d.Like = prev.SmapsStatm, prev.Like
	page := int64(os.Getpagesize())
	moved := (int64(d.StatmRSS) - int64(prev.StatmRSS)) * page
	d.RSS, d.PSS, d.Private = addClamped(prev.RSS, moved), addClamped(prev.PSS, moved), addClamped(prev.Private, moved)
}

// readSmaps reads d's memory from smaps_rollup, with the deadline unless d.Quiet (ReadMemory).
func readSmaps(procRoot string, pid int, comm string, prev *Detail, d *Detail) {
	if b, err := BlockingReads(procRoot).readQuiet(pid, comm, "smaps_rollup", d.Quiet); err != nil {
		d.SmapsErr = err
		if errors.Is(err, ErrStuck) {
			d.RSS = d.StatmRSS * uint64(os.Getpagesize())
			if prev != nil {
				d.PSS, d.Private = prev.PSS, prev.Private
			}
		}
	} else if m, err := parseSmapsRollup(b); err != nil {
		d.SmapsErr = err
	} else {
		d.RSS, d.PSS, d.Private, d.SmapsAnon = m.rss, m.pss, m.private, m.anon
		d.SmapsStatm, d.Like = d.StatmRSS, false
	}
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

// addClamped adds a signed change to a size, never below zero.
func addClamped(v uint64, by int64) uint64 {
	if by < 0 && uint64(-by) > v {
		return 0
	}
	return uint64(int64(v) + by)
}

// Estimated reports that RSS, PSS and private memory follow statm's change since smaps_rollup was last
// read, or a look-alike's reading (Like), instead of a reading of the process's own.
func (d Detail) Estimated() bool { return d.Like || (d.SmapsStatm != 0 && d.StatmRSS != d.SmapsStatm) }

// readStatm fills d's memory from statm alone (StatmOnly); d stays zero when statm cannot be read.
func readStatm(procRoot string, pid int, d *Detail) {
	if !readStatmPages(procRoot, pid, d) {
		return
	}
	page := uint64(os.Getpagesize())
	d.StatmOnly = true
	d.RSS = d.StatmRSS * page
	d.PSS = (d.StatmRSS - min(d.StatmShared, d.StatmRSS)) * page
	d.Private = d.PSS
}

// parseStatm returns the resident and the shared (file-backed and shmem resident) pages, fields 2 and 3 of
// /proc/PID/statm; 0 for a field missing or malformed.
func parseStatm(b []byte) (resident, shared uint64) {
	f := strings.Fields(string(b))
	if len(f) >= 2 {
		resident, _ = strconv.ParseUint(f[1], 10, 64)
	}
	if len(f) >= 3 {
		shared, _ = strconv.ParseUint(f[2], 10, 64)
	}
	return resident, shared
}

type smapsRollup struct{ rss, pss, private, anon uint64 }

// maxSmapsKB bounds a smaps_rollup figure: 2^54 kB is the whole 64-bit address space.
const maxSmapsKB = 1<<54 - 1

// parseSmapsRollup sums Rss, Pss and Private_Clean+Private_Dirty (kB) from /proc/PID/smaps_rollup, in bytes.
func parseSmapsRollup(b []byte) (smapsRollup, error) {
	var m smapsRollup
	seen := 0
	for rest := string(b); rest != ""; { // line by line, without a slice of them: read for every process
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch k {
		case "Rss":
			dst = &m.rss
		case "Pss":
			dst = &m.pss
		case "Private_Clean", "Private_Dirty":
			dst = &m.private
		case "Anonymous":
			dst = &m.anon
		default:
			continue
		}
		f := firstField(v)
		if f == "" {
			return m, fmt.Errorf("smaps_rollup: empty %s", k)
		}
		kb, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return m, fmt.Errorf("smaps_rollup %s: %w", k, err)
		}
		if kb > maxSmapsKB || *dst > math.MaxUint64-kb<<10 {
			return m, fmt.Errorf("smaps_rollup %s: %d kB is more memory than a 64-bit address space holds", k, kb)
		}
		*dst += kb << 10
		seen++
	}
	if seen < 2 {
		return m, fmt.Errorf("smaps_rollup: no Rss/Pss lines")
	}
	return m, nil
}

// firstField is strings.Fields(s)[0], or "" when s has no field, without the slice.
func firstField(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) })
	if i < 0 {
		return ""
	}
	s = s[i:]
	if j := strings.IndexFunc(s, unicode.IsSpace); j >= 0 {
		s = s[:j]
	}
	return s
}

// SchedstatCPU sums the scheduler runtime (ns) of every thread of pid: the fallback when taskstats is not
// available. CPU of threads that exited since the previous sample is not included.
func SchedstatCPU(pfs procfs.FS, pid int) (uint64, error) {
	threads, err := pfs.AllThreads(pid)
	if err != nil {
		return 0, gone(pid, err)
	}
	var total uint64
	for _, t := range threads {
		s, err := t.Schedstat()
		if err != nil {
			continue // thread exited between listing and reading
		}
		total += s.RunningNanoseconds
	}
	return total, nil
}
