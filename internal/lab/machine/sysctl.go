package machine

import (
	"errors"
	"fmt"

	"github.com/tare-dev/tare/internal/kernel"
)

// labSysctls are the kernel settings kubelet, kube-proxy and the bridge plugin change; up records them
// (ReadSysctls) and down puts them back (RestoreSysctls).
var labSysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward",
	"net/ipv4/conf/all/route_localnet", "net/bridge/bridge-nf-call-iptables", "net/bridge/bridge-nf-call-ip6tables",
}

// ReadSysctls reads the settings a lab changes, by their path under /proc/sys.
func ReadSysctls() map[string]string {
	out := map[string]string{}
	for _, k := range labSysctls {
		if v, err := kernel.ReadSysctl(kernel.HostProc, k); err == nil {
			out[k] = v
		}
	}
	return out
}

// RestoreSysctls writes back the settings ReadSysctls read, those that changed.
func RestoreSysctls(saved map[string]string) error {
	var errs []error
	for k, v := range saved {
		if now, err := kernel.ReadSysctl(kernel.HostProc, k); err == nil && now == v {
			continue
		}
		if err := kernel.WriteSysctl(kernel.HostProc, k, v); err != nil {
			errs = append(errs, fmt.Errorf("restoring: %w", err))
		}
	}
	return errors.Join(errs...)
}
