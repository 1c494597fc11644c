package cli

import (
	"os"
	"strings"
	"testing"

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
	for _, cmd := range root.Commands() {
		if cmd.Hidden || cmd.Name() == "help" || cmd.Name() == "completion" {
			continue
		}
		if !strings.Contains(readme, "### `tare "+cmd.Name()) {
			t.Errorf("verb %s has no usage section in the README", cmd.Name())
		}
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && f.Name != "help" && !strings.Contains(readme, "`--"+f.Name+"`") && !strings.Contains(readme, "--"+f.Name+" ") {
				t.Errorf("flag --%s of %s is not in the README", f.Name, cmd.Name())
			}
		})
	}
}
