package explain

import (
	"fmt"
	"sort"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/summary"
)

// USERow is one resource's utilisation, saturation and errors over the window, with a verdict.
type USERow struct {
	Resource    string `json:"resource"`
	Utilisation string `json:"utilisation"`
	Saturation  string `json:"saturation"`
	Errors      string `json:"errors"`
	Verdict     string `json:"verdict"` // ok, busy, saturated, errors
	// UtilPct is the utilisation as a number where one exists (-1 when it cannot be known).
	UtilPct float64 `json:"utilisation_percent"`
}

// DiskUse is what one block device did over the window.
type DiskUse struct {
	Device      string  `json:"device"`
	ReadIOPS    float64 `json:"read_iops"`
	WriteIOPS   float64 `json:"write_iops"`
	ReadBps     float64 `json:"read_bytes_per_second"`
	WriteBps    float64 `json:"write_bytes_per_second"`
	FlushPerSec float64 `json:"flushes_per_second"`
	UtilPct     float64 `json:"utilisation_percent"` // time with I/O in flight
	QueueDepth  float64 `json:"average_queue_depth"` // weighted I/O time / window (iostat's aqu-sz)
}

// Writer is a group's disk traffic (from /proc/PID/io: bytes that reached the block layer).
type Writer struct {
	Group    string  `json:"group"`
	WriteBps float64 `json:"write_bytes_per_second"`
	ReadBps  float64 `json:"read_bytes_per_second"`
}

// USE is the USE view (Brendan Gregg's method, as in seed 001's table) plus disk detail.
type USE struct {
	Rows    []USERow  `json:"rows"`
	Disks   []DiskUse `json:"disks"`
	Writers []Writer  `json:"writers"`
	Note    string    `json:"note,omitempty"`
}

const (
	busyPct      = 70.0 // utilisation above this is "busy"
	saturatedPSI = 10.0 // % of time some task stalled on the resource
)

// BuildUSE compares the first and last resource readings of the window.
func BuildUSE(samples []sample.Sample, sum summary.Summary) USE {
	u := USE{Rows: []USERow{}, Disks: []DiskUse{}, Writers: []Writer{}}
	if len(samples) < 2 {
		u.Note = "fewer than two samples: no USE view"
		return u
	}
	secs := sum.Window.Seconds
	u.Rows = append(u.Rows, cpuRow(samples, sum))
	first, last := samples[0].Node.Resources, samples[len(samples)-1].Node.Resources
	if first == nil || last == nil {
		u.Note = "this recording has no memory, disk or network counters (made by an older tare): CPU only"
		return u
	}
	u.Rows = append(u.Rows, memRow(first, last, sum, secs))
	prev := map[string]kernel.DiskStat{}
	for _, d := range first.Disks {
		prev[d.Name] = d
	}
	for _, d := range last.Disks {
		p, ok := prev[d.Name]
		if !ok {
			continue
		}
		du := DiskUse{Device: d.Name, ReadIOPS: rate(d.ReadIOs-p.ReadIOs, secs), WriteIOPS: rate(d.WriteIOs-p.WriteIOs, secs),
			ReadBps: rate((d.ReadSectors-p.ReadSectors)*d.SectorBytes, secs), WriteBps: rate((d.WriteSectors-p.WriteSectors)*d.SectorBytes, secs),
			FlushPerSec: rate(d.FlushIOs-p.FlushIOs, secs),
			UtilPct:     output.Round(min(100, float64(d.IOTicksMs-p.IOTicksMs)/(secs*1000)*100), 1),
			QueueDepth:  output.Round(float64(d.WeightedMs-p.WeightedMs)/(secs*1000), 2)}
		u.Disks = append(u.Disks, du)
		row := USERow{Resource: "disk " + d.Name, UtilPct: du.UtilPct,
			Utilisation: fmt.Sprintf("%.1f%% busy; %.0f r/s %.0f w/s, %s/s written, %.1f flushes/s", du.UtilPct, du.ReadIOPS, du.WriteIOPS, output.Bytes(du.WriteBps), du.FlushPerSec),
			Saturation:  fmt.Sprintf("queue %.2f", du.QueueDepth) + psi(sum, "io"),
			Errors:      "not exposed by /proc/diskstats (see dmesg, smartctl)"}
		row.Verdict = verdict(du.UtilPct, du.QueueDepth > 1 || psiSome(sum, "io") > saturatedPSI, false)
		u.Rows = append(u.Rows, row)
	}
	prevN := map[string]kernel.NetStat{}
	for _, n := range first.Net {
		prevN[n.Name] = n
	}
	for _, n := range last.Net {
		p, ok := prevN[n.Name]
		if !ok || n.RxPackets+n.TxPackets == p.RxPackets+p.TxPackets {
			continue
		}
		bps := float64((n.RxBytes-p.RxBytes)+(n.TxBytes-p.TxBytes)) / secs
		row := USERow{Resource: "net " + n.Name, UtilPct: -1,
			Utilisation: fmt.Sprintf("%s/s in, %s/s out; link speed unknown", output.Bytes(rate(n.RxBytes-p.RxBytes, secs)), output.Bytes(rate(n.TxBytes-p.TxBytes, secs)))}
		if n.SpeedMbps > 0 {
			row.UtilPct = output.Round(bps*8/(float64(n.SpeedMbps)*1e6)*100, 2)
			row.Utilisation = fmt.Sprintf("%.2f%% of %d Mb/s (%s/s in, %s/s out)", row.UtilPct, n.SpeedMbps, output.Bytes(rate(n.RxBytes-p.RxBytes, secs)), output.Bytes(rate(n.TxBytes-p.TxBytes, secs)))
		}
		drops := (n.RxDrop - p.RxDrop) + (n.TxDrop - p.TxDrop)
		errs := (n.RxErrs - p.RxErrs) + (n.TxErrs - p.TxErrs)
		row.Saturation = fmt.Sprintf("%d drops", drops)
		row.Errors = fmt.Sprintf("%d errors", errs)
		row.Verdict = verdict(row.UtilPct, drops > 0, errs > 0)
		u.Rows = append(u.Rows, row)
	}
	for _, g := range sum.Groups {
		if g.WriteBps > 0 || g.ReadBps > 0 {
			u.Writers = append(u.Writers, Writer{Group: g.Name, WriteBps: output.Round(g.WriteBps, 0), ReadBps: output.Round(g.ReadBps, 0)})
		}
	}
	sort.Slice(u.Writers, func(i, j int) bool { return u.Writers[i].WriteBps > u.Writers[j].WriteBps })
	return u
}

