package record

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"

	"github.com/tare-dev/tare/internal/blockio"
)

// blockIOKey is the meta key of a recording's block I/O: present when the session traced it (since schema
// version 3), holding blockIOTotals. Its absence says nothing about block I/O.
const blockIOKey = "block_io"

// blockIOTotals are what the block_io table holds in all, stored apart in the meta table so that a reader
// can tell a table cut short or altered from one written whole.
type blockIOTotals struct {
	Records   int    `json:"records"`
	Requests  uint64 `json:"requests"`
	Bytes     uint64 `json:"bytes"`
	Unmatched uint64 `json:"unmatched"`
	Dropped   uint64 `json:"dropped"`
}

func totalsOf(snap *blockio.Snapshot) blockIOTotals {
	t := blockIOTotals{Records: len(snap.Records), Unmatched: snap.Unmatched, Dropped: snap.Dropped}
	for _, r := range snap.Records {
		t.Requests += r.Requests
		t.Bytes += r.Bytes
	}
	return t
}

// WriteBlockIO stores the window's block I/O (session.Result.BlockIO), once, after the last sample and
// before Finish: its records in the block_io table and their totals in the meta table, in one transaction.
// A recording without it (no --block-io, a tracer that could not open, a file cut short before the window
// closed) reads back with no block I/O.
func (w *Writer) WriteBlockIO(ctx context.Context, snap blockio.Snapshot) error {
	if err := w.inTx(ctx, func(tx *sql.Tx) error { return w.writeBlockIO(ctx, tx, &snap) }); err != nil {
		return fmt.Errorf("writing the block I/O to %s: %w", w.path, err)
	}
	return nil
}

func (w *Writer) writeBlockIO(ctx context.Context, tx *sql.Tx, snap *blockio.Snapshot) error {
	tj, err := json.Marshal(totalsOf(snap))
	if err != nil {
		return err
	}
	ins, err := tx.PrepareContext(ctx, "INSERT INTO block_io VALUES(?,?,?,?,?,?,?,?,?,?)")
	if err != nil {
		return err
	}
	defer ins.Close()
	for _, r := range snap.Records {
		dev, err := json.Marshal(r.Device)
		if err != nil {
			return err
		}
		queue, err := json.Marshal(r.Queue)
		if err != nil {
			return err
		}
		// SQLite's integers are signed: a count past 2^63 (none the kernel can reach) would not read back.
		if r.Cgroup > math.MaxInt64 || r.Requests > math.MaxInt64 || r.Bytes > math.MaxInt64 {
			return fmt.Errorf("block I/O record of pid %d: cgroup %d, %d requests or %d bytes beyond SQLite's integers", r.PID, r.Cgroup, r.Requests, r.Bytes)
		}
		if _, err := ins.ExecContext(ctx, r.PID, r.Dev.Major, r.Dev.Minor, uint32(r.Dir), int64(r.Cgroup), r.Comm,
			int64(r.Requests), int64(r.Bytes), string(dev), string(queue)); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO meta(key, value) VALUES(?, ?)", blockIOKey, string(tj))
	return err
}

// readBlockIO reads a recording's block I/O: nil when the meta table has none. Every row is checked, and
// the rows against the totals the meta table holds; a row that fails is an error wrapping ErrDamaged that
// names it.
func readBlockIO(ctx context.Context, db *sql.DB, meta FileMeta) (*blockio.Snapshot, error) {
	raw, ok := meta.Values[blockIOKey]
	if !ok {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM block_io").Scan(&n); err != nil {
			return nil, err
		}
		if n > 0 {
			return nil, fmt.Errorf("%w block I/O: the block_io table has %d rows but the meta table no %s entry: restore the file from a copy", ErrDamaged, n, blockIOKey)
		}
		return nil, nil
	}
	var want blockIOTotals
	if err := json.Unmarshal([]byte(raw), &want); err != nil {
		return nil, fmt.Errorf("%w block I/O: meta %s %q: %w: restore the file from a copy", ErrDamaged, blockIOKey, raw, err)
	}
	snap, err := readBlockIORows(ctx, db)
	if err != nil {
		return nil, err
	}
	snap.Unmatched, snap.Dropped = want.Unmatched, want.Dropped
	if got := totalsOf(snap); got != want {
		return nil, fmt.Errorf("%w block I/O: the block_io table holds %d records, %d requests and %d bytes, its meta %s entry says %d, %d and %d: restore the file from a copy",
			ErrDamaged, got.Records, got.Requests, got.Bytes, blockIOKey, want.Records, want.Requests, want.Bytes)
	}
	return snap, nil
}

