package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/tare-dev/tare/internal/lab"
)

// FiguresDoc is where every figure tare prints is defined: --help texts point readers there (the HTML
// reports use htmlreport.DocsBase, which links into the same page).
const FiguresDoc = "docs/figures.md"

// WriteCLIDocs writes the CLI reference, one Markdown page per command, into dir with cobra's doc
// generator. The pages are deterministic: no generation date, and defaults that depend on the machine
// that generates them (a host name, a home directory, a CPU count) are replaced by what they stand for,
// so the committed pages (docs/cli, `make docs`) can be compared with freshly generated ones.
func WriteCLIDocs(dir string) error {
	root := newRoot(streams{})
	root.DisableAutoGenTag = true
	normalizeDefaults(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		return fmt.Errorf("generating the CLI reference: %w", err)
	}
	return nil
}

// machineValues are the values of this machine a flag's default may hold, each with the placeholder the
// generated pages show instead.
func machineValues() [][2]string {
	var v [][2]string
	if h, err := os.Hostname(); err == nil && h != "" {
		v = append(v, [2]string{h, "$HOSTNAME"})
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" && h != "/" {
		v = append(v, [2]string{h, "$HOME"})
	}
	if d, err := os.Getwd(); err == nil && d != "/" {
		v = append(v, [2]string{d, "$PWD"})
	}
	v = append(v, [2]string{os.TempDir(), "$TMPDIR"})
	return v
}

// normalizeDefaults replaces machine-specific flag defaults in every command's flags by placeholders.
func normalizeDefaults(root *cobra.Command) {
	vals := machineValues()
	labDir := lab.DefaultDir()
	fix := func(f *pflag.Flag) {
		if f.DefValue == labDir && labDir != "" {
			// The lab's directory depends on the user and the environment (lab.DefaultDir).
			f.DefValue = "$TARE_LAB_DIR, else /var/lib/tare/lab as root, else $XDG_STATE_HOME or ~/.local/state + /tare/lab"
			return
		}
		for _, kv := range vals {
			// A path default is replaced where it begins (so /tmp does not touch /var/tmp); a host
			// name only where it is the whole default.
			if d := f.DefValue; d == kv[0] || strings.HasPrefix(d, kv[0]+"/") {
				f.DefValue = kv[1] + strings.TrimPrefix(d, kv[0])
			}
		}
	}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		c.Flags().VisitAll(fix)
		c.PersistentFlags().VisitAll(fix)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// CLIDocsDir is where the committed CLI reference lives, relative to the repository's root.
var CLIDocsDir = filepath.Join("docs", "cli")

// figuresHelp ends the --help of every verb that prints figures: where they are defined.
const figuresHelp = "\n\nfigures: " + FiguresDoc + " defines every figure printed here (what it counts, its kernel source, unit and resolution)."
