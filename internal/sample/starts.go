package sample

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tare-dev/tare/internal/exectrace"
	"github.com/tare-dev/tare/internal/kernel"
)

// ExecSource chooses what follows process starts (Options.ExecSource).
type ExecSource string

const (
	// ExecAuto starts with the proc connector and loads the exec tracepoints once the process starts it
	// has seen would have paid for loading them (switchAfterStarts), or at the first program that ended
	// before the connector could read its command line (a busy node: the tracepoints copy it in the kernel).
	ExecAuto ExecSource = ""
	// ExecConnector uses the proc connector only, never the tracepoints.
	ExecConnector ExecSource = "connector"
	// ExecTracepoints loads the exec tracepoints at once (the proc connector if they cannot load).
	ExecTracepoints ExecSource = "tracepoints"
)

// switchAfterStarts is how many process starts pay for loading the exec tracepoints: loading them costs
// about 20 ms of CPU (the kernel's BTF decoded, the programs verified), and the proc connector about
// 0.25 ms a process start (a wake-up per event and a read of /proc/PID/cmdline per exec; make bench-agent).
// A short measurement on a quiet node never loads them; an agent on a busy node does within seconds.
const switchAfterStarts = 80

// starts follows process starts so that processes living a few milliseconds keep their command line and
// parent: with the proc connector (kernel.ExecWatcher), then, once they pay for themselves, with the
// scheduler's exec and fork tracepoints (exectrace), which cost tare nothing per start. Both record into
// one table, and the connector is closed only after the tracepoints are attached, so the switch loses no
// start.
type starts struct {
	table *kernel.ExecTable
	mode  ExecSource
	mu    sync.Mutex // guards conn, tr, lost and the switch
	conn  *kernel.ExecWatcher
	tr    *exectrace.Tracer
	lost  int   // starts the connector lost before it was closed
	why   error // the tracepoints failed to load: not tried again
}

// openStarts opens the first source the mode asks for. The error says why no source could be opened.
func openStarts(ctx context.Context, procRoot string, mode ExecSource) (*starts, error) {
	st := &starts{table: kernel.NewExecTable(), mode: mode}
	if mode == ExecTracepoints {
		if st.loadTracepoints() == nil {
			return st, nil
		}
	}
	conn, err := kernel.WatchExecs(ctx, kernel.CmdlineReader(procRoot), st.table)
	if err != nil {
		if mode == ExecConnector {
			return nil, fmt.Errorf("proc connector: %w", err)
		}
		if st.why != nil {
			return nil, fmt.Errorf("exec tracepoints: %w; proc connector: %w", st.why, err)
		}
		// Without the connector nothing counts starts: the tracepoints are the only source left.
		if st.loadTracepoints() == nil {
			return st, nil
		}
		return nil, fmt.Errorf("proc connector: %w; exec tracepoints: %w", err, st.why)
	}
	st.conn = conn
	return st, nil
}

// loadTracepoints loads the tracer into the shared table; st.mu is held or st is not shared yet.
func (st *starts) loadTracepoints() error {
	tr, err := exectrace.Open(st.table, exectrace.Options{})
	if err != nil {
		st.why = err
		return err
	}
	st.tr = tr
	return nil
}

// source names the source in use, for Meta.ExitSource.
func (st *starts) source() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.tr != nil {
		return "taskstats+tracepoints"
	}
	return "taskstats+connector"
}

// Sync takes in every start that happened so far, switching to the tracepoints when they pay.
func (st *starts) Sync() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.tr != nil {
		st.tr.Sync()
		return
	}
	if st.conn == nil { // closed
		return
	}
	st.conn.Sync()
	due := st.conn.Starts() >= switchAfterStarts || st.conn.Unnamed() > 0
	if st.why == nil && st.mode == ExecAuto && due && st.loadTracepoints() == nil {
		// Attached: what the connector queued meanwhile is drained into the same table, then it goes.
		st.conn.Sync()
		st.lost += st.conn.Lost()
		_ = st.conn.Close()
		st.conn = nil
		st.tr.Sync()
	}
}

// limitation says why the tracepoints are not in use when they should be ("" when they are, or are not
// due yet).
func (st *starts) limitation() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.tr != nil || st.why == nil {
		return ""
	}
	return fmt.Sprintf("%v; the proc connector follows process starts instead (about 0.25 ms of tare's CPU a start)", st.why)
}

// NewPIDs returns the processes forked since the previous call.
func (st *starts) NewPIDs() []int {
	st.Sync()
	return st.table.TakeBorn()
}

// Execed returns the processes that exec'd since the previous call, with the time of each one's last exec.
func (st *starts) Execed() map[int]time.Time {
	st.Sync()
	return st.table.TakeExeced()
}

// Lookup returns what was captured of pid.
func (st *starts) Lookup(pid int) (kernel.ExecInfo, bool) { return st.table.Lookup(pid) }

// Forget drops what is older than age.
func (st *starts) Forget(age time.Duration) { st.table.Forget(age) }

// Lost is how many starts (or batches of them) were missed because tare fell behind.
func (st *starts) Lost() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := st.lost
	if st.conn != nil {
		n += st.conn.Lost()
	}
	if st.tr != nil {
		n += st.tr.Lost()
	}
	return n
}

// Close releases both sources.
func (st *starts) Close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	var errs []error
	if st.conn != nil {
		errs = append(errs, st.conn.Close())
		st.conn = nil
	}
	if st.tr != nil {
		errs = append(errs, st.tr.Close())
		st.tr = nil
	}
	return errors.Join(errs...)
}
