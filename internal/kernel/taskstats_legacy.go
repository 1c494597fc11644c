package kernel

import "fmt"

// What taskstats lacks on some kernels, and how tare finds out.

// ReadAsVersion makes Drain read every record as a kernel whose struct taskstats has the given version
// would have sent it: before version 12 (Linux 5.19), without ac_tgid. Tests use it to run the path of
// older kernels on a newer one, with the records of real exits; 0 reads records as they come.
func (l *ExitListener) ReadAsVersion(v uint16) { l.readAs = v }

// readAsVersion rewrites r as a kernel of taskstats version v would have sent it (v 0: unchanged). Only
// what tare reads differs: before version 12 there is no ac_tgid.
func readAsVersion(r *TaskstatsReply, v uint16) {
	if v == 0 {
		return
	}
	for _, s := range []*TaskStats{r.PIDStats, r.TGIDStats} {
		if s == nil || s.Version <= v {
			continue
		}
		s.Version = v
		if v < tsVersionTGID {
			s.TGID = 0
		}
	}
}

// checkCPUFilled says whether taskstats carries CPU time, given the statistics of a thread group that has
// surely run (tare itself). tare reads cpu_run_virtual_total (the scheduler's sum_exec_runtime, in ns),
// which the kernel fills in delayacct_add_tsk: only with CONFIG_TASK_DELAY_ACCT, and before Linux 5.14 only
// while delay accounting is on (booting with nodelayacct zeroes it; since 5.14 the field is filled whatever
// the delayacct boot option and the kernel.task_delayacct sysctl say). Without it every query and exit
// would read 0 ns: the error matches ErrNotSupported so that the caller uses another source.
func checkCPUFilled(self TaskStats) error {
	if self.CPUNs != 0 {
		return nil
	}
	return fmt.Errorf("taskstats carries no CPU time (its cpu_run_virtual_total reads 0 for tare itself, which has run %d µs): "+
		"the kernel is built without CONFIG_TASK_DELAY_ACCT or, before Linux 5.14, booted with nodelayacct: %w",
		self.UTimeUs+self.STimeUs, ErrNotSupported)
}
