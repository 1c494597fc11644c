package sample

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// AssumedHZ is the scheduler tick tare assumes when the kernel's build configuration cannot be found: the
// most common CONFIG_HZ of distribution kernels.
const AssumedHZ = 250

// KernelConfigAssumed is Meta.KernelConfig when no build configuration was found and the tick rate and IRQ
// time accounting are assumptions, not facts.
const KernelConfigAssumed = "assumed"

// KernelConfig is what tare needs from the kernel's build configuration.
type KernelConfig struct {
	HZ                int  // CONFIG_HZ, the scheduler tick /proc/stat samples at (0 if the file does not say)
	IRQTimeAccounting bool // CONFIG_IRQ_TIME_ACCOUNTING: irq time is measured apart, not inside task time
	// Source is the file the configuration was read from; "" when there was none.
	Source string
}

// readKernelConfig reads the measured kernel's build configuration: /proc/config.gz where the kernel
// offers it, else <hostRoot>/boot/config-RELEASE, which most distribution kernels ship instead. With
// neither, it returns the zero KernelConfig and an error wrapping os.ErrNotExist that names both paths.
func readKernelConfig(procRoot, hostRoot, release string) (KernelConfig, error) {
	gz := filepath.Join(procRoot, "config.gz")
	b, err := readGzip(gz)
	if err == nil {
		kc := parseKernelConfig(b)
		kc.Source = gz
		return kc, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return KernelConfig{}, fmt.Errorf("reading %s: %w", gz, err)
	}
	if release == "" {
		return KernelConfig{}, fmt.Errorf("no %s, and the kernel release is unknown: %w", gz, os.ErrNotExist)
	}
	boot := filepath.Join(hostRoot, "boot", "config-"+release)
	b, err = readLimited(boot, 16<<20)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return KernelConfig{}, fmt.Errorf("neither %s nor %s exists (pass --host-root where the host's / is mounted): %w", gz, boot, err)
		}
		return KernelConfig{}, fmt.Errorf("reading %s: %w", boot, err)
	}
	kc := parseKernelConfig(b)
	kc.Source = boot
	return kc, nil
}

// parseKernelConfig reads CONFIG_HZ and CONFIG_IRQ_TIME_ACCOUNTING from a kernel .config.
func parseKernelConfig(b []byte) KernelConfig {
	var kc KernelConfig
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		switch {
		case bytes.HasPrefix(line, []byte("CONFIG_HZ=")):
			kc.HZ = parseKernelHZ(line)
		case string(bytes.TrimSpace(line)) == "CONFIG_IRQ_TIME_ACCOUNTING=y":
			kc.IRQTimeAccounting = true
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

// hostIdentity names the measured host and its kernel release from <procRoot>/sys/kernel, so that tare in a
// DaemonSet pod (with the host's /proc at --proc-root) reports its node, not the pod. Either is "" when
// unreadable.
func hostIdentity(procRoot string) (host, release string) {
	read := func(name string) string {
		b, err := readBounded(filepath.Join(procRoot, "sys", "kernel", name))
		if err != nil {
			return ""
		}
		return parseKernelString(b)
	}
	return read("hostname"), read("osrelease")
}

// parseKernelString reads a one-line /proc/sys/kernel value: the first line, trimmed.
func parseKernelString(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return strings.TrimSpace(string(line))
}

// describeHost fills in the measured host's name, kernel release and build configuration, adds a limitation
// for what it had to assume, and returns the configuration. fallbackHost (tare's own host name) and the
// release of the running kernel stand in when <procRoot>/sys/kernel cannot be read.
func (m *Meta) describeHost(procRoot, hostRoot, fallbackHost string) KernelConfig {
	host, release := hostIdentity(procRoot)
	if host == "" {
		host = fallbackHost
		m.Limitations = append(m.Limitations, fmt.Sprintf("host name: %s/sys/kernel/hostname is unreadable; the name is that of tare's own host", procRoot))
	}
	if release == "" {
		var uts unix.Utsname
		if unix.Uname(&uts) == nil {
			release = unix.ByteSliceToString(uts.Release[:])
		}
	}
	m.Host, m.Kernel = host, release
	if hostRoot == "" {
		hostRoot = "/"
	}
	kc, err := readKernelConfig(procRoot, hostRoot, release)
	if err != nil {
		m.KernelConfig = KernelConfigAssumed
		m.Limitations = append(m.Limitations, fmt.Sprintf("kernel configuration: %v; the tick rate is assumed to be %d Hz and IRQ time accounting off", err, AssumedHZ))
		return KernelConfig{}
	}
	m.KernelConfig = kc.Source
	if kc.HZ == 0 {
		m.Limitations = append(m.Limitations, fmt.Sprintf("kernel configuration: %s has no CONFIG_HZ; the tick rate is assumed to be %d Hz", kc.Source, AssumedHZ))
	}
	return kc
}

// HostName is the measured host's name (from <procRoot>/sys/kernel/hostname), or tare's own host name when
// that is unreadable. Pod naming asks the API server for this node's pods by it.
func HostName(procRoot string) string {
	if h, _ := hostIdentity(procRoot); h != "" {
		return h
	}
	h, _ := os.Hostname()
	return h
}
