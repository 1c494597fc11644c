package machine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
		if b, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil {
			out[k] = strings.TrimSpace(string(b))
		}
	}
	return out
}

// RestoreSysctls writes back the settings ReadSysctls read, those that changed.
func RestoreSysctls(saved map[string]string) error {
	var errs []error
	for k, v := range saved {
		p := filepath.Join("/proc/sys", k)
		if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == v {
			continue
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s=%s: %w", k, v, err))
		}
	}
	return errors.Join(errs...)
}
