package blockio

import (
	"cmp"
	"fmt"
	"slices"
)

// Dir is the direction of a request.
type Dir uint32

// Directions, as the BPF program numbers them.
const (
	Read  Dir = iota
	Write     // includes the writes of writeback, charged to the flusher that submits them
	Other     // flush, discard, write zeroes, zone and driver commands
)

// String returns "read", "write" or "other".
func (d Dir) String() string {
	switch d {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return "other"
}

// Dev is a disk by its device number: the whole disk, never a partition (a request on /dev/vda1 counts
// under /dev/vda), as the first line of the disk in /proc/diskstats.
type Dev struct {
	Major, Minor uint32
}

// String returns "major:minor".
func (d Dev) String() string { return fmt.Sprintf("%d:%d", d.Major, d.Minor) }

// Key names a Record: one process, in one cgroup, doing I/O in one direction on one disk.
type Key struct {
	PID    uint32 // thread group ID in the initial PID namespace
	Cgroup uint64 // cgroup v2 ID (the inode number of its directory) of the submitting task
	Dev    Dev
	Dir    Dir
}

// Record is the block I/O of one Key, cumulative since Open.
type Record struct {
	Key
	Comm     string    // the process's name when its first request here was created
	Requests uint64    // requests completed
	Bytes    uint64    // bytes completed, partial completions included
	Device   Histogram // issue to the driver → completion: the device's time, driver included
	// Queue is from the creation of the request to its issue: time in the submitter's plug and in the I/O
	// scheduler. A request first seen at its issue counts 0 here.
	Queue Histogram
}

// Snapshot is what a Tracer has counted since Open.
type Snapshot struct {
	Records []Record // sorted by PID, disk, direction, cgroup
	// Unmatched counts completions of requests whose creation or issue the tracer did not see: those in
	// flight at Open, or forgotten because more than 16384 were in flight. They are in no Record.
	Unmatched uint64
	// Dropped counts requests that were not counted because the table of records was full
	// (Options.MaxRecords). They are in no Record.
	Dropped uint64
}

func compareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.Dev.Major, b.Dev.Major),
		cmp.Compare(a.Dev.Minor, b.Dev.Minor), cmp.Compare(a.Dir, b.Dir), cmp.Compare(a.Cgroup, b.Cgroup))
}

func (s *Snapshot) sort() {
	slices.SortFunc(s.Records, func(a, b Record) int { return compareKeys(a.Key, b.Key) })
}

// Sub returns what happened between prev and s, two snapshots of the same Tracer, prev the earlier: the
// records that moved, with their differences.
func (s Snapshot) Sub(prev Snapshot) Snapshot {
	before := make(map[Key]*Record, len(prev.Records))
	for i := range prev.Records {
		before[prev.Records[i].Key] = &prev.Records[i]
	}
	d := Snapshot{Unmatched: s.Unmatched - min(s.Unmatched, prev.Unmatched), Dropped: s.Dropped - min(s.Dropped, prev.Dropped)}
	for _, r := range s.Records {
		if p, ok := before[r.Key]; ok {
			if r.Requests == p.Requests && r.Bytes == p.Bytes {
				continue
			}
			r.Requests -= min(r.Requests, p.Requests)
			r.Bytes -= min(r.Bytes, p.Bytes)
			r.Device.sub(&p.Device)
			r.Queue.sub(&p.Queue)
		}
		d.Records = append(d.Records, r)
	}
	return d
}

// Total sums the records for which keep returns true (all when keep is nil) into one Record, whose Key
// keeps only the fields all of them share. It is how a caller gets a process's reads on any disk, or a
// group's writes: s.Total(func(k Key) bool { return k.PID == pid && k.Dir == Read }).
func (s Snapshot) Total(keep func(Key) bool) Record {
	var t Record
	first := true
	for i := range s.Records {
		r := &s.Records[i]
		if keep != nil && !keep(r.Key) {
			continue
		}
		if first {
			t.Key, t.Comm, first = r.Key, r.Comm, false
		} else {
			t.Key = commonKey(t.Key, r.Key)
			if t.Comm != r.Comm {
				t.Comm = ""
			}
		}
		t.Requests += r.Requests
		t.Bytes += r.Bytes
		t.Device.Add(&r.Device)
		t.Queue.Add(&r.Queue)
	}
	return t
}

// commonKey keeps the fields a and b share, zeroing the others.
func commonKey(a, b Key) Key {
	var k Key
	if a.PID == b.PID {
		k.PID = a.PID
	}
	if a.Cgroup == b.Cgroup {
		k.Cgroup = a.Cgroup
	}
	if a.Dev == b.Dev {
		k.Dev = a.Dev
	}
	if a.Dir == b.Dir {
		k.Dir = a.Dir
	}
	return k
}
