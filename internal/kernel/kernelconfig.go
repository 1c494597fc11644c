package kernel

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// BuildConfig is what tare needs from the kernel's build configuration.
type BuildConfig struct {
	HZ                int  // CONFIG_HZ, the scheduler tick /proc/stat samples at (0 if the file does not say)
	IRQTimeAccounting bool // CONFIG_IRQ_TIME_ACCOUNTING: irq time is measured apart, not inside task time
	// TicklessIdle: CONFIG_NO_HZ_IDLE or CONFIG_NO_HZ_FULL (CONFIG_NO_HZ in older kernels). /proc/stat's
	// idle and iowait then come from the tickless idle clock, in nanoseconds (printed in USER_HZ units),
	// not from sampled ticks.
	TicklessIdle bool
	// Source is the file the configuration was read from; "" when there was none.
	Source string
}

// ReadKernelConfig reads the measured kernel's build configuration: /proc/config.gz where the kernel
// offers it, else <hostRoot>/boot/config-RELEASE, which most distribution kernels ship instead. With
// neither, it returns the zero BuildConfig and an error wrapping os.ErrNotExist that names both paths.
func ReadKernelConfig(procRoot, hostRoot, release string) (BuildConfig, error) {
	gz := filepath.Join(procRoot, "config.gz")
	b, err := readGzip(gz)
	if err == nil {
		kc := parseKernelConfig(b)
		kc.Source = gz
		return kc, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return BuildConfig{}, fmt.Errorf("reading %s: %w", gz, err)
	}
	if release == "" {
		return BuildConfig{}, fmt.Errorf("no %s, and the kernel release is unknown: %w", gz, os.ErrNotExist)
	}
	boot := filepath.Join(hostRoot, "boot", "config-"+release)
	b, err = readLimited(boot, 16<<20)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return BuildConfig{}, fmt.Errorf("neither %s nor %s exists (pass --host-root where the host's / is mounted): %w", gz, boot, err)
		}
		return BuildConfig{}, fmt.Errorf("reading %s: %w", boot, err)
	}
	kc := parseKernelConfig(b)
	kc.Source = boot
	return kc, nil
}

// parseKernelConfig reads CONFIG_HZ, CONFIG_IRQ_TIME_ACCOUNTING and the tickless idle options from a
// kernel .config.
func parseKernelConfig(b []byte) BuildConfig {
	var kc BuildConfig
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		switch {
		case bytes.HasPrefix(line, []byte("CONFIG_HZ=")):
			kc.HZ = parseKernelHZ(line)
		case string(bytes.TrimSpace(line)) == "CONFIG_IRQ_TIME_ACCOUNTING=y":
			kc.IRQTimeAccounting = true
		case slices.Contains([]string{"CONFIG_NO_HZ_IDLE=y", "CONFIG_NO_HZ_FULL=y", "CONFIG_NO_HZ=y"}, string(bytes.TrimSpace(line))):
			kc.TicklessIdle = true
		}
	}
	return kc
}

// parseKernelHZ returns the CONFIG_HZ of a kernel .config, 0 if it has none or an implausible one.
func parseKernelHZ(b []byte) int {
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CONFIG_HZ="); ok {
			hz, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || hz <= 0 || hz > 100000 {
				return 0
			}
			return hz
		}
	}
	return 0
}

func readGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	b, err := io.ReadAll(io.LimitReader(zr, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return b, nil
}

// readLimited reads a regular file of at most limit bytes (a longer one is cut).
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// HostIdentity names the measured host and its kernel release from <procRoot>/sys/kernel, so that tare in a
// DaemonSet pod (with the host's /proc at --proc-root) reports its node, not the pod. Either is "" when
// unreadable.
func HostIdentity(procRoot string) (host, release string) {
	return readKernelString(procRoot, "hostname"), readKernelString(procRoot, "osrelease")
}

// readKernelString reads the one-line value <procRoot>/sys/kernel/NAME; "" when unreadable.
func readKernelString(procRoot string, name ...string) string {
	b, err := ReadBounded(filepath.Join(append([]string{procRoot, "sys", "kernel"}, name...)...))
	if err != nil {
		return ""
	}
	return parseKernelString(b)
}

// BootID is the kernel's random boot ID (<procRoot>/sys/kernel/random/boot_id), new at every boot and the
// same in every container on the kernel; "" when unreadable.
func BootID(procRoot string) string { return readKernelString(procRoot, "random", "boot_id") }

// InitPIDNamespace is Namespace's answer for the initial PID namespace, whose PIDs BPF programs and the
// proc connector report: its inode number is fixed (PROC_PID_INIT_INO, include/linux/proc_ns.h).
const InitPIDNamespace = "pid:[4026531836]"

// Namespace is the namespace of kind (pid, net, ...) process pid is in, as its /proc link reads
// ("pid:[4026531836]"); "" when unreadable. Processes that show the same one share it.
func Namespace(procRoot string, pid int, kind string) string {
	l, err := os.Readlink(filepath.Join(procRoot, strconv.Itoa(pid), "ns", kind))
	if err != nil {
		return ""
	}
	return l
}

// parseKernelString reads a one-line /proc/sys/kernel value: the first line, trimmed.
func parseKernelString(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return strings.TrimSpace(string(line))
}
