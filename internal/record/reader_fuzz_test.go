package record

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/blockio"
	"github.com/tare-dev/tare/internal/summary"
)

// FuzzRead feeds the recording reader damaged files: seeded with a recording captured on a real machine
// (internal/cli/testdata/recording.db) and one with block I/O, cut short at page boundaries and with
// bytes flipped in the header, the schema and the data pages. A damaged file must give an error or a
// recording the report can summarise, never a crash.
func FuzzRead(f *testing.F) {
	good, err := os.ReadFile("../cli/testdata/recording.db")
	if err != nil {
		f.Fatal(err)
	}
	withIO := filepath.Join(f.TempDir(), "io.db")
	blockIORecording(f, withIO)
	io, err := os.ReadFile(withIO)
	if err != nil {
		f.Fatal(err)
	}
	for _, good := range [][]byte{good, io} {
		f.Add(good)
		for _, n := range []int{16, 100, 4096, len(good) / 2, len(good) - 4096} {
			f.Add(good[:n])
		}
		for _, off := range []int{18, 28, 56, 100, 4096 + 8, len(good) / 2, len(good) - 100} {
			b := append([]byte(nil), good...)
			b[off] ^= 0x5a
			f.Add(b)
		}
	}
	tmp := fuzzDir(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(tmp, "r.db")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		rec, err := Read(context.Background(), path)
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("reading a %d-byte file took %s (%v)", len(b), took, err)
		}
		if err != nil {
			return
		}
		for i := 1; i < len(rec.Samples); i++ {
			if rec.Samples[i].Seq <= rec.Samples[i-1].Seq {
				t.Fatalf("samples out of order: seq %d after %d", rec.Samples[i].Seq, rec.Samples[i-1].Seq)
			}
		}
		_ = summary.Build(rec.Meta, rec.Samples, summary.Options{Top: 5, BlockIO: rec.BlockIO})
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("reading and summarising a %d-byte file took %s", len(b), took)
		}
	})
}

// FuzzReadBlockIO writes any values into one block_io row and the meta table's block I/O totals of a
// recording: the reader must refuse what cannot be right with an error, or return block I/O whose records
// are in order, each direction known, and whose sums are the totals; never a crash.
func FuzzReadBlockIO(f *testing.F) {
	path := filepath.Join(f.TempDir(), "io.db")
	_, _, snap := blockIORecording(f, path)
	good, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	const zeros = "[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]"
	totals := `{"records":4,"requests":21474868482,"bytes":1125900037914624,"unmatched":7,"dropped":2}`
	f.Add(int64(0), int64(8), int64(0), int64(1), int64(1), int64(3), int64(12288), "swapper/1", zeros, zeros, totals)
	f.Add(int64(-1), int64(8), int64(0), int64(1), int64(1), int64(3), int64(12288), "x", zeros, zeros, totals)
	f.Add(int64(0), int64(1<<33), int64(0), int64(3), int64(-1), int64(-3), int64(-1), "", "[1,2]", "null", "{}")
	f.Add(int64(4000000), int64(259), int64(0), int64(1), int64(1<<40), int64(3), int64(12288), "dup", zeros, zeros, totals)
	f.Add(int64(0), int64(8), int64(0), int64(1), int64(1), int64(3), int64(12288), "big", "[1e30"+zeros[2:], zeros, `{"records":-1}`)
	tmp := fuzzDir(f)
	f.Fuzz(func(t *testing.T, pid, major, minor, dir, cgroup, requests, bytes int64, comm, device, queue, totals string) {
		p := filepath.Join(tmp, "r.db")
		if err := os.WriteFile(p, good, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("sqlite", p)
		if err != nil {
			t.Fatal(err)
		}
		_, err1 := db.Exec(`UPDATE block_io SET pid = ?, major = ?, minor = ?, dir = ?, cgroup = ?, comm = ?, requests = ?, bytes = ?,
			device_us = ?, queue_us = ? WHERE comm = ?`, pid, major, minor, dir, cgroup, comm, requests, bytes, device, queue, snap.Records[0].Comm)
		_, err2 := db.Exec("UPDATE meta SET value = ? WHERE key = 'block_io'", totals)
		db.Close()
		if err1 != nil || err2 != nil { // a key that is already taken
			return
		}
		rec, err := Read(context.Background(), p)
		if err != nil {
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %v does not match ErrDamaged or name the file", err)
			}
			return
		}
		b := rec.BlockIO
		var requests2, bytes2 uint64
		for i, r := range b.Records {
			if r.Dir > blockio.Other || i > 0 && keyAfter(b.Records[i-1].Key, r.Key) != nil {
				t.Fatalf("record %d %+v read back", i, r)
			}
			requests2 += r.Requests
			bytes2 += r.Bytes
		}
		var want blockIOTotals
		if err := json.Unmarshal([]byte(totals), &want); err != nil || want.Requests != requests2 || want.Bytes != bytes2 || want.Records != len(b.Records) {
			t.Fatalf("block I/O of %d records, %d requests, %d bytes read back against totals %s", len(b.Records), requests2, bytes2, totals)
		}
		_ = summary.Build(rec.Meta, rec.Samples, summary.Options{BlockIO: b})
	})
}

// fuzzDir is a directory for a fuzz target's files, not t.TempDir(): the seeds' test names hold '#', which
// would end the file's path in the SQLite URI the reader opens, so that it read another file.
func fuzzDir(f *testing.F) string {
	dir, err := os.MkdirTemp("", "tare-fuzz-")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
