package kernel

// The machine's own procfs and sysfs. Readers here take the root they read (a host's, seen from a
// container, is elsewhere: the agent's DaemonSet mounts it at /host/proc and /host/sys, given as the
// --proc-root and --sys-root flags); these two constants are the one home of the default. The packages
// that import this one name them instead of writing the paths; cli and agent, which do not, write them as
// their flags' defaults.
const (
	HostProc = "/proc"
	HostSys  = "/sys"
)

// ProcRootOr returns root, or HostProc when root is empty (an option left at its zero value).
func ProcRootOr(root string) string {
	if root == "" {
		return HostProc
	}
	return root
}

// SysRootOr returns root, or HostSys when root is empty.
func SysRootOr(root string) string {
	if root == "" {
		return HostSys
	}
	return root
}
