package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsCommandsParse: every tare command line in the README's and the guides' fenced blocks names a verb
// tare has, with flags that verb takes and values they parse (a duration is a duration, a count a number)
// and the arguments it accepts,
// as tare's own command tree reads them. What a verb checks when it runs (a path's name, a lab) is left to
// the verbs' tests. A renamed flag or verb fails here, not in a reader's shell.
func TestDocsCommandsParse(t *testing.T) {
	t.Parallel()
	files := []string{filepath.Join("..", "..", "README.md")}
	guides, err := filepath.Glob(filepath.Join("..", "..", "docs", "guides", "*.md"))
	if err != nil || len(guides) == 0 {
		t.Fatalf("no guides under docs/guides: %v", err)
	}
	files = append(files, guides...)
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range docCommands(string(b)) {
			seen++
			root := newRoot(streams{})
			cmd, rest, err := root.Find(c.args)
			if err != nil || cmd == root {
				t.Errorf("%s:%d: %q: no such verb (%v)", filepath.Base(f), c.line, strings.Join(c.args, " "), err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s:%d: %q: %v", filepath.Base(f), c.line, strings.Join(c.args, " "), err)
			} else if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
				t.Errorf("%s:%d: %q: arguments: %v", filepath.Base(f), c.line, strings.Join(c.args, " "), err)
			}
		}
	}
	t.Logf("%d tare command lines checked", seen)
	if seen < 20 {
		t.Errorf("found %d tare command lines in the README and guides: the reader of fenced blocks misses them", seen)
	}
}

// docCommand is one tare command in a document: its arguments after "tare", and its line.
type docCommand struct {
	args []string
	line int
}

// docCommands finds the tare commands of a Markdown document's fenced blocks: each shell command (split
// at &&, ;, and |) whose program is tare (or bin/tare, after sudo or a "$ " prompt). Comments and lines
// that continue with a backslash are joined as a shell would.
func docCommands(md string) []docCommand {
	var out []docCommand
	in := false
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "```") {
			in = !in
			continue
		}
		if !in {
			continue
		}
		start := i + 1
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			l = strings.TrimSuffix(l, "\\") + " " + strings.TrimSpace(lines[i])
		}
		l = strings.TrimPrefix(l, "$ ")
		if h := strings.Index(l, " #"); h >= 0 {
			l = l[:h]
		}
		for _, part := range splitShell(l) {
			words := shellWords(part)
			for len(words) > 0 && (words[0] == "sudo" || strings.Contains(words[0], "=")) {
				words = words[1:] // sudo, and VAR=value before the program
			}
			if len(words) > 0 && (words[0] == "tare" || strings.HasSuffix(words[0], "/tare")) {
				out = append(out, docCommand{args: words[1:], line: start})
			}
		}
	}
	return out
}

// splitShell splits a command line at the shell's separators of commands: &&, ||, ;, and |.
func splitShell(l string) []string {
	for _, sep := range []string{"&&", "||", ";"} {
		l = strings.ReplaceAll(l, sep, "|")
	}
	return strings.Split(l, "|")
}

// shellWords splits a command into words as a shell would for the simple lines the docs hold: at blanks,
// with single and double quotes grouping (and removed).
func shellWords(s string) []string {
	var out []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, w.String())
	}
	return out
}
