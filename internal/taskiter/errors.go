package taskiter

import "errors"

// ErrNotSupported means the task iterator cannot run here: a kernel older than 6.7 or without BTF, or a
// process without CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN). Callers fall back to reading every process.
var ErrNotSupported = errors.New("BPF task iterator not supported")

// ErrMalformed means the iterator's output did not decode: the compiled program and this package disagree.
var ErrMalformed = errors.New("malformed task iterator output")
