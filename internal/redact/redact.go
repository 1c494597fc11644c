package redact

import (
	"regexp"
	"strings"
)

// Mask replaces every secret value.
const Mask = "***"

// bearer matches "Bearer <credential>" and "Basic <credential>" in headers. The credential is token68
// (base64 and =), but is taken up to white space, a quote or a separator: masking only its token68 part
// could leave the rest of the word (after "Bearer NAME=" the value of a pair whose name it hid).
var bearer = regexp.MustCompile(`(?i)\b(bearer|basic)(\s+|%20)([^\s"',;&]+)`)

// pairName matches the name of a "name": "value" or 'name'='value' pair (JSON or YAML passed on a command
// line, NAME=value) and what parts it from its value; pairValue matches the value that follows.
var (
	pairName  = regexp.MustCompile(`["']?([A-Za-z0-9_.\-]+)["']?\s*[:=]\s*`)
	pairValue = regexp.MustCompile(`^(?:"[^"]*"|'[^']*'|[^\s,;&}]+)`)
)

// queryParam matches name=value in a URL's query string (?token=… or &password=…).
var queryParam = regexp.MustCompile(`([?&])([^=&\s?#]+)=([^&\s#]*)`)

// userinfo matches the password in scheme://user:password@host.
var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]*):([^@\s/]*)@`)

// Args returns a copy of argv with secret values masked. It understands --flag=value and --flag value for
// flags whose name says they carry a secret (the value is masked even when it starts with '-', unless the
// name says the flag takes none, as --password-stdin does), NAME=value words and name: value pairs,
// bearer/basic credentials, JSON Web Tokens anywhere, passwords in URLs, and the password flags of clients
// that do not name them so: mysql's and sshpass's -p, redis-cli's -a, curl's -u user:password (the user
// stays), and -p after a login subcommand of docker, podman, helm and other registry clients.
func Args(argv []string) []string {
	out := make([]string, len(argv))
	clients := clientPasswords(argv, nil)
	rule := keepNext
	for i, a := range argv {
		if clients[i] != a {
			out[i] = clients[i]
			rule = keepNext
			continue
		}
		if rule.masks(a) {
			out[i] = Mask
			rule = flagRule(a) // a sensitive flag taken as the value of the one before may still take one
			continue
		}
		rule = keepNext
		if name, value, hasValue := strings.Cut(a, "="); isFlag(name) {
			if Sensitive(name) {
				if hasValue {
					out[i] = name + "=" + Mask
				} else {
					out[i] = a
					rule = valueRule(name)
				}
				continue
			}
			if hasValue {
				out[i] = name + "=" + Text(value)
				continue
			}
		}
		out[i] = Text(a)
	}
	return out
}

// Text masks secrets in free text such as a log line, a shell script or a joined command line, with the
// rules of Args. In free text white space parts words (a password with a space in it is seen only by Args,
// in its own argv word), a new line ends a client's arguments as ; does, and quoted words are unquoted to
// be classified (["app" "--password" "SECRET"]). Text is safe for concurrent use.
func Text(s string) string {
	if !strings.ContainsAny(s, ":=@-") && !mayHoldPair(s) && !strings.Contains(s, "eyJ") {
		return s // nothing any rule looks for: no memo needed
	}
	return textMemo.do(s, func() string { return text(s) })
}

// text applies the rules in turn: the clients' flags first, before a pair rule can mask a client's name (in
// "password: mysql -pSECRET"), then tokens, pairs and flags. Each rule is skipped when s cannot hold what it
// looks for.
func text(s string) string {
	if strings.Contains(s, "-") {
		s = clientText(s)
	}
	s = maskJWT(s)
	if mayHoldPair(s) {
		s = pairs(s)
	}
	return flagPairs(s)
}

// clientText masks the clients' passwords in free text. Text without a client's name is not cut up.
func clientText(s string) string {
	if !anyWord(s, func(w string) bool { return clientNamed(w) != nil }) {
		return s
	}
	return clientWords(s)
}

// clientWords is clientText without the shortcut.
func clientWords(s string) string {
	l := splitLine(s)
	words := clientPasswords(l.words, l.seps)
	for i := range words {
		if words[i] != l.words[i] {
			l.words = words
			return l.String()
		}
	}
	return s
}

// mayHoldPair reports whether s may hold what the patterns below look for: each needs a ':', '=' or '@', or
// the word bearer or basic. Most words of a command line have none, and skip the regular expressions.
func mayHoldPair(s string) bool {
	if strings.ContainsAny(s, ":=@") {
		return true
	}
	for i := range len(s) {
		if s[i] >= 0x80 { // the patterns fold case beyond ASCII (ſ is an s): leave such text to them
			return true
		}
	}
	for i := range len(s) {
		if c := s[i] | 0x20; c == 'b' && i+5 <= len(s) && (strings.EqualFold(s[i:i+5], "basic") || i+6 <= len(s) && strings.EqualFold(s[i:i+6], "bearer")) {
			return true
		}
	}
	return false
}

// pairs masks credentials in URLs, query strings, bearer/basic headers and name=value or name: value pairs.
func pairs(s string) string {
	s = userinfo.ReplaceAllString(s, "$1:"+Mask+"@")
	s = queryParam.ReplaceAllStringFunc(s, func(m string) string {
		g := queryParam.FindStringSubmatch(m)
		if !Sensitive(g[2]) {
			return m
		}
		return g[1] + g[2] + "=" + Mask
	})
	s = bearer.ReplaceAllString(s, "$1$2"+Mask)
	return quotedPairs(s)
}

// quotedPairs masks the values of the pairs in s whose name is sensitive. The value of any other pair may
// hold pairs of its own (--env=API_KEY=SECRET, x: {"password": "SECRET"}), so the search goes on inside it
// rather than after it. Each step moves past a name, so the pass is linear in s even for a=a=a=… (a
// command line may be 1 MiB, and is too long for the memo).
func quotedPairs(s string) string {
	var b strings.Builder
	done := 0 // s[:done] is written to b
	for pos := 0; pos < len(s); {
		m := pairName.FindStringSubmatchIndex(s[pos:])
		if m == nil {
			break
		}
		name, rest := s[pos+m[2]:pos+m[3]], pos+m[1]
		pos = rest
		if !Sensitive(name) {
			continue
		}
		v := pairValue.FindString(s[rest:])
		if v == "" {
			continue
		}
		val := Mask
		if q := v[0]; q == '"' || q == '\'' {
			val = string(q) + Mask + string(q)
		}
		b.WriteString(s[done:rest])
		b.WriteString(val)
		done, pos = rest+len(v), rest+len(v)
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// flagPairs masks the values of sensitive flags inside free text (--password value), as Args does. Text
// without such a flag is not cut up.
func flagPairs(s string) string {
	if !strings.Contains(s, "-") || !anyWord(s, func(w string) bool {
		_, core, _ := unquote(w)
		return flagRule(core) != keepNext
	}) {
		return s
	}
	return flagWords(s)
}

// flagWords is flagPairs without the shortcut.
func flagWords(s string) string {
	l := splitLine(s)
	rule, changed := keepNext, false
	for i, w := range l.words {
		// Words may be quoted, as in a logged argv (["app" "--password" "SECRET"]): the quotes stay.
		lead, core, trail := unquote(w)
		if core != "" && rule.masks(core) {
			l.words[i], changed = lead+Mask+trail, true
		}
		rule = flagRule(core)
	}
	if !changed {
		return s
	}
	return l.String()
}

// Join redacts argv and joins it with spaces, the form tare shows and stores.
func Join(argv []string) string {
	return joinMemo.do(strings.Join(argv, "\x00"), func() string { return strings.Join(Args(argv), " ") })
}
