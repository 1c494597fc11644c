package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestREADMEAgreesWithHelp: every flag of every verb is documented in the README's usage section, and every
// verb has a section there.
func TestREADMEAgreesWithHelp(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	root := newRoot(streams{})
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && !strings.Contains(readme, "--"+f.Name) && (f.Shorthand == "" || !strings.Contains(readme, "-"+f.Shorthand+" ")) {
			t.Errorf("global flag --%s is not in the README", f.Name)
		}
	})
	// Every verb and sub-verb (lab up, datapath net, cluster measure, ...), to any depth.
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			path := strings.TrimPrefix(sub.CommandPath(), root.Name()+" ")
			if cmd == root && !strings.Contains(readme, "### `tare "+sub.Name()) {
				t.Errorf("verb %s has no usage section in the README", sub.Name())
			}
			if cmd != root && !strings.Contains(readme, "tare "+path) {
				t.Errorf("%s is not in the README", path)
			}
			sub.LocalFlags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden && f.Name != "help" && !strings.Contains(readme, "`--"+f.Name+"`") && !strings.Contains(readme, "--"+f.Name+" ") &&
					!strings.Contains(readme, "--"+f.Name+"]") && !strings.Contains(readme, "--"+f.Name+"`") {
					t.Errorf("flag --%s of %s is not in the README", f.Name, path)
				}
			})
			walk(sub)
		}
	}
	walk(root)
}
