package lab

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/tare-dev/tare/internal/component"
)

// CheckSets verifies that every flag a tuning sets exists on its component, by asking the installed
// binary for its --help: a misspelt flag is caught before a lab is started with it. Binaries that are
// not installed are reported by findBinaries at `up`, not here.
func CheckSets(ctx context.Context, binDir string, sets []Tuning) error {
	b, _ := findBinaries(binDir, component.Names(component.Entry.InLab)) // the paths, even of what is missing
	helps := map[string]string{}
	var bad []string
	for _, t := range sets {
		bin := b.path(t.Component)
		if bin == "" {
			continue
		}
		help, ok := helps[t.Component]
		if !ok {
			hctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			out, _ := exec.CommandContext(hctx, bin, "--help").CombinedOutput() // etcd exits 0, others 0 or 2
			cancel()
			help = string(out)
			helps[t.Component] = help
		}
		if help == "" {
			continue
		}
		if !hasFlag(help, t.Flag) {
			bad = append(bad, fmt.Sprintf("%s has no flag --%s", t.Component, t.Flag))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s (see the component's --help)", strings.Join(bad, "; "))
	}
	return nil
}

// hasFlag finds --flag in a help text, as "--flag", "--flag=…" or "--flag <type>" at a word boundary.
func hasFlag(help, flag string) bool {
	return regexp.MustCompile(`(^|[\s,])--` + regexp.QuoteMeta(flag) + `([\s=\[]|$)`).MatchString(help)
}
