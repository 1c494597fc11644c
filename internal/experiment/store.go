package experiment

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	_ "modernc.org/sqlite" // the experiment file, pure Go

	"github.com/tare-dev/tare/internal/compare"
	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/session"
)

// The experiment file DIR/experiment.db holds the spec, the planned order and every finished trial, so
// an interrupted experiment keeps its trials and --resume continues it.
const (
	storeFormat  = "tare-experiment"
	storeVersion = 1
	storeSchema  = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE trials (
  seq        INTEGER PRIMARY KEY,
  round      INTEGER NOT NULL,
  variant    TEXT NOT NULL,
  status     TEXT NOT NULL,  -- planned, ok, failed
  started_ns INTEGER NOT NULL,
  error      TEXT NOT NULL,
  metrics    TEXT NOT NULL,  -- JSON object: metric -> value
  guard      TEXT NOT NULL,  -- JSON object: guard metric -> value
  recording  TEXT NOT NULL   -- the trial's window, a tare recording (tare report FILE)
);`
	// warningsSchema came after version 1 without changing it, as a table of its own: files written before
	// it lack the table and read as trials without warnings, and earlier tares do not read it. A trial's
	// warnings are those saved with its start time, so rows left by an earlier run of the trial (rewritten
	// by a tare that does not know the table) are not taken for the new run's.
	warningsSchema = `
CREATE TABLE IF NOT EXISTS trial_warnings (
  seq        INTEGER NOT NULL,  -- the trial
  started_ns INTEGER NOT NULL,  -- the trial's start, as in trials
  sample     INTEGER NOT NULL,  -- the sample being taken when it arose
  kind       TEXT NOT NULL,     -- source, skipped, sink
  message    TEXT NOT NULL
);`
	// labsSchema, like warningsSchema, came after version 1 as a table of its own: a concurrent trial's
	// metrics lab by lab (files without it read as trials without them).
	labsSchema = `
CREATE TABLE IF NOT EXISTS trial_labs (
  seq        INTEGER NOT NULL,  -- the trial
  started_ns INTEGER NOT NULL,  -- the trial's start, as in trials
  lab        INTEGER NOT NULL,  -- the lab's number, from 1
  metrics    TEXT NOT NULL      -- JSON object: metric -> value
);`
)

// Store is an open experiment file.
type Store struct {
	db   *sql.DB
	Dir  string
	Spec *Spec
	// Plan is a sequential experiment's plan once its pilot has ended (or from --pilot); nil before, and
	// for a fixed experiment.
	Plan *compare.Plan
}

// StorePath is the experiment file in dir.
func StorePath(dir string) string { return filepath.Join(dir, "experiment.db") }

// Create starts an experiment file in dir (created if missing; it must not hold one already) with the
// randomised plan: in each round every variant once, in an order shuffled with the spec's seed.
func Create(ctx context.Context, dir string, spec *Spec) (*Store, []Trial, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(StorePath(dir)); err == nil {
		return nil, nil, fmt.Errorf("%s already holds an experiment: continue it with --resume %s, or choose another --out", dir, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("experiment directory: %w", err)
	}
	if spec.Seed == 0 {
		spec.Seed = uint64(time.Now().UnixNano())
	}
	db, err := sql.Open("sqlite", record.DSN(StorePath(dir), "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"))
	if err != nil {
		return nil, nil, err
	}
	st := &Store{db: db, Dir: dir, Spec: spec}
	plan := Plan(spec)
	if err := st.init(ctx, plan); err != nil {
		db.Close()
		_ = os.Remove(StorePath(dir))
		return nil, nil, fmt.Errorf("creating %s: %w", StorePath(dir), err)
	}
	return st, plan, nil
}

// Plan orders the trials: round by round, each variant once per round in a random order, so slow drift
// (a warming disk, a neighbour's job) falls on every variant alike.
func Plan(spec *Spec) []Trial {
	rng := rand.New(rand.NewPCG(spec.Seed, 0x7a7e))
	var plan []Trial
	for round := 1; round <= spec.Trials; round++ {
		order := rng.Perm(len(spec.Variants))
		for _, i := range order {
			plan = append(plan, Trial{Seq: len(plan) + 1, Round: round, Variant: spec.Variants[i].Name, Status: "planned"})
		}
	}
	return plan
}

func (st *Store) init(ctx context.Context, plan []Trial) error {
	if _, err := st.db.ExecContext(ctx, storeSchema+warningsSchema+labsSchema); err != nil {
		return err
	}
	spec, err := json.Marshal(st.Spec)
	if err != nil {
		return err
	}
	for k, v := range map[string]string{"format": storeFormat, "schema_version": strconv.Itoa(storeVersion), "spec": string(spec)} {
		if _, err := st.db.ExecContext(ctx, "INSERT INTO meta VALUES(?, ?)", k, v); err != nil {
			return err
		}
	}
	for _, t := range plan {
		if err := st.Save(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// Open reads an experiment file for --resume or a report.
func Open(ctx context.Context, dir string) (*Store, []Trial, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	path := StorePath(dir)
	if _, err := os.Stat(path); err != nil {
		return nil, nil, fmt.Errorf("no experiment in %s: %w", dir, err)
	}
	db, meta, err := record.OpenFile(ctx, path, "_pragma=busy_timeout(5000)", storeKind)
	if err != nil {
		return nil, nil, err
	}
	st := &Store{db: db, Dir: dir}
	trials, err := st.load(ctx, meta)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, trials, nil
}

// errNotExperiment is what the check of a file that is not an experiment file wraps.
var errNotExperiment = errors.New("not a tare experiment file")

// storeKind is an experiment file, for record's check of tare's SQLite files.
var storeKind = record.FileKind{Name: "experiment file", Format: storeFormat, Version: storeVersion,
	Hint: "start one with tare experiment SPEC --out DIR", ErrNot: errNotExperiment}

func (st *Store) load(ctx context.Context, meta record.FileMeta) ([]Trial, error) {
	st.Spec = &Spec{}
	if err := json.Unmarshal([]byte(meta.Values["spec"]), st.Spec); err != nil {
		return nil, fmt.Errorf("decoding the spec: %w", err)
	}
	if err := st.Spec.check(); err != nil {
		return nil, fmt.Errorf("the stored spec: %w", err)
	}
	if v := meta.Values["plan"]; v != "" {
		st.Plan = &compare.Plan{}
		if err := json.Unmarshal([]byte(v), st.Plan); err != nil {
			return nil, fmt.Errorf("decoding the plan: %w", err)
		}
	}
	rows, err := st.db.QueryContext(ctx, "SELECT seq, round, variant, status, started_ns, error, metrics, guard, recording FROM trials ORDER BY seq")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Trial
	for rows.Next() {
		var t Trial
		var started int64
		var m, g string
		if err := rows.Scan(&t.Seq, &t.Round, &t.Variant, &t.Status, &started, &t.Error, &m, &g, &t.Recording); err != nil {
			return nil, err
		}
		if started > 0 {
			t.Started = time.Unix(0, started)
		}
		if err := json.Unmarshal([]byte(m), &t.Metrics); err != nil {
			return nil, fmt.Errorf("trial %d metrics: %w", t.Seq, err)
		}
		if err := json.Unmarshal([]byte(g), &t.Guard); err != nil {
			return nil, fmt.Errorf("trial %d guard: %w", t.Seq, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := st.loadWarnings(ctx, out); err != nil {
		return nil, err
	}
	return out, st.loadLabs(ctx, out)
}

// loadWarnings gives each trial the warnings saved with it (none in files from before the table).
func (st *Store) loadWarnings(ctx context.Context, trials []Trial) error {
	return st.eachRow(ctx, "trial_warnings", "SELECT seq, started_ns, sample, kind, message FROM trial_warnings ORDER BY rowid", trials,
		func(ix trialIndex, rows *sql.Rows) error {
			var seq int
			var started int64
			var w session.Warning
			if err := rows.Scan(&seq, &started, &w.Seq, &w.Kind, &w.Message); err != nil {
				return err
			}
			if t := ix.at(seq, started); t != nil {
				t.Warnings = append(t.Warnings, w)
			}
			return nil
		})
}

// trialIndex finds a row's trial by its seq and start.
type trialIndex map[int]*Trial

// at is the trial seq if it started at started (Unix ns); nil for a row of an earlier run of the trial
// (another start) or of no trial.
func (ix trialIndex) at(seq int, started int64) *Trial {
	if t := ix[seq]; t != nil && started == startedNs(t.Started) {
		return t
	}
	return nil
}

// eachRow runs query on table, one of those added after version 1 (a file without it has no rows), and
// hands each row to read with the trials' index, to scan it and find its trial.
func (st *Store) eachRow(ctx context.Context, table, query string, trials []Trial, read func(trialIndex, *sql.Rows) error) error {
	var n int
	if err := st.db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", table).Scan(&n); err != nil || n == 0 {
		return err
	}
	idx := trialIndex{}
	for i := range trials {
		idx[trials[i].Seq] = &trials[i]
	}
	rows, err := st.db.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := read(idx, rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// loadLabs gives each concurrent trial its labs' metrics saved with it (none in files from before the
// table).
func (st *Store) loadLabs(ctx context.Context, trials []Trial) error {
	return st.eachRow(ctx, "trial_labs", "SELECT seq, started_ns, lab, metrics FROM trial_labs ORDER BY seq, lab", trials,
		func(ix trialIndex, rows *sql.Rows) error {
			var seq int
			var started int64
			var m string
			l := compare.LabMetrics{}
			if err := rows.Scan(&seq, &started, &l.Lab, &m); err != nil {
				return err
			}
			t := ix.at(seq, started)
			if t == nil {
				return nil
			}
			if err := json.Unmarshal([]byte(m), &l.Metrics); err != nil {
				return fmt.Errorf("trial %d lab %d metrics: %w", seq, l.Lab, err)
			}
			t.Labs = append(t.Labs, l)
			return nil
		})
}

// Save writes (or rewrites) one trial, with its warnings.
func (st *Store) Save(ctx context.Context, t Trial) (err error) {
	m, err := json.Marshal(orEmpty(t.Metrics))
	if err != nil {
		return err
	}
	g, err := json.Marshal(orEmpty(t.Guard))
	if err != nil {
		return err
	}
	started := startedNs(t.Started)
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if _, err = tx.ExecContext(ctx, "INSERT OR REPLACE INTO trials VALUES(?,?,?,?,?,?,?,?,?)",
		t.Seq, t.Round, t.Variant, t.Status, started, t.Error, string(m), string(g), t.Recording); err != nil {
		return err
	}
	// A file from before the warnings table gets it with the first trial saved.
	if _, err = tx.ExecContext(ctx, warningsSchema); err != nil {
		return err
	}
	if _, err = tx.ExecContext(ctx, "DELETE FROM trial_warnings WHERE seq = ?", t.Seq); err != nil {
		return err
	}
	for _, w := range t.Warnings {
		if _, err = tx.ExecContext(ctx, "INSERT INTO trial_warnings VALUES(?,?,?,?,?)", t.Seq, started, w.Seq, string(w.Kind), w.Message); err != nil {
			return err
		}
	}
	if _, err = tx.ExecContext(ctx, labsSchema); err != nil {
		return err
	}
	if _, err = tx.ExecContext(ctx, "DELETE FROM trial_labs WHERE seq = ?", t.Seq); err != nil {
		return err
	}
	for _, l := range t.Labs {
		var lm []byte
		if lm, err = json.Marshal(orEmpty(l.Metrics)); err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, "INSERT INTO trial_labs VALUES(?,?,?,?)", t.Seq, started, l.Lab, string(lm)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// startedNs is a trial's start as stored: Unix nanoseconds, 0 for a trial not started.
func startedNs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func orEmpty(m map[string]float64) map[string]float64 {
	if m == nil {
		return map[string]float64{}
	}
	return m
}

// Close closes the file.
func (st *Store) Close() error { return st.db.Close() }
