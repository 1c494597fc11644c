package agent

import (
	"github.com/tare-dev/tare/internal/blockio"
	"github.com/tare-dev/tare/internal/classify"
)

// ioCounters are one group's block I/O since the agent started, from the kernel's block tracepoints
// (blockio): requests and bytes by direction, and the device time (issue → completion) of every request.
type ioCounters struct {
	requests, bytes [blockio.Other + 1]uint64
	device          blockio.Histogram
}

// blockIOState is what the agent keeps of the tracer: its last snapshot (what is already credited) and
// the counts of requests it could not charge.
type blockIOState struct {
	on                 bool
	last               blockio.Snapshot
	unmatched, dropped uint64
	// settled is the tracer's Settled count read before last was; while it stays the same the table has
	// not moved and the agent does not read it again (unless forgetting failed: retry is then set).
	settled uint64
	retry   bool
}

// blockIOMoved reports whether the tracer's table may have moved since the last snapshot was credited.
func (s *state) blockIOMoved(settled uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.io.on || s.io.retry || settled != s.io.settled
}

// otherGroup is where block I/O of a process the agent does not know (gone before it was sampled) goes.
var otherGroup = groupKey{group: "other", kind: classify.KindOther}

// addBlockIO credits each group with the block I/O its processes did since the previous snapshot, and
// returns the records to forget: those of processes that ended and did nothing since, already credited,
// so that the kernel's table holds the processes doing I/O now, not every one since the agent started
// (call forgotten once the tracer has dropped them).
func (s *state) addBlockIO(snap blockio.Snapshot, settled uint64) (forget []blockio.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The live process of each PID, else the latest that ended (still known: the ring names it).
	live, ended := make(map[uint32]*proc, len(s.procs)), map[uint32]*proc{}
	for _, p := range s.procs {
		pid := uint32(p.info.Key.PID)
		switch {
		case p.exitSeq == 0:
			live[pid] = p
		case ended[pid] == nil || p.exitSeq > ended[pid].exitSeq:
			ended[pid] = p
		}
	}
	d := snap.Sub(s.io.last)
	moved := make(map[blockio.Key]bool, len(d.Records))
	now := s.prev.Time
	for _, r := range d.Records {
		moved[r.Key] = true
		k := otherGroup
		switch lp, ep := live[r.PID], ended[r.PID]; {
		case lp != nil && (ep == nil || lp.info.Comm == r.Comm || ep.info.Comm != r.Comm):
			k = lp.key
		case ep != nil:
			// Ended since it did the I/O: its group still. When its PID is already another process's, the
			// record's command name (the creator's at its first request) tells which of the two did it.
			k = ep.key
		}
		g := s.groupOf(k, now)
		g.seen = now
		if g.io == nil {
			g.io = &ioCounters{}
		}
		dir := min(r.Dir, blockio.Other)
		g.io.requests[dir] += r.Requests
		g.io.bytes[dir] += r.Bytes
		g.io.device.Add(&r.Device)
	}
	for _, r := range snap.Records {
		if live[r.PID] == nil && !moved[r.Key] {
			forget = append(forget, r.Key)
		}
	}
	s.io = blockIOState{on: true, last: snap, unmatched: snap.Unmatched, dropped: snap.Dropped, settled: settled}
	return forget
}

// retryBlockIO makes the next sample read the table again although nothing moved: forgetting failed.
func (s *state) retryBlockIO() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.io.retry = true
}

// forgotten drops records the kernel's table no longer holds from the last snapshot, so that one counting
// again (a reused PID) is credited from zero.
func (s *state) forgotten(keys []blockio.Key) {
	if len(keys) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	gone := make(map[blockio.Key]bool, len(keys))
	for _, k := range keys {
		gone[k] = true
	}
	keep := s.io.last.Records[:0]
	for _, r := range s.io.last.Records {
		if !gone[r.Key] {
			keep = append(keep, r)
		}
	}
	s.io.last.Records = keep
}
