package sample

import (
	"github.com/tare-dev/tare/internal/bpfstats"
)

// openBPFStats turns on the kernel's BPF run-time statistics for the sampler's life, so that each sample
// carries the run time of tare's own programs (Sample.SelfBPF). Without CAP_SYS_ADMIN it says so in a
// limitation and samples carry none.
func (s *Sampler) openBPFStats() {
	c, err := bpfstats.Enable()
	if err != nil {
		s.meta.Limitations = append(s.meta.Limitations, "tare's in-kernel BPF time is not measured: "+err.Error())
		return
	}
	s.bpfStats = c
}

// selfBPF reads the cumulative counters of the programs loaded now: the exec tracer's, the task pass's
// and Options.BPFPrograms'.
func (s *Sampler) selfBPF() []bpfstats.Stat {
	if s.bpfStats == nil {
		return nil
	}
	var progs []bpfstats.Program
	if s.execs != nil {
		progs = append(progs, s.execs.programs()...)
	}
	if s.act.loaded() {
		progs = append(progs, s.act.it.Programs()...)
	}
	if s.opts.BPFPrograms != nil {
		progs = append(progs, s.opts.BPFPrograms()...)
	}
	stats, err := bpfstats.Read(progs)
	if err != nil {
		s.warnOnce("bpfstats", "tare's in-kernel BPF time: "+err.Error())
		return nil
	}
	return stats
}

// programs returns the exec tracer's programs, none while the proc connector follows starts.
func (st *starts) programs() []bpfstats.Program {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.tr == nil {
		return nil
	}
	return st.tr.Programs()
}
