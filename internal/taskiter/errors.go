package taskiter

import "errors"

// ErrNotSupported means no task pass can run here (or not the one asked for): a kernel older than 5.8 (6.7
// for PassOpenCoded) or without BTF, or a process without CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN).
// Callers fall back to reading every process.
var ErrNotSupported = errors.New("BPF task iterator not supported")

// ErrMalformed means the iterator's output did not decode: the compiled program and this package disagree.
var ErrMalformed = errors.New("malformed task iterator output")

// ErrIncomplete means a pass of PassBPFIter could not add up every thread group's threads (a thread was born
// or ended during the walk): the groups it reported are right, but others may have moved too. The caller
// treats every group as moved for that pass; the next pass starts afresh.
var ErrIncomplete = errors.New("task pass incomplete")
