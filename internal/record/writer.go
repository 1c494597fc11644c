package record

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/sample"
)

// Writer appends samples to a new recording. It is not safe for concurrent use.
type Writer struct {
	path  string
	db    *sql.DB
	n     int
	insS  *sql.Stmt
	insP  *sql.Stmt
	insPS *sql.Stmt
	insE  *sql.Stmt
	insR  *sql.Stmt
	insB  *sql.Stmt
	// lastRes is the last resource reading stored; samples that carry it over do not store it again.
	lastRes *kernel.Resources
}

// Create makes a new recording at path. It refuses to overwrite an existing file.
func Create(ctx context.Context, path string, meta sample.Meta) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("recording %s already exists: choose another file or remove it", path)
		}
		return nil, fmt.Errorf("creating recording %s: %w", path, err)
	}
	f.Close()
	db, err := openDB(path)
	if err != nil {
		return nil, err
	}
	w := &Writer{path: path, db: db}
	if err := w.init(ctx, meta); err != nil {
		db.Close()
		return nil, fmt.Errorf("creating recording %s: %w", path, err)
	}
	return w, nil
}

func openDB(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", DSN(path, "_pragma=busy_timeout(5000)"))
	if err != nil {
		return nil, fmt.Errorf("opening recording %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

func (w *Writer) init(ctx context.Context, meta sample.Meta) error {
	for _, q := range []string{"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", schemaSQL} {
		if _, err := w.db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	mj, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	for k, v := range map[string]string{"format": formatName, "schema_version": strconv.Itoa(SchemaVersion), "meta": string(mj)} {
		if _, err := w.db.ExecContext(ctx, "INSERT INTO meta(key, value) VALUES(?, ?)", k, v); err != nil {
			return err
		}
	}
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = w.db.PrepareContext(ctx, q)
		return st
	}
	w.insS = prep(`INSERT INTO samples VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`)
	w.insP = prep(`INSERT INTO processes VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`)
	w.insPS = prep(`INSERT INTO process_samples VALUES(?,?,?,?,?,?,?,?,?,?,?)`)
	w.insE = prep(`INSERT OR IGNORE INTO exits VALUES(?,?)`)
	w.insR = prep(`INSERT INTO node_resources VALUES(?,?)`)
	w.insB = prep(`INSERT INTO self_bpf VALUES(?,?)`)
	return err
}

// Append commits one sample. After an error (a full disk, say) the file still holds every sample appended
// before it.
func (w *Writer) Append(ctx context.Context, s sample.Sample) error {
	if err := w.append(ctx, s); err != nil {
		return fmt.Errorf("writing sample %d to %s: %w (the file keeps the %d samples written before)", s.Seq, w.path, err, w.n)
	}
	w.n++
	return nil
}

// inTx runs f in a transaction, committed when f succeeds and rolled back when it fails.
func (w *Writer) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (w *Writer) append(ctx context.Context, s sample.Sample) error {
	return w.inTx(ctx, func(tx *sql.Tx) error { return w.appendTx(ctx, tx, s) })
}

func (w *Writer) appendTx(ctx context.Context, tx *sql.Tx, s sample.Sample) (err error) {
	var psi []byte
	if s.Node.Pressure != nil {
		if psi, err = json.Marshal(s.Node.Pressure); err != nil {
			return err
		}
	}
	c := s.Node.CPU
	if _, err = tx.StmtContext(ctx, w.insS).ExecContext(ctx, s.Seq, s.Time.UnixNano(), int64(s.Elapsed), int64(s.Took),
		c.User, c.Nice, c.System, c.Idle, c.Iowait, c.IRQ, c.SoftIRQ, c.Steal, c.Guest, c.GuestNice,
		s.Node.Load1, s.Node.Load5, s.Node.Load15, s.Node.Running, int64(s.Node.TasksCPUNs), nullString(psi)); err != nil {
		return err
	}
	// Resources are read on full samples and carried over between them: store each reading once.
	if r := s.Node.Resources; r != nil && r != w.lastRes {
		var rj []byte
		if rj, err = json.Marshal(r); err != nil {
			return err
		}
		if _, err = tx.StmtContext(ctx, w.insR).ExecContext(ctx, s.Seq, string(rj)); err != nil {
			return err
		}
		w.lastRes = r
	}
	// The run time of tare's own BPF programs, cumulative, on every sample that read it.
	if len(s.SelfBPF) > 0 {
		var bj []byte
		if bj, err = json.Marshal(s.SelfBPF); err != nil {
			return err
		}
		if _, err = tx.StmtContext(ctx, w.insB).ExecContext(ctx, s.Seq, string(bj)); err != nil {
			return err
		}
	}
	insP := tx.StmtContext(ctx, w.insP)
	for _, p := range s.New {
		if _, err = insP.ExecContext(ctx, p.ID, s.Seq, p.Key.PID, int64(p.Key.Start), p.PPID, p.ParentID, p.Comm, p.Cmdline,
			p.Exe, p.UID, p.Kernel, p.Self, p.Group, p.GroupKind, p.Cgroup, p.PodUID, p.Container, p.PodNS, p.PodName, p.CtrName,
			p.FirstSeq, p.BornSeq, p.Seen, unixNano(p.StartTime)); err != nil {
			return err
		}
	}
	insPS := tx.StmtContext(ctx, w.insPS)
	for _, p := range s.Procs {
		if _, err = insPS.ExecContext(ctx, s.Seq, p.ID, int64(p.CPUNs), p.HasDetail, int64(p.RSS), int64(p.PSS),
			int64(p.Private), int64(p.ReadBytes), int64(p.WriteBytes), p.Threads, p.StatmOnly); err != nil {
			return err
		}
	}
	insE := tx.StmtContext(ctx, w.insE)
	for _, id := range s.Exited {
		if _, err = insE.ExecContext(ctx, s.Seq, id); err != nil {
			return err
		}
	}
	return nil
}

func nullString(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// Finish stores the final meta (duration, interruption, limitations) and closes the file.
func (w *Writer) Finish(ctx context.Context, meta sample.Meta) error {
	mj, err := json.Marshal(meta)
	if err == nil {
		_, err = w.db.ExecContext(ctx, "UPDATE meta SET value = ? WHERE key = 'meta'", string(mj))
	}
	if err == nil {
		_, err = w.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	}
	if err == nil {
		// A finished recording is one file: out of WAL mode, its readers open it immutable (readonly.go).
		_, err = w.db.ExecContext(ctx, "PRAGMA journal_mode=DELETE")
	}
	return errors.Join(err, w.Close())
}

// Close closes the file without updating the meta.
func (w *Writer) Close() error {
	for _, st := range []*sql.Stmt{w.insS, w.insP, w.insPS, w.insE, w.insR, w.insB} {
		if st != nil {
			st.Close()
		}
	}
	return w.db.Close()
}

// Samples reports how many samples were committed.
func (w *Writer) Samples() int { return w.n }

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
