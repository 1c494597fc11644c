package redact

import (
	"regexp"
	"strings"
)

// Mask replaces every secret value.
const Mask = "***"

// sensitiveName matches flag or variable names whose value is a credential.
var sensitiveName = regexp.MustCompile(`(?i)(token|passw(or)?d|passwd|pwd|secret|credential|api[-_]?key|access[-_]?key|private[-_]?key|auth[-_]?key|signing[-_]?key|bearer|cookie|session[-_]?id|^key$)`)

// pathLike flags name a file that holds a secret, not the secret itself; showing the path is useful and safe.
var pathLike = regexp.MustCompile(`(?i)(file|path|dir|directory|mode|ttl|duration|algorithm|type|name)$`)

// bearer matches "Bearer <credential>" and "Basic <credential>" in headers.
var bearer = regexp.MustCompile(`(?i)\b(bearer|basic)(\s+|%20)([A-Za-z0-9\-._~+/]+=*)`)

// quotedPair matches "name": "value" and 'name'='value' pairs, as in JSON or YAML passed on a command line.
var quotedPair = regexp.MustCompile(`(["']?)([A-Za-z0-9_.\-]+)(["']?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;&}]+)`)

// queryParam matches name=value in a URL's query string (?token=… or &password=…).
var queryParam = regexp.MustCompile(`([?&])([^=&\s?#]+)=([^&\s#]*)`)

// userinfo matches the password in scheme://user:password@host.
var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]*):([^@\s/]*)@`)

// Sensitive reports whether a flag or variable name carries a credential as its value.
func Sensitive(name string) bool {
	name = strings.TrimLeft(name, "-")
	return sensitiveName.MatchString(name) && !pathLike.MatchString(name)
}

// Args returns a copy of argv with secret values masked. It understands --flag=value, --flag value,
// NAME=value words, bearer/basic credentials, passwords in URLs and the -p passwords of mysql-style
// clients and sshpass.
func Args(argv []string) []string {
	out := make([]string, len(argv))
	maskNext := false
	clients := clientPasswords(argv)
	for i, a := range argv {
		if clients[i] != a {
			out[i] = clients[i]
			maskNext = false
			continue
		}
		if maskNext && !strings.HasPrefix(a, "-") {
			out[i] = Mask
			maskNext = false
			continue
		}
		maskNext = false
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			name, _, hasValue := strings.Cut(a, "=")
			if Sensitive(name) {
				if hasValue {
					out[i] = name + "=" + Mask
				} else {
					out[i] = a
					maskNext = true
				}
				continue
			}
			if hasValue {
				out[i] = name + "=" + Text(a[len(name)+1:])
				continue
			}
		}
		out[i] = Text(a)
	}
	return out
}

// Text masks secrets in free text such as a log line or a joined command line.
func Text(s string) string {
	if !strings.ContainsAny(s, ":=@-") && !mayHoldPair(s) {
		return s // nothing any rule looks for: no memo needed
	}
	return textMemo.do(s, func() string { return text(s) })
}

func text(s string) string {
	if strings.Contains(s, "-p") {
		s = strings.Join(clientPasswords(strings.Split(s, " ")), " ")
	}
	if !mayHoldPair(s) {
		return flagPairs(s)
	}
	return flagPairs(pairs(s))
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
	s = quotedPair.ReplaceAllStringFunc(s, func(m string) string {
		g := quotedPair.FindStringSubmatch(m)
		if !Sensitive(g[2]) {
			return m
		}
		val := Mask
		if q := g[4][0]; q == '"' || q == '\'' {
			val = string(q) + Mask + string(q)
		}
		return g[1] + g[2] + g[3] + val
	})
	return s
}

// flagPairs masks "--password value" pairs inside a joined command line.
func flagPairs(s string) string {
	if !strings.Contains(s, "-") {
		return s
	}
	fields := strings.Split(s, " ")
	for i := 0; i+1 < len(fields); i++ {
		f := fields[i]
		if strings.HasPrefix(f, "-") && !strings.Contains(f, "=") && Sensitive(f) && !strings.HasPrefix(fields[i+1], "-") && fields[i+1] != "" {
			fields[i+1] = Mask
		}
	}
	return strings.Join(fields, " ")
}

// Join redacts argv and joins it with spaces, the form tare shows and stores.
func Join(argv []string) string {
	return joinMemo.do(strings.Join(argv, "\x00"), func() string { return strings.Join(Args(argv), " ") })
}
