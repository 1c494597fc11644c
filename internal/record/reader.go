package record

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tare-dev/tare/internal/blockio"
	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/sample"
)

// ErrNotRecording means the file is not a tare recording (another SQLite file, or not SQLite at all).
var ErrNotRecording = errors.New("not a tare recording")

// Recording is a measurement read back from a file.
type Recording struct {
	Meta    sample.Meta
	Samples []sample.Sample
	// BlockIO is the window's block I/O (Writer.WriteBlockIO), for summary.Options.BlockIO; nil when the
	// recording has none.
	BlockIO *blockio.Snapshot
}

// Read loads a recording. A file cut short by a crash loads up to its last committed sample.
func Read(ctx context.Context, path string) (Recording, error) {
	if err := checkHeader(path, recordingKind); err != nil {
		return Recording{}, err
	}
	dsn, cleanup, err := readOnlySource(path, "mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return Recording{}, err
	}
	defer cleanup()
	db, meta, err := openDSN(ctx, path, dsn, recordingKind)
	if err != nil {
		return Recording{}, err
	}
	defer db.Close()
	rec, err := readAll(ctx, db, meta)
	if err != nil {
		return Recording{}, fmt.Errorf("reading recording %s: %w", path, err)
	}
	return rec, nil
}

func readAll(ctx context.Context, db *sql.DB, meta FileMeta) (Recording, error) {
	var rec Recording
	if err := json.Unmarshal([]byte(meta.Values["meta"]), &rec.Meta); err != nil {
		return rec, fmt.Errorf("decoding recording meta: %w", err)
	}
	var err error
	if rec.Samples, err = readSamples(ctx, db); err != nil {
		return rec, err
	}
	idx := make(map[int]int, len(rec.Samples))
	for i, s := range rec.Samples {
		idx[s.Seq] = i
	}
	if err := readProcesses(ctx, db, rec.Samples, idx); err != nil {
		return rec, err
	}
	if err := readProcSamples(ctx, db, rec.Samples, idx); err != nil {
		return rec, err
	}
	if meta.Version >= 2 {
		if err := readResources(ctx, db, rec.Samples, idx); err != nil {
			return rec, err
		}
	}
	if meta.Version >= 3 {
		if rec.BlockIO, err = readBlockIO(ctx, db, meta); err != nil {
			return rec, err
		}
	}
	if meta.Version >= 4 {
		if err := readSelfBPF(ctx, db, rec.Samples, idx); err != nil {
			return rec, err
		}
	}
	return rec, readExits(ctx, db, rec.Samples, idx)
}

func readSamples(ctx context.Context, db *sql.DB) ([]sample.Sample, error) {
	rows, err := db.QueryContext(ctx, `SELECT seq, time_ns, elapsed_ns, took_ns, user_s, nice_s, system_s, idle_s, iowait_s, irq_s,
		softirq_s, steal_s, guest_s, guest_nice_s, load1, load5, load15, procs_running, tasks_cpu_ns, pressure
		FROM samples ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sample.Sample
	for rows.Next() {
		var s sample.Sample
		var t, el, took, tasks int64
		var psi sql.NullString
		c := &s.Node.CPU
		if err := rows.Scan(&s.Seq, &t, &el, &took, &c.User, &c.Nice, &c.System, &c.Idle, &c.Iowait, &c.IRQ, &c.SoftIRQ,
			&c.Steal, &c.Guest, &c.GuestNice, &s.Node.Load1, &s.Node.Load5, &s.Node.Load15, &s.Node.Running, &tasks, &psi); err != nil {
			return nil, err
		}
		s.Time, s.Elapsed, s.Took, s.Node.TasksCPUNs = time.Unix(0, t), time.Duration(el), time.Duration(took), uint64(tasks)
		if psi.Valid {
			if err := json.Unmarshal([]byte(psi.String), &s.Node.Pressure); err != nil {
				return nil, fmt.Errorf("sample %d pressure: %w", s.Seq, err)
			}
		}
		// A damaged index can return rows out of ORDER BY's order: the file is corrupt, not a recording.
		if n := len(out); n > 0 && s.Seq <= out[n-1].Seq {
			return nil, fmt.Errorf("corrupt recording: sample %d after sample %d (a damaged index or table)", s.Seq, out[n-1].Seq)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func readProcesses(ctx context.Context, db *sql.DB, ss []sample.Sample, idx map[int]int) error {
	rows, err := db.QueryContext(ctx, `SELECT id, seq, pid, start_ticks, ppid, parent_id, comm, cmdline, exe, uid, kernel,
		self, grp, grp_kind, cgroup, pod_uid, container_id, pod_namespace, pod_name, container_name, first_seq,
		born_seq, seen, start_ns FROM processes ORDER BY id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var p sample.ProcInfo
		var seq int
		var start, startNs int64
		if err := rows.Scan(&p.ID, &seq, &p.Key.PID, &start, &p.PPID, &p.ParentID, &p.Comm, &p.Cmdline, &p.Exe, &p.UID,
			&p.Kernel, &p.Self, &p.Group, &p.GroupKind, &p.Cgroup, &p.PodUID, &p.Container, &p.PodNS, &p.PodName, &p.CtrName,
			&p.FirstSeq, &p.BornSeq, &p.Seen, &startNs); err != nil {
			return err
		}
		p.Key.Start = uint64(start)
		if startNs != 0 {
			p.StartTime = time.Unix(0, startNs)
		}
		if i, ok := idx[seq]; ok {
			ss[i].New = append(ss[i].New, p)
		}
	}
	return rows.Err()
}