func readBlockIORows(ctx context.Context, db *sql.DB) (*blockio.Snapshot, error) {
	rows, err := db.QueryContext(ctx, `SELECT pid, major, minor, dir, cgroup, comm, requests, bytes, device_us, queue_us
		FROM block_io ORDER BY pid, major, minor, dir, cgroup`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	snap := &blockio.Snapshot{}
	for n := 1; rows.Next(); n++ {
		r, err := scanBlockIO(rows)
		if err == nil && len(snap.Records) > 0 {
			err = keyAfter(snap.Records[len(snap.Records)-1].Key, r.Key)
		}
		if err != nil {
			return nil, fmt.Errorf("%w block I/O: block_io row %d: %w: restore the file from a copy", ErrDamaged, n, err)
		}
		snap.Records = append(snap.Records, r)
	}
	return snap, rows.Err()
}

// scanBlockIO reads one row of block_io into a Record, checking each field; an error names the field.
func scanBlockIO(rows *sql.Rows) (blockio.Record, error) {
	var r blockio.Record
	var pid, major, minor, dir, cgroup, requests, bytes int64
	var dev, queue string
	if err := rows.Scan(&pid, &major, &minor, &dir, &cgroup, &r.Comm, &requests, &bytes, &dev, &queue); err != nil {
		return r, err
	}
	r.PID, r.Dev = uint32(pid), blockio.Dev{Major: uint32(major), Minor: uint32(minor)}
	for _, f := range []struct {
		name   string
		v, max int64
	}{{"pid", pid, math.MaxUint32}, {"major", major, math.MaxUint32}, {"minor", minor, math.MaxUint32},
		{"dir", dir, int64(blockio.Other)}, {"cgroup", cgroup, math.MaxInt64}, {"requests", requests, math.MaxInt64}, {"bytes", bytes, math.MaxInt64}} {
		if f.v < 0 || f.v > f.max {
			return r, fmt.Errorf("pid %d: %s %d is out of range [0, %d]", pid, f.name, f.v, f.max)
		}
	}
	r.Dir, r.Cgroup, r.Requests, r.Bytes = blockio.Dir(dir), uint64(cgroup), uint64(requests), uint64(bytes)
	var err error
	if r.Device, err = histogram("device_us", dev); err == nil {
		r.Queue, err = histogram("queue_us", queue)
	}
	if err != nil {
		return r, fmt.Errorf("pid %d, %v, %v: %w", r.PID, r.Dev, r.Dir, err)
	}
	return r, nil
}

// histogram decodes a column holding a Histogram: a JSON array of blockio.Slots counts, none negative.
func histogram(column, s string) (blockio.Histogram, error) {
	var h blockio.Histogram
	var counts []int64
	if err := json.Unmarshal([]byte(s), &counts); err != nil {
		return h, fmt.Errorf("%s %.40q: %w", column, s, err)
	}
	if len(counts) != len(h) {
		return h, fmt.Errorf("%s has %d counts, want %d", column, len(counts), len(h))
	}
	for i, c := range counts {
		if c < 0 {
			return h, fmt.Errorf("%s slot %d is negative (%d)", column, i, c)
		}
		h[i] = uint64(c)
	}
	return h, nil
}

// keyAfter checks that b comes after a in the order of the query (the order of blockio.Snapshot.Records): a
// key twice, or rows out of order, mean a damaged index.
func keyAfter(a, b blockio.Key) error {
	ka := [5]uint64{uint64(a.PID), uint64(a.Dev.Major), uint64(a.Dev.Minor), uint64(a.Dir), a.Cgroup}
	kb := [5]uint64{uint64(b.PID), uint64(b.Dev.Major), uint64(b.Dev.Minor), uint64(b.Dir), b.Cgroup}
	for i := range ka {
		if ka[i] != kb[i] {
			if kb[i] < ka[i] {
				return fmt.Errorf("pid %d, %v, %v is out of order after pid %d, %v, %v (a damaged index)", b.PID, b.Dev, b.Dir, a.PID, a.Dev, a.Dir)
			}
			return nil
		}
	}
	return fmt.Errorf("pid %d, %v, %v, cgroup %d repeats the row before (a damaged index)", b.PID, b.Dev, b.Dir, b.Cgroup)
}
