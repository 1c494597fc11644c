package kernel

import "slices"

// ReadCmdline reads /proc/PID/cmdline under procRoot, split at its NUL separators and not redacted: for
// callers that match a process by the command line they started it with. It waits at most
// BlockingReadTimeout (BlockingReads), failing with ErrStuck when the process does not answer; a process
// gone is ErrGone.
func ReadCmdline(procRoot string, pid int) ([]string, error) {
	b, err := BlockingReads(procRoot).read(pid, "", "cmdline")
	if err != nil {
		return nil, gone(pid, err)
	}
	return splitCmdline(b), nil
}

// FindCmdline returns the processes under procRoot whose command line match accepts, in ascending PID
// order. Processes that exit or do not answer while it looks are skipped.
func FindCmdline(procRoot string, match func(pid int, args []string) bool) ([]int, error) {
	pids, err := ListPIDs(procRoot)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, pid := range pids {
		if args, err := ReadCmdline(procRoot, pid); err == nil && match(pid, args) {
			out = append(out, pid)
		}
	}
	return out, nil
}

// SameArgs is a FindCmdline match for exactly argv.
func SameArgs(argv []string) func(int, []string) bool {
	return func(_ int, args []string) bool { return slices.Equal(args, argv) }
}
