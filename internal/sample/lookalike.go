package sample

import (
	"fmt"

	"github.com/tare-dev/tare/internal/kernel"
)

// A node's idle processes come in kinds: a thousand sleepers of one shell script, one pause process per
// pod, one shim per container. The smaps_rollup of each, a walk of its page tables, was most of the CPU of a
// one-minute tare measure with 3,000 idle processes (0.3 s of its 1 s). Processes of one kind have their
// own anonymous pages and share their executable's and libraries' pages alike, so a sampler that does not
// run for long reads the smaps_rollup of the first idle process of a kind, and of any whose statm differs
// from every one read so far, and the others' memory follows the reading that looks like theirs
// (kernel.ReadMemoryLike): their own anonymous pages, and the reading's share of shared pages, in
// proportion. At most kernel.MaxLikes readings of one kind are kept.
//
// A kind is a process's group, executable and name (ProcInfo.Group, Exe, Comm): processes of one group
// and executable map the same files. For every sampler but a long-running one (the agent), whose
// processes are read on their own turns, and those where Options.ExactBaseline asks for each process's
// own reading (tare measure --exact-memory, tare density): so tare measure and explain, experiment's
// trials and datapath's runs. A process that follows a reading (kernel.Detail.Like) has its own read as
// soon as it runs, as a process read from statm alone does.

type likeKind struct{ group, exe, comm string }

// likeReadings are the readings of one kind others may follow (at most kernel.MaxLikes), and the detail
// sample each was taken at: one older than smapsEvery detail samples is followed no more (in a long run the
// sharing of its pages has moved since).
type likeReadings struct {
	ds []kernel.Detail
	at []int
}

// lookAlikes holds the smaps_rollup readings of idle processes that others of their kind follow.
type lookAlikes struct {
	read     map[likeKind]*likeReadings
	followed int // processes whose memory follows a look-alike's reading
	own      int // idle processes whose own smaps_rollup was read by this path
}

func newLookAlikes(opts Options) *lookAlikes {
	if opts.LongRunning || opts.ExactBaseline {
		return nil
	}
	return &lookAlikes{read: map[likeKind]*likeReadings{}}
}

// firstMemory fills d, the statm-only reading of an idle process due for its first smaps_rollup at detail
// sample at, from a look-alike's reading (with the statm figures d has) or from its own (still StatmOnly if
// that fails); it reports false
// when the process has no kind (no executable read), for the caller to read it as any other.
func (l *lookAlikes) firstMemory(procRoot string, info *ProcInfo, at int, d *kernel.Detail) bool {
	if l == nil || info.Exe == "" {
		return false
	}
	k := likeKind{info.Group, info.Exe, info.Comm}
	r := l.read[k]
	if r == nil {
		r = &likeReadings{}
		l.read[k] = r
	}
	r.dropOlder(at - smapsEvery)
	// d's statm figures are carried: a statm-only reading is of a process that has not run since it was
	// taken (one that ran is read whole at its next detail sample, lifecycle.go; without a task pass or
	// taskstats, "ran" is /proc/PID/stat's ticks, blind to a run under one), and they stood for it so far.
	// Not reading statm again saves a read of every follower (2,000 at the closing sample of a one-minute
	// run beside 3,000 idle processes: some 30 ms of CPU).
	followed := kernel.ReadMemoryLike(procRoot, info.Key.PID, info.Comm, r.ds, d, true) >= 0
	// A failed read keeps the statm figures it started from: they stay marked as such.
	d.StatmOnly = d.StatmOnly && d.SmapsErr != nil
	switch {
	case followed:
		l.followed++
	case !d.StatmOnly:
		l.own++
		if len(r.ds) < kernel.MaxLikes && kernel.Followable(d) {
			r.ds, r.at = append(r.ds, *d), append(r.at, at)
		}
	}
	return true
}

// dropOlder removes the readings taken before detail sample since.
func (r *likeReadings) dropOlder(since int) {
	n := 0
	for i := range r.ds {
		if r.at[i] >= since {
			r.ds[n], r.at[n] = r.ds[i], r.at[i]
			n++
		}
	}
	r.ds, r.at = r.ds[:n], r.at[:n]
}

// limitation says how many processes' memory follows a look-alike's reading, if any.
func (l *lookAlikes) limitation() string {
	if l == nil || l.followed == 0 {
		return ""
	}
	return fmt.Sprintf("memory of %d idle processes follows the smaps_rollup of an idle process of their kind (group, executable and name; "+
		"statm's anonymous pages within 2%% or 4 pages, its shared ones within an eighth) instead of their own (%d read): "+
		"tare measure --exact-memory reads each one's", l.followed, l.own)
}
