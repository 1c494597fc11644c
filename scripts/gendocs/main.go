// Command gendocs writes tare's CLI reference (docs/cli, one page per command) with cobra's doc
// generator: `make docs` runs it. TestCLIDocsFresh fails when the committed pages differ from its output.
package main

import (
	"fmt"
	"os"

	"github.com/tare-dev/tare/internal/cli"
)

func main() {
	dir := cli.CLIDocsDir
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := cli.WriteCLIDocs(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
