package profile

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/kernel"
)

// ErrPermission is returned when the kernel refuses perf events: callers can tell it from other failures
// and the message says which sysctl or capability to set.
var ErrPermission = errors.New("perf events not permitted")

// Event is the perf event the samples come from.
type Event struct {
	// Name is "cycles" (hardware) or "cpu-clock" (software timer).
	Name string
	// typ and config are the perf_event_attr fields.
	typ    uint32
	config uint64
}

var (
	cycles   = Event{Name: "cycles", typ: unix.PERF_TYPE_HARDWARE, config: unix.PERF_COUNT_HW_CPU_CYCLES}
	cpuClock = Event{Name: "cpu-clock", typ: unix.PERF_TYPE_SOFTWARE, config: unix.PERF_COUNT_SW_CPU_CLOCK}
)

// sampleType is what each PERF_RECORD_SAMPLE holds, in the kernel's order: ip, pid/tid, time, cpu, period,
// callchain. parseRecord depends on it.
const sampleType = unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME | unix.PERF_SAMPLE_CPU |
	unix.PERF_SAMPLE_PERIOD | unix.PERF_SAMPLE_CALLCHAIN

// maxStack bounds the frames of a call chain (the kernel's default, kernel.perf_event_max_stack, is 127).
const maxStack = 127

// attr is the perf_event_attr of one CPU's sampler at freq Hz. A cpu-clock event is given a fixed period
// (the kernel turns a frequency into one anyway), so that each sample stands for exactly that much CPU.
// Idle CPUs are not sampled (exclude_idle): interrupts served while a CPU idles are therefore missing.
func attr(ev Event, freq int) *unix.PerfEventAttr {
	a := &unix.PerfEventAttr{
		Type:        ev.typ,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Config:      ev.config,
		Sample_type: sampleType,
		Bits:        unix.PerfBitDisabled | unix.PerfBitExcludeIdle,
		// Wakeup 0: the kernel wakes a reader only when half the ring is full, not at every sample (Record
		// polls the rings on a timer and never waits on them).
		Wakeup:           0,
		Sample_max_stack: maxStack,
	}
	if ev == cpuClock {
		a.Sample = uint64(1e9 / freq)
	} else {
		a.Bits |= unix.PerfBitFreq
		a.Sample = uint64(freq)
	}
	return a
}

// openCPU opens ev on one CPU for every process (pid -1).
func openCPU(ev Event, freq, cpu int) (int, error) {
	return unix.PerfEventOpen(attr(ev, freq), -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
}

// chooseEvent opens hardware cycles on cpu when the machine has them (not in most virtual machines), else
// cpu-clock. The descriptor returned is open.
func chooseEvent(freq, cpu int, procRoot string) (Event, int, error) {
	fd, err := openCPU(cycles, freq, cpu)
	if err == nil {
		return cycles, fd, nil
	}
	if isPermission(err) {
		return Event{}, -1, permissionError(err, procRoot)
	}
	fd, err = openCPU(cpuClock, freq, cpu)
	if err != nil {
		return Event{}, -1, openError(err, cpu, procRoot)
	}
	return cpuClock, fd, nil
}

func isPermission(err error) bool { return errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) }

// openError explains a failed perf_event_open.
func openError(err error, cpu int, procRoot string) error {
	if isPermission(err) {
		return permissionError(err, procRoot)
	}
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("opening the cpu-clock perf event on CPU %d: %w: this kernel has no perf events (CONFIG_PERF_EVENTS)", cpu, err)
	}
	if errors.Is(err, unix.EMFILE) {
		return fmt.Errorf("opening the perf event on CPU %d: %w: raise the open file limit (ulimit -n)", cpu, err)
	}
	return fmt.Errorf("opening the perf event on CPU %d: %w", cpu, err)
}

// permissionError says what to set so that perf events are allowed: tare samples every process on every
// CPU, which needs perf_event_paranoid -1 or CAP_PERFMON (CAP_SYS_ADMIN on kernels before 5.8).
func permissionError(err error, procRoot string) error {
	paranoid := "unknown"
	if v, rerr := kernel.ReadSysctl(kernel.ProcRootOr(procRoot), "kernel/perf_event_paranoid"); rerr == nil {
		paranoid = v
	}
	return fmt.Errorf("%w (%w): sampling every CPU needs CAP_PERFMON (or CAP_SYS_ADMIN), or kernel.perf_event_paranoid=-1 "+
		"(now %s): run as root, grant the capability (setcap cap_perfmon,cap_syslog+ep tare), or sysctl -w kernel.perf_event_paranoid=-1",
		ErrPermission, err, paranoid)
}
