package summary

import (
	"github.com/tare-dev/tare/internal/bpfstats"
	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/sample"
)

// SelfBPF is the run time of tare's BPF programs over the window, from the kernel's run-time statistics
// (bpfstats). The exec and block I/O programs run in other tasks, so their time is tare's cost on top of
// its own CPU (Summary.Self); the kernel charges it to the tasks they ran in, and it stays inside their
// groups' CPU: tare does not subtract it (the kernel gives each program's total, not which task it ran
// in). The task pass runs in tare's own read(2): its time is already in tare's system time.
type SelfBPF struct {
	// Programs are each program's run time and run count over the window.
	Programs []bpfstats.Stat `json:"programs"`
	// Outside is the programs' time that tare's own CPU leaves out, in millicores of the window.
	Outside float64 `json:"outside_millicores"`
	// InSelf is the task pass's time, already inside tare's own CPU, in millicores of the window.
	InSelf float64 `json:"in_self_millicores"`
}

// buildSelfBPF is nil when the samples carry no BPF statistics (no CAP_SYS_ADMIN, none of tare's BPF programs loaded, or a
// recording of an earlier tare).
func buildSelfBPF(first, last sample.Sample, secs float64) *SelfBPF {
	if len(last.SelfBPF) == 0 {
		return nil
	}
	d := bpfstats.Delta(first.SelfBPF, last.SelfBPF)
	var all uint64
	for _, p := range d {
		all += uint64(p.RunTime)
	}
	out := uint64(bpfstats.Outside(d))
	return &SelfBPF{Programs: d, Outside: output.Round(mc(out, secs), 2), InSelf: output.Round(mc(all-out, secs), 2)}
}

func (s Summary) tableSelfBPF(w *errWriter) {
	b := s.SelfBPF
	if b == nil {
		return
	}
	w.printf("  in-kernel BPF %.2fm on top of that cpu (run in the processes that fork, exec and do I/O, and left in their groups' cpu); task pass %.2fm already in it\n",
		b.Outside, b.InSelf)
}