func readProcSamples(ctx context.Context, db *sql.DB, ss []sample.Sample, idx map[int]int) error {
	statmOnly := "0" // a recording from before the column: every reading from smaps_rollup
	var has int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info('process_samples') WHERE name = 'statm_only'`).Scan(&has); err != nil {
		return err
	}
	if has > 0 {
		statmOnly = "statm_only"
	}
	rows, err := db.QueryContext(ctx, `SELECT seq, id, cpu_ns, has_detail, rss, pss, private, read_bytes, write_bytes, threads, `+statmOnly+`
		FROM process_samples ORDER BY seq, id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var p sample.ProcSample
		var seq int
		var cpu, rss, pss, priv, rb, wb int64
		if err := rows.Scan(&seq, &p.ID, &cpu, &p.HasDetail, &rss, &pss, &priv, &rb, &wb, &p.Threads, &p.StatmOnly); err != nil {
			return err
		}
		p.CPUNs, p.RSS, p.PSS, p.Private, p.ReadBytes, p.WriteBytes = uint64(cpu), uint64(rss), uint64(pss), uint64(priv), uint64(rb), uint64(wb)
		if i, ok := idx[seq]; ok {
			ss[i].Procs = append(ss[i].Procs, p)
		}
	}
	return rows.Err()
}

func readExits(ctx context.Context, db *sql.DB, ss []sample.Sample, idx map[int]int) error {
	rows, err := db.QueryContext(ctx, "SELECT seq, id FROM exits ORDER BY seq, id")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var seq int
		var id int64
		if err := rows.Scan(&seq, &id); err != nil {
			return err
		}
		if i, ok := idx[seq]; ok {
			ss[i].Exited = append(ss[i].Exited, id)
		}
	}
	return rows.Err()
}

// readSelfBPF attaches to each sample the run time of tare's BPF programs it read.
func readSelfBPF(ctx context.Context, db *sql.DB, ss []sample.Sample, idx map[int]int) error {
	return readJSONRows(ctx, db, "self_bpf", idx, func(i int, js []byte) error {
		return json.Unmarshal(js, &ss[i].SelfBPF)
	})
}

// readJSONRows reads a table of (seq, json) rows in seq order and hands each row of a sample the
// recording holds to set, with the sample's index.
func readJSONRows(ctx context.Context, db *sql.DB, table string, idx map[int]int, set func(i int, js []byte) error) error {
	rows, err := db.QueryContext(ctx, "SELECT seq, json FROM "+table+" ORDER BY seq")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var seq int
		var js string
		if err := rows.Scan(&seq, &js); err != nil {
			return err
		}
		if i, ok := idx[seq]; ok {
			if err := set(i, []byte(js)); err != nil {
				return fmt.Errorf("sample %d %s: %w", seq, table, err)
			}
		}
	}
	return rows.Err()
}

// readResources attaches each resource reading to its sample and carries it over to the samples after it
// that had none of their own, as the sampler does.
func readResources(ctx context.Context, db *sql.DB, ss []sample.Sample, idx map[int]int) error {
	err := readJSONRows(ctx, db, "node_resources", idx, func(i int, js []byte) error {
		r := &kernel.Resources{}
		if err := json.Unmarshal(js, r); err != nil {
			return err
		}
		ss[i].Node.Resources = r
		return nil
	})
	if err != nil {
		return err
	}
	for i := 1; i < len(ss); i++ {
		if ss[i].Node.Resources == nil {
			ss[i].Node.Resources = ss[i-1].Node.Resources
		}
	}
	return nil
}