func cpuRow(samples []sample.Sample, sum summary.Summary) USERow {
	cpus := max(1, sum.Node.CPUs)
	util := sum.Reconcile.NodeBusy / float64(cpus) / 10
	var run float64
	for _, s := range samples[1:] {
		run += float64(s.Node.Running)
	}
	run /= float64(len(samples) - 1)
	// procs_running counts the reader itself: one runnable task is the sampler.
	sat := run-1 > float64(cpus) || psiSome(sum, "cpu") > saturatedPSI
	return USERow{Resource: "cpu", UtilPct: output.Round(util, 1),
		Utilisation: fmt.Sprintf("%.1f%% of %d CPUs (%.0fm)", util, cpus, sum.Reconcile.NodeBusy),
		Saturation:  fmt.Sprintf("%.1f tasks runnable on average, tare's reader included (%d CPUs)", run, cpus) + psi(sum, "cpu"),
		Errors:      "n/a", Verdict: verdict(util, sat, false)}
}

func memRow(first, last *kernel.Resources, sum summary.Summary, secs float64) USERow {
	util := -1.0
	if last.MemTotal > 0 {
		util = output.Round(100*(1-float64(last.MemAvailable)/float64(last.MemTotal)), 1)
	}
	swaps := (last.VM.PswpIn - first.VM.PswpIn) + (last.VM.PswpOut - first.VM.PswpOut)
	majors := rate(last.VM.PgMajFault-first.VM.PgMajFault, secs)
	ooms := last.VM.OOMKill - first.VM.OOMKill
	return USERow{Resource: "memory", UtilPct: util,
		Utilisation: fmt.Sprintf("%.1f%% used (%s of %s available)", util, output.Bytes(float64(last.MemAvailable)), output.Bytes(float64(last.MemTotal))),
		Saturation:  fmt.Sprintf("%d pages swapped, %.1f major faults/s", swaps, majors) + psi(sum, "memory"),
		Errors:      fmt.Sprintf("%d OOM kills", ooms),
		Verdict:     verdict(util, swaps > 0 || psiSome(sum, "memory") > saturatedPSI, ooms > 0)}
}

func verdict(util float64, saturated, errors bool) string {
	switch {
	case errors:
		return "errors"
	case saturated:
		return "saturated"
	case util >= busyPct:
		return "busy"
	}
	return "ok"
}

func psi(sum summary.Summary, res string) string {
	p, ok := sum.Node.Pressure[res]
	if !ok {
		return ""
	}
	return fmt.Sprintf(", PSI some %.1f%%", p.SomePercent)
}

func psiSome(sum summary.Summary, res string) float64 { return sum.Node.Pressure[res].SomePercent }

func rate(n uint64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return output.Round(float64(n)/secs, 1)
}
