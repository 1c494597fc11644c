package taskiter

import (
	"errors"

	"github.com/tare-dev/tare/internal/kernel"
)

// ErrNotSupported means no task pass can run here (or not the one asked for): a kernel older than 5.8 (6.7
// for PassOpenCoded) or without BTF, or a process without CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN).
// Callers fall back to reading every process. It matches kernel.ErrNotSupported too.
var ErrNotSupported = kernel.NotSupported("BPF task iterator not supported")

// ErrMalformed means the iterator's output did not decode: the compiled program and this package disagree.
// It is kernel.ErrMalformed.
var ErrMalformed = kernel.ErrMalformed

// ErrIncomplete means a pass of PassBPFIter could not account for every thread group: more than 512 groups
// were open at once (their threads scattered across the walk, threads born or ended during it) or its map
// was full. The groups it reported are right, but others may have moved too: the caller treats every group
// as moved for that pass; the next pass starts afresh.
var ErrIncomplete = errors.New("task pass incomplete")
