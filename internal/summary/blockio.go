package summary

import (
	"cmp"
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/tare-dev/tare/internal/blockio"
	"github.com/tare-dev/tare/internal/output"
)

// BlockIO is the window's block I/O by group, counted in the kernel from its block tracepoints (blockio):
// requests and bytes by direction, and the device time (issue to completion) and queue time (request
// made to issued) of every request, as log2 histograms in microseconds whose percentiles are given with
// their bucket. A request is charged to the process that submitted it: buffered writes show under the
// kernel's writeback threads, journal commits under jbd2.
type BlockIO struct {
	Source string         `json:"source"`
	Groups []BlockIOGroup `json:"groups"`
	Total  BlockIOGroup   `json:"total"`
	// Unmatched are completions of requests the tracer did not see made or issued; Dropped, requests it
	// had no room to count.
	Unmatched uint64 `json:"unmatched_completions,omitempty"`
	Dropped   uint64 `json:"dropped,omitempty"`
}

// BlockIOGroup is one group's block I/O over the window.
type BlockIOGroup struct {
	Name          string            `json:"name"`
	Kind          string            `json:"kind,omitempty"`
	ReadRequests  uint64            `json:"read_requests"`
	ReadBytes     uint64            `json:"read_bytes"`
	WriteRequests uint64            `json:"write_requests"`
	WriteBytes    uint64            `json:"write_bytes"`
	DeviceP50     *blockio.Quantile `json:"device_p50,omitempty"`
	DeviceP99     *blockio.Quantile `json:"device_p99,omitempty"`
	QueueP99      *blockio.Quantile `json:"queue_p99,omitempty"`
	// Device and Queue are the histograms the percentiles come from (slot i counts [2^(i-1), 2^i) µs).
	Device blockio.Histogram `json:"device_histogram_us"`
	Queue  blockio.Histogram `json:"queue_histogram_us"`
}

// blockIOSource names where the figures come from.
const blockIOSource = "BPF on the block tracepoints (block_io_start, block_rq_issue, block_rq_complete)"

// buildBlockIO charges each process's block I/O to its group: the group of the process with that PID seen
// in the window, else (a process that came and went between samples) "other (COMM)".
func buildBlockIO(snap *blockio.Snapshot, procs map[int64]*procAcc) *BlockIO {
	if snap == nil {
		return nil
	}
	type group struct{ name, kind string }
	byPID := map[int]group{}
	for _, p := range procs {
		byPID[p.info.Key.PID] = group{p.info.Group, p.info.GroupKind}
	}
	acc := map[group]*BlockIOGroup{}
	out := &BlockIO{Source: blockIOSource, Unmatched: snap.Unmatched, Dropped: snap.Dropped, Total: BlockIOGroup{Name: "node"}}
	for _, r := range snap.Records {
		g, ok := byPID[int(r.PID)]
		if !ok {
			g = group{name: "other (" + r.Comm + ")", kind: "other"}
		}
		a := acc[g]
		if a == nil {
			a = &BlockIOGroup{Name: g.name, Kind: g.kind}
			acc[g] = a
		}
		a.add(r)
		out.Total.add(r)
	}
	for _, a := range acc {
		a.quantiles()
		out.Groups = append(out.Groups, *a)
	}
	out.Total.quantiles()
	slices.SortFunc(out.Groups, func(a, b BlockIOGroup) int {
		return cmp.Or(-cmp.Compare(a.ReadRequests+a.WriteRequests, b.ReadRequests+b.WriteRequests), cmp.Compare(a.Name, b.Name))
	})
	return out
}

func (g *BlockIOGroup) add(r blockio.Record) {
	switch r.Dir {
	case blockio.Read:
		g.ReadRequests += r.Requests
		g.ReadBytes += r.Bytes
	case blockio.Write:
		g.WriteRequests += r.Requests
		g.WriteBytes += r.Bytes
	}
	for i := range g.Device {
		g.Device[i] += r.Device[i]
		g.Queue[i] += r.Queue[i]
	}
}

func (g *BlockIOGroup) quantiles() {
	at := func(h *blockio.Histogram, q float64) *blockio.Quantile {
		if v, ok := h.Quantile(q); ok {
			return &v
		}
		return nil
	}
	g.DeviceP50, g.DeviceP99, g.QueueP99 = at(&g.Device, 0.5), at(&g.Device, 0.99), at(&g.Queue, 0.99)
}

// tableBlockIO writes the groups that did block I/O, busiest first, and the node's total.
func (s Summary) tableBlockIO(w *errWriter) {
	b := s.BlockIO
	if b == nil {
		return
	}
	w.printf("\nBLOCK I/O (%s; percentiles within their log2 bucket)\n", b.Source)
	tw := tabwriter.NewWriter(w.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tREADS\tREAD\tWRITES\tWRITTEN\tDEVICE P50\tDEVICE P99\tQUEUE P99")
	row := func(g BlockIOGroup) {
		q := func(x *blockio.Quantile) string {
			if x == nil {
				return "-"
			}
			return x.String()
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\n", g.Name, g.ReadRequests, output.Bytes(float64(g.ReadBytes)),
			g.WriteRequests, output.Bytes(float64(g.WriteBytes)), q(g.DeviceP50), q(g.DeviceP99), q(g.QueueP99))
	}
	for _, g := range b.Groups[:min(s.top, len(b.Groups))] {
		row(g)
	}
	row(b.Total)
	w.err = firstErr(w.err, tw.Flush())
	if b.Unmatched > 0 || b.Dropped > 0 {
		w.printf("block I/O: %d completions of requests not seen made, %d requests not counted (no room)\n", b.Unmatched, b.Dropped)
	}
}
