package sample

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/classify"
	"github.com/tare-dev/tare/internal/kernel"
)

// AssumedHZ is the scheduler tick tare assumes when the kernel's build configuration cannot be found: the
// most common CONFIG_HZ of distribution kernels.
const AssumedHZ = 250

// KernelConfigAssumed is Meta.KernelConfig when no build configuration was found and the tick rate and IRQ
// time accounting are assumptions, not facts.
const KernelConfigAssumed = "assumed"

// describeHost fills in the measured host's name, kernel release and build configuration, adds a limitation
// for what it had to assume, and returns the configuration. fallbackHost (tare's own host name) and the
// release of the running kernel stand in when <procRoot>/sys/kernel cannot be read.
func (m *Meta) describeHost(procRoot, hostRoot, fallbackHost string) kernel.BuildConfig {
	host, release := kernel.HostIdentity(procRoot)
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
	m.Host, m.Kernel, m.BootID = host, release, kernel.BootID(procRoot)
	if hostRoot == "" {
		hostRoot = "/"
	}
	kc, err := kernel.ReadKernelConfig(procRoot, hostRoot, release)
	if err != nil {
		m.KernelConfig = KernelConfigAssumed
		m.Limitations = append(m.Limitations, fmt.Sprintf("kernel configuration: %v; the tick rate is assumed to be %d Hz and IRQ time accounting off", err, AssumedHZ))
		return kernel.BuildConfig{}
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
	if h, _ := kernel.HostIdentity(procRoot); h != "" {
		return h
	}
	h, _ := os.Hostname()
	return h
}

// OwnPodRoot is the cgroup root of the kubelet that runs process pid (tare itself in a DaemonSet) when it
// runs in a pod, else "": the Options.PodRoot that keeps other nodes' pods apart on a shared kernel.
func OwnPodRoot(procRoot string, pid int) string {
	id, err := kernel.ReadIdentity(procRoot, pid)
	if err != nil {
		return ""
	}
	pod, ok := classify.PodFromCgroup(id.Cgroup)
	if !ok {
		return ""
	}
	return pod.Root
}
