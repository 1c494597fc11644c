package record

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/blockio"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/summary"
)

// blockIOFixture is a window's block I/O with a process of the samples (pid), one tare never saw, a
// flush of no bytes, counters past 2^32 and the open last slot.
func blockIOFixture(pid int) blockio.Snapshot {
	hist := func(slots ...uint64) blockio.Histogram {
		var h blockio.Histogram
		for i := 0; i+1 < len(slots); i += 2 {
			h[slots[i]] = slots[i+1]
		}
		return h
	}
	return blockio.Snapshot{Unmatched: 7, Dropped: 2, Records: []blockio.Record{
		{Key: blockio.Key{PID: 0, Cgroup: 1, Dev: blockio.Dev{Major: 8}, Dir: blockio.Write}, Comm: "swapper/1", Requests: 3, Bytes: 12288,
			Device: hist(9, 3), Queue: hist(0, 3)},
		{Key: blockio.Key{PID: uint32(pid), Cgroup: 4242, Dev: blockio.Dev{Major: 253, Minor: 16}, Dir: blockio.Read}, Comm: "fio", Requests: 31997,
			Bytes: 131059712, Device: hist(6, 30000, 7, 1990, 31, 7), Queue: hist(0, 31000, 1, 997)},
		{Key: blockio.Key{PID: uint32(pid), Cgroup: 4242, Dev: blockio.Dev{Major: 253, Minor: 16}, Dir: blockio.Other}, Comm: "fio", Requests: 2,
			Device: hist(3, 2), Queue: hist(1, 2)},
		{Key: blockio.Key{PID: 4000000, Cgroup: 1 << 40, Dev: blockio.Dev{Major: 259}, Dir: blockio.Write}, Comm: "kworker/u8:2", Requests: 5 << 32,
			Bytes: 1 << 50, Device: hist(10, 5<<32), Queue: hist(2, 5<<32)},
	}}
}

// blockIORecording writes a recording of real samples with the fixture's block I/O, charged partly to a
// process of the samples, and returns its path, the samples and the snapshot.
func blockIORecording(t testing.TB, path string) (sample.Meta, []sample.Sample, blockio.Snapshot) {
	t.Helper()
	meta, ss := liveSamples(t, 3)
	pid := ss[0].New[0].Key.PID
	for _, p := range ss[0].New {
		pid = min(pid, p.Key.PID)
	}
	snap := blockIOFixture(pid)
	writeRecording(t, path, meta, ss, &snap)
	return meta, ss, snap
}

// TestBlockIORoundTrip: the window's block I/O reads back as it was written, and the summary of the
// recording has the same block I/O as the live one, to the byte of its JSON and table; a recording
// without block I/O, old or new, reads back without, and its summary says nothing of block I/O.
func TestBlockIORoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "io.db")
	meta, ss, snap := blockIORecording(t, path)
	rec, err := Read(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if rec.BlockIO == nil {
		t.Fatal("the recording's block I/O did not read back")
	}
	if diff := cmp.Diff(snap, *rec.BlockIO); diff != "" {
		t.Errorf("block I/O read back (-written +read):\n%s", diff)
	}
	live := summary.Build(meta, ss, summary.Options{BlockIO: &snap})
	back := summary.Build(rec.Meta, rec.Samples, summary.Options{BlockIO: rec.BlockIO})
	for _, render := range []func(summary.Summary, *bytes.Buffer) error{
		func(s summary.Summary, b *bytes.Buffer) error { return s.JSON(b) },
		func(s summary.Summary, b *bytes.Buffer) error { return s.Table(b) },
	} {
		var a, b bytes.Buffer
		if err := errors.Join(render(live, &a), render(back, &b)); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a.String(), b.String()); diff != "" {
			t.Errorf("summary from the recording differs from the live one (-live +recording):\n%s", diff)
		}
	}
	if g := back.BlockIO.Groups; len(g) < 3 || back.BlockIO.Total.ReadRequests != 31997 {
		t.Errorf("block I/O of the recording: %+v", back.BlockIO)
	}

	none := filepath.Join(dir, "none.db")
	writeRecording(t, none, meta, ss, nil)
	for _, p := range []string{none, "../cli/testdata/recording.db"} {
		rec, err := Read(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := summary.Build(rec.Meta, rec.Samples, summary.Options{BlockIO: rec.BlockIO}).JSON(&b); err != nil {
			t.Fatal(err)
		}
		if rec.BlockIO != nil || strings.Contains(b.String(), "block_io") {
			t.Errorf("%s: block I/O %+v from a recording without any", p, rec.BlockIO)
		}
	}
}

// TestBlockIODamaged: a block_io row or total that cannot be right is an error that names the file, the
// row and the field, and matches ErrDamaged.
func TestBlockIODamaged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	blockIORecording(t, good)
	goodBytes, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, sql, want string }{
		{"negative requests", "UPDATE block_io SET requests = -5 WHERE comm = 'fio' AND dir = 0", "block_io row 2: pid"},
		{"negative requests field", "UPDATE block_io SET requests = -5 WHERE comm = 'fio' AND dir = 0", "requests -5 is out of range"},
		{"pid past 32 bits", "UPDATE block_io SET pid = 4294967296 WHERE comm = 'kworker/u8:2'", "block_io row 4: pid 4294967296: pid 4294967296 is out of range"},
		{"unknown direction", "UPDATE block_io SET dir = 7 WHERE comm = 'swapper/1'", "dir 7 is out of range [0, 2]"},
		{"short histogram", "UPDATE block_io SET device_us = '[1,2]' WHERE comm = 'swapper/1'", "device_us has 2 counts, want 32"},
		{"negative slot", "UPDATE block_io SET queue_us = '[0,-1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]' WHERE comm = 'swapper/1'", "queue_us slot 1 is negative"},
		{"histogram not JSON", "UPDATE block_io SET device_us = 'lots' WHERE comm = 'swapper/1'", "block_io row 1: pid 0, 8:0, write: device_us \"lots\""},
		{"text for a number", "UPDATE block_io SET bytes = 'many' WHERE comm = 'swapper/1'", "block_io row 1: sql: Scan error"},
		{"row gone", "DELETE FROM block_io WHERE comm = 'swapper/1'", "the block_io table holds 3 records, 21474868479 requests"},
		{"bytes changed", "UPDATE block_io SET bytes = bytes + 1 WHERE comm = 'fio' AND dir = 0", "1125900037914625 bytes, its meta block_io entry says 4, 21474868482 and 1125900037914624"},
		{"totals not JSON", "UPDATE meta SET value = '{' WHERE key = 'block_io'", "meta block_io \"{\""},
		{"rows without totals", "DELETE FROM meta WHERE key = 'block_io'", "block_io table has 4 rows but the meta table no block_io entry"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.db")
			if err := os.WriteFile(path, goodBytes, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(c.sql); err != nil {
				t.Fatal(err)
			}
			db.Close()
			_, err = Read(context.Background(), path)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) || !errors.Is(err, ErrDamaged) {
				t.Errorf("Read: %v\nwant an error matching ErrDamaged naming %s and saying %q", err, path, c.want)
			}
		})
	}
}
