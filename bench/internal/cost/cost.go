package cost

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
)

// CPU is a running process's CPU time: the scheduler's nanosecond runtime of the whole thread group, exited
// threads included, from taskstats (root); without it utime+stime from /proc/PID/stat, in 10 ms ticks, too
// coarse for a process that spends a few ticks a minute. Children are not included.
func CPU(pid int) (time.Duration, error) {
	if ts, err := kernel.OpenTaskstats(); err == nil {
		defer func() { _ = ts.Close() }()
		st, err := ts.TGID(pid)
		if err != nil {
			return 0, err
		}
		return time.Duration(st.CPUNs), nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads fields 14 and 15 (utime, stime, in USER_HZ ticks of 10 ms) after the command name.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed stat: no command name")
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, errors.New("malformed stat: too few fields")
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed stat times %q %q", f[11], f[12])
	}
	return time.Duration(u+s) * 10 * time.Millisecond, nil
}

// Waited is the CPU (user + system) and peak RSS (KiB) of a process that has been waited for, from the
// kernel's rusage: its children that it waited for are included, its start-up too.
func Waited(ps *os.ProcessState) (cpu time.Duration, maxRSSKiB int64, err error) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0, errors.New("no rusage")
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Maxrss, nil
}

// PeakRSS is a running process's VmHWM (bytes).
func PeakRSS(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in status")
}

// CountProcs is the number of processes on the node.
func CountProcs() int {
	pids, _ := kernel.ListPIDs("/proc")
	return len(pids)
}

// Stop asks a started process to stop (SIGTERM), kills it after 10 s, and waits for it.
func Stop(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}
