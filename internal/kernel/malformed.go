package kernel

import "errors"

// ErrMalformed marks a kernel file tare could read but not parse: a format this tare does not know, or a
// file cut short. Callers tell it from a file that is gone (os.ErrNotExist, ErrGone) with errors.Is.
var ErrMalformed = errors.New("malformed kernel file")
