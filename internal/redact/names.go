package redact

import (
	"bytes"
	"regexp"
	"strings"
)

// sensitiveName matches flag or variable names whose value is a credential. pass alone counts only as a
// whole name or its last part (--pass, REDIS_PASS, --proxy-pass, openssl's -passin), not inside bypass or
// compass; requirepass and masterauth are redis-server's passwords, *creds the user:password of skopeo,
// podman, buildah and crictl (--creds, --src-creds).
var sensitiveName = regexp.MustCompile(`(?i)(token|passw(or)?d|passwd|pwd|passphrase|(^|[-_.])pass(in|out)?$|requirepass|masterauth|creds$|secret|credential|api[-_]?key|access[-_]?key|private[-_]?key|auth[-_]?key|signing[-_]?key|bearer|cookie|session[-_]?id|^key$)`)

// sensitiveStems are substrings one of which every name sensitiveName matches holds, once lower-cased
// (ASCII): most flag names hold none and skip the regular expression, which folds case slowly.
var sensitiveStems = [][]byte{[]byte("token"), []byte("pass"), []byte("pwd"), []byte("masterauth"), []byte("creds"),
	[]byte("secret"), []byte("credential"), []byte("key"), []byte("bearer"), []byte("cookie"), []byte("session")}

// pathLike flags name a file that holds a secret, not the secret itself; showing the path is useful and safe.
var pathLike = regexp.MustCompile(`(?i)(file|path|dir|directory|mode|ttl|duration|algorithm|type|name)$`)

// Sensitive reports whether a flag or variable name carries a credential as its value.
func Sensitive(name string) bool {
	name = strings.TrimLeft(name, "-")
	return mayBeSensitive(name) && sensitiveName.MatchString(name) && !pathLike.MatchString(name)
}

// mayBeSensitive reports whether name holds one of sensitiveStems. A name with a byte beyond ASCII may:
// the expression folds case beyond it (K, the Kelvin sign, is a k).
func mayBeSensitive(name string) bool {
	var buf [64]byte
	if len(name) > len(buf) {
		return true
	}
	for i := range len(name) {
		c := name[i]
		if c >= 0x80 {
			return true
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	for _, s := range sensitiveStems {
		if bytes.Contains(buf[:len(name)], s) {
			return true
		}
	}
	return false
}

// A nextWord says what a sensitive flag written without "=" does to the word after it.
type nextWord uint8

const (
	keepNext     nextWord = iota // the flag takes no value: the next word is not its
	maskWord                     // mask the next word unless it starts with '-'
	maskAnything                 // mask the next word whatever it is
)

// noValue are sensitive flag names that cannot take a value by what they say: the secret comes from
// standard input or a prompt (docker login --password-stdin, --ask-vault-pass), or is refused (--no-password).
var noValue = regexp.MustCompile(`(?i)(stdin|prompt)$|^(ask|no)[-_]`)

// switchLike are sensitive flag names that are probably switches (--enable-bootstrap-token-auth,
// --use-service-account-credentials): the word after them is a value only if it is not a flag.
var switchLike = regexp.MustCompile(`(?i)^(enable|disable|use|skip)[-_]`)

// valueRule returns what the sensitive flag name (dashes included or not, no "=") does to the next word.
//
// A flag that takes a value takes the next word whatever it is: Go's flag package, pflag and getopt all read
// --password -X as the value -X. Whether the flag takes one is not written on the command line, so the
// next word is masked even when it starts with '-' (it may be a flag, as after psql's switch --password):
// hiding a flag's name costs a reader little, a secret beginning with '-' shown in every table and
// recording costs much more. Only names that say they take none keep the next word, and names that look
// like switches keep it when it is a flag.
func valueRule(name string) nextWord {
	name = strings.TrimLeft(name, "-")
	switch {
	case noValue.MatchString(name):
		return keepNext
	case switchLike.MatchString(name):
		return maskWord
	default:
		return maskAnything
	}
}

// masks reports whether rule hides word w.
func (rule nextWord) masks(w string) bool {
	return rule == maskAnything || rule == maskWord && !strings.HasPrefix(w, "-")
}

// flagRule returns what word w, when it is a sensitive flag without "=", does to the word after it, and
// keepNext for any other word.
func flagRule(w string) nextWord {
	if !isFlag(w) || strings.Contains(w, "=") || !Sensitive(w) {
		return keepNext
	}
	return valueRule(w)
}

// isFlag reports whether name (a word up to any "=") is a flag: a dash and a name. A word with white space
// inside it is a shell's script or a line of text even when it starts with a dash, and is searched as
// text; white space at its end (the \r of a script with CRLF line ends) does not make a flag text.
func isFlag(name string) bool {
	if len(name) < 2 || name[0] != '-' {
		return false
	}
	end := len(name)
	for end > 0 && isSpace(name[end-1]) {
		end--
	}
	for i := range end {
		if isSpace(name[i]) {
			return false
		}
	}
	return true
}
