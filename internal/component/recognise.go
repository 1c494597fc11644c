package component

import (
	"path"
	"strings"
)

// commLen is how much of a program's name the kernel keeps in comm (TASK_COMM_LEN less its NUL).
const commLen = 15

// byProgram maps every program name in the registry to its component.
var byProgram = func() map[string]string {
	m := map[string]string{}
	for _, e := range registry {
		for _, p := range e.Programs {
			m[p] = e.Name
		}
	}
	return m
}()

// Recognise returns the name of the component a process is, from its executable path (/proc/PID/exe,
// possibly ending in " (deleted)"), its comm and its command line (argv joined by spaces, as redacted by
// the sampler), or "" if it is none. The executable's name wins over argv[0], a multi-call program's
// first argument over its own name, and comm is the last resort: it is cut to 15 bytes, so a 15-byte comm
// matches any program it is the start of (kube-controller is kube-controller-manager).
func Recognise(exe, comm, cmdline string) string {
	fields := strings.Fields(cmdline)
	var arg0, arg1 string
	if len(fields) > 0 {
		arg0 = path.Base(fields[0])
	}
	if len(fields) > 1 {
		arg1 = fields[1]
	}
	for _, name := range []string{path.Base(strings.TrimSuffix(exe, " (deleted)")), arg0} {
		if multiCall[name] && byProgram[arg1] != "" {
			return byProgram[arg1]
		}
		if c := byProgram[name]; c != "" {
			return c
		}
	}
	for _, e := range registry {
		if e.Dir != "" && strings.Contains(exe, "/"+e.Dir+"/") {
			return e.Name
		}
	}
	if len(comm) == commLen {
		for _, e := range registry {
			for _, p := range e.Programs {
				if strings.HasPrefix(p, comm) {
					return e.Name
				}
			}
		}
	}
	return byProgram[comm]
}
