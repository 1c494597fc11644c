package kernel

import "errors"

// ErrNotSupported marks a kernel feature that this kernel lacks (taskstats, the proc connector, PSI).
var ErrNotSupported = errors.New("not supported by this kernel")

// ErrPermission marks a source that needs more privilege than tare has (CAP_NET_ADMIN for taskstats and
// the proc connector, root for other users' smaps_rollup and io).
var ErrPermission = errors.New("permission denied")

// ErrGone marks a process that exited while tare read it.
var ErrGone = errors.New("process gone")
