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
	byPID map[int]ExecInfo
	born  map[int]bool // processes forked since the last TakeBorn
	// order holds every update in the order made (and so of At, which the watchers set to the time of the
	// update: in order but for the instant both watchers run while the tracepoints take over, which only
	// delays a drop to the next Forget), so that Forget drops what expired without walking the table.
	order []update
	head  int // order[:head] is spent
}

// update is one write to the table: the entry of pid as of at.
type update struct {
	pid int
	at  time.Time
}

// NewExecTable returns an empty table.
func NewExecTable() *ExecTable {
	return &ExecTable{byPID: map[int]ExecInfo{}, born: map[int]bool{}}
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
	if prev, ok := t.byPID[pid]; ok {
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
	t.byPID[pid] = info
	t.order = append(t.order, update{pid, info.At})
}

// Lookup returns what was captured for pid, if anything.
func (t *ExecTable) Lookup(pid int) (ExecInfo, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	info, ok := t.byPID[pid]
	return info, ok
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

// Forget drops entries older than age, bounding memory on nodes with many processes. It looks only at the
// updates that expired since the previous call: an entry updated since is kept (its At is newer).
func (t *ExecTable) Forget(age time.Duration) {
	cut := time.Now().Add(-age)
	t.mu.Lock()
	defer t.mu.Unlock()
	for ; t.head < len(t.order) && t.order[t.head].at.Before(cut); t.head++ {
		u := t.order[t.head]
		if info, ok := t.byPID[u.pid]; ok && info.At.Equal(u.at) {
			delete(t.byPID, u.pid)
		}
	}
	if t.head > len(t.order)/2 { // reuse the spent half rather than grow
		t.order = t.order[:copy(t.order, t.order[t.head:])]
		t.head = 0
	}
}
