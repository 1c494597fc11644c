package kernel

import "errors"

// ErrNotSupported is tare's one meaning of "this kernel cannot": a feature that this kernel, or this
// process's privileges, do not allow (taskstats, the proc connector, PSI, a BPF program). Callers fall back
// and tests skip on it. A package with a sentinel of its own for one feature (blockio, exectrace, bpfstats,
// taskiter) makes it with NotSupported, so errors.Is matches both.
var ErrNotSupported = errors.New("not supported by this kernel")

// NotSupported returns a sentinel for one feature that this kernel or this process cannot use: its message
// is what, and errors.Is matches it with itself and with ErrNotSupported.
func NotSupported(what string) error { return &notSupported{what: what} }

type notSupported struct{ what string }

func (e *notSupported) Error() string { return e.what }

// Is makes every feature's sentinel match ErrNotSupported.
func (e *notSupported) Is(target error) bool { return target == ErrNotSupported }

// ErrPermission marks a source that needs more privilege than tare has (CAP_NET_ADMIN for taskstats and
// the proc connector, root for other users' smaps_rollup and io).
var ErrPermission = errors.New("permission denied")

// ErrGone marks a process that exited while tare read it.
var ErrGone = errors.New("process gone")
