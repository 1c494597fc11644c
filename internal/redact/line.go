package redact

import "strings"

// A line is free text (a shell script, a log line, a joined command line) cut into words at runs of white
// space. It keeps the white space, so that it joins back to the same text with only the masked words
// changed, and a rule can tell a new line (a new shell command) from a space.
type line struct {
	words []string
	seps  []string // seps[i] is the white space after words[i]; words[0] is "" when the text starts with some
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// splitLine cuts s into words and the white space between them.
func splitLine(s string) line {
	var l line
	start := 0
	for i := 0; i < len(s); {
		if !isSpace(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		l.words = append(l.words, s[start:i])
		l.seps = append(l.seps, s[i:j])
		start, i = j, j
	}
	l.words = append(l.words, s[start:])
	return l
}

// anyWord reports whether f holds for a word of s, without cutting s up: most text holds nothing a word
// rule looks for, and need not be split.
func anyWord(s string, f func(w string) bool) bool {
	for start, i := 0, 0; i <= len(s); i++ {
		if i < len(s) && !isSpace(s[i]) {
			continue
		}
		if i > start && f(s[start:i]) {
			return true
		}
		start = i + 1
	}
	return false
}

// String joins the words back with the white space they had.
func (l line) String() string {
	var b strings.Builder
	for i, w := range l.words {
		b.WriteString(w)
		if i < len(l.seps) {
			b.WriteString(l.seps[i])
		}
	}
	return b.String()
}

// quotes are what may surround a word in text: quotes, and the brackets and commas of a printed list.
const quotes = `"'[](),`

// unquote cuts w into the quotes before it, the word, and the quotes after it.
func unquote(w string) (lead, core, trail string) {
	core = strings.TrimLeft(w, quotes)
	lead = w[:len(w)-len(core)]
	core = strings.TrimRight(core, quotes)
	return lead, core, w[len(lead)+len(core):]
}
