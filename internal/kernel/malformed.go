package kernel

import "errors"

// ErrMalformed marks what the kernel wrote that tare could read but not parse: a kernel file in a format
// this tare does not know or cut short, or a record of a perf ring or a BPF iterator that does not decode.
// Callers tell it from a file that is gone (os.ErrNotExist, ErrGone) with errors.Is. It is the one such
// sentinel: profile.ErrMalformed and taskiter.ErrMalformed are this error.
var ErrMalformed = errors.New("malformed kernel data")
