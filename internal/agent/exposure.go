package agent

import (
	"path"
	"strings"

	"github.com/tare-dev/tare/internal/summary"
)

// withoutCmdlines replaces every command line of sum with its program's name, as /summary serves it unless
// the agent was started with --serve-cmdlines: a command line may hold what redaction does not know to be a
// secret (a customer's name, a path, an internal host), and the program's name and group are what the cluster
// view and most readers need. Short-lived children keep one row per command line, now named by program.
func withoutCmdlines(sum *summary.Summary) {
	for i := range sum.Processes {
		p := &sum.Processes[i]
		p.Cmdline = program(p.Cmdline, p.Comm)
	}
	for i := range sum.Children {
		c := &sum.Children[i]
		c.Cmdline = program(c.Cmdline, "")
		c.ParentCmdline = program(c.ParentCmdline, "")
	}
}

// program is the base name of a command line's first word, else fallback; a kernel thread's bracketed name
// ([kworker/0:1]) is kept whole.
func program(cmdline, fallback string) string {
	cmdline = strings.TrimSpace(cmdline)
	if strings.HasPrefix(cmdline, "[") {
		return cmdline
	}
	first, _, _ := strings.Cut(cmdline, " ")
	if first == "" {
		return fallback
	}
	return path.Base(first)
}
