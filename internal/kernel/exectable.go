package kernel

import (
	"sync"
	"time"
)

// ExecInfo is what tare captured of a process the moment it exec'd (or forked without exec'ing).
type ExecInfo struct {
	// Cmdline is redacted; empty when it could not be read (the process is then named by its comm). A
	// fork's is its parent's: they share it until the child execs.
	Cmdline string
	PPID    int
	Started time.Time // when the process was forked (or exec'd, if its fork was missed); zero if unknown
	At      time.Time // last update, for expiry
}

// ExecTable is what an exec watcher keeps: the command line and parent of every process that forked or
// exec'd recently, so that a process living a few milliseconds keeps them after it exits, and the processes
// forked since the sampler last asked. Both watchers, the proc connector's (connector.go) and the
// tracepoints' (package exectrace), fill one. It is safe for concurrent use.
type ExecTable struct {
	mu    sync.Mutex
	byPID map[int]entry
	born  map[int]bool // processes forked since the last TakeBorn
	// execed holds the processes that exec'd since the last TakeExeced, with the time of their last exec.
	execed map[int]time.Time
	// order holds every update in the order made, with the time it was made by the table's own
	// monotonic clock (not At, a wall time that a clock step can move back), so that Forget drops what
	// expired without walking the table; an entry written again since carries a newer generation.
	order []update
	head  int // order[:head] is spent
	gen   uint64
	now   func() time.Time // time.Now; tests set another
}

// entry is pid's ExecInfo and the generation of the update that wrote it.
type entry struct {
	info ExecInfo
	gen  uint64
}

// update is one write to the table.
type update struct {
	pid int
	gen uint64
	at  time.Time
}

// NewExecTable returns an empty table.
func NewExecTable() *ExecTable {
	return &ExecTable{byPID: map[int]entry{}, born: map[int]bool{}, execed: map[int]time.Time{}, now: time.Now}
}

// Forked records a new process.
func (t *ExecTable) Forked(pid int, info ExecInfo) {
	t.mu.Lock()
	t.born[pid] = true
	t.set(pid, info)
	t.mu.Unlock()
}

// Execed records the new program of a process. A process already in the table keeps its start (its fork's)
// and, when info.PPID is 0, its parent.
func (t *ExecTable) Execed(pid int, info ExecInfo) {
	t.mu.Lock()
	t.execed[pid] = info.Started // the exec's own time, before its fork's replaces it below
	if e, ok := t.byPID[pid]; ok {
		prev := e.info
		info.Started = prev.Started
		if info.PPID == 0 {
			info.PPID = prev.PPID
		}
	}
	t.set(pid, info)
	t.mu.Unlock()
}

func (t *ExecTable) put(pid int, info ExecInfo) {
	t.mu.Lock()
	t.set(pid, info)
	t.mu.Unlock()
}

// set writes pid's entry and queues the write for Forget; t.mu is held.
func (t *ExecTable) set(pid int, info ExecInfo) {
	t.gen++
	t.byPID[pid] = entry{info, t.gen}
	t.order = append(t.order, update{pid, t.gen, t.now()})
}

// Lookup returns what was captured for pid, if anything.
func (t *ExecTable) Lookup(pid int) (ExecInfo, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byPID[pid]
	return e.info, ok
}

// TakeBorn returns the processes forked since the previous call.
func (t *ExecTable) TakeBorn() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]int, 0, len(t.born))
	for pid := range t.born {
		out = append(out, pid)
	}
	clear(t.born)
	return out
}

// TakeExeced returns the processes that exec'd since the previous call, each with the time of its last
// exec (when the watcher saw it: at or after the exec itself).
func (t *ExecTable) TakeExeced() map[int]time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.execed
	t.execed = make(map[int]time.Time, len(out))
	return out
}

// Forget drops the entries last written more than age ago, bounding memory on nodes with many processes.
// It looks only at the updates that expired since the previous call.
func (t *ExecTable) Forget(age time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cut := t.now().Add(-age)
	for ; t.head < len(t.order) && t.order[t.head].at.Before(cut); t.head++ {
		u := t.order[t.head]
		if e, ok := t.byPID[u.pid]; ok && e.gen == u.gen {
			delete(t.byPID, u.pid)
		}
	}
	if t.head > len(t.order)/2 { // reuse the spent half rather than grow
		live := t.order[t.head:]
		if cap(t.order) > 1024 && len(live) < cap(t.order)/4 {
			t.order = make([]update, len(live), 2*len(live)) // give a burst's peak back
		}
		t.order = t.order[:copy(t.order[:len(live)], live)]
		t.head = 0
	}
}
