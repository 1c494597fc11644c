package redact

import (
	"strings"
	"testing"
)

// A shape is one way a command line carries a secret; each variant plants secret s in an argv.
type shape struct {
	name     string
	variants []func(s string) []string
}

// cannotHold lists, by shape, bytes of secretByte that a secret of that shape cannot hold: a JWT's
// signature is base64.
var cannotHold = map[string]string{"JSON Web Token": "~"}

// jwtOf returns a JSON Web Token whose signature is s.
func jwtOf(s string) string {
	return "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0YXJlIn0." + s
}

// shapes are the shapes redaction knows: the 22 it has long masked, the five of issue 35 (redis-cli -a, curl
// -u user:password, a login's -p, a bare JSON Web Token, a value beginning with '-'), and the names added
// with them (redis-server's, gpg's, openssl's, the registry clients' creds).
var shapes = []shape{
	{"flag=value", variants(
		func(s string) []string { return []string{"app", "--token=" + s} },
		func(s string) []string { return []string{"app", "--api-key=" + s} },
		func(s string) []string { return []string{"app", "-password=" + s} },
	)},
	{"flag value", variants(
		func(s string) []string { return []string{"app", "--password", s, "--v=2"} },
		func(s string) []string { return []string{"kubeadm", "join", "--token", s} },
		func(s string) []string { return []string{"app", "--client-secret", s} },
	)},
	{"single-dash flag value", variants(
		func(s string) []string { return []string{"app", "-password", s} },
		func(s string) []string { return []string{"app", "-token", s} },
	)},
	{"environment word", variants(
		func(s string) []string { return []string{"env", "DB_PASSWORD=" + s, "app"} },
		func(s string) []string { return []string{"AWS_SECRET_ACCESS_KEY=" + s} },
		func(s string) []string { return []string{"GITHUB_TOKEN=" + s, "make"} },
	)},
	{"docker -e", variants(
		func(s string) []string { return []string{"docker", "run", "-e", "MYSQL_ROOT_PASSWORD=" + s, "mysql"} },
	)},
	{"assignment in a flag's value", variants(
		func(s string) []string { return []string{"x", "--env=API_KEY=" + s} },
	)},
	{"kubectl --from-literal", variants(
		func(s string) []string {
			return []string{"kubectl", "create", "secret", "generic", "db", "--from-literal=password=" + s}
		},
	)},
	{"helm --set", variants(
		func(s string) []string { return []string{"helm", "install", "r", "--set", "auth.password=" + s} },
		func(s string) []string { return []string{"helm", "install", "r", "--set=db.password=" + s} },
	)},
	{"bearer header", variants(
		func(s string) []string { return []string{"curl", "-H", "Authorization: Bearer " + s} },
		func(s string) []string { return []string{"curl", "-H", "authorization: bearer " + s, "https://h/"} },
	)},
	{"basic header", variants(
		func(s string) []string { return []string{"curl", "-H", "Authorization: Basic " + s} },
	)},
	{"bearer in a URL", variants(
		func(s string) []string { return []string{"wget", "https://h/x?auth=Bearer%20" + s} },
	)},
	{"URL userinfo", variants(
		func(s string) []string { return []string{"psql", "postgres://admin:" + s + "@db:5432/x"} },
		func(s string) []string { return []string{"redis-cli", "-u", "redis://:" + s + "@redis:6379/0"} },
		func(s string) []string { return []string{"git", "clone", "https://u:" + s + "@h/r.git"} },
	)},
	{"query parameter", variants(
		func(s string) []string { return []string{"wget", "https://h/x?a=1&access_token=" + s + "&b=2"} },
		func(s string) []string { return []string{"curl", "http://127.0.0.1:8080/debug?token=" + s} },
	)},
	{"JSON pair", variants(
		func(s string) []string { return []string{"agent", "--env", `{"api_token": "` + s + `"}`} },
		func(s string) []string { return []string{"agent", `{"AWS_SECRET_ACCESS_KEY":"` + s + `","x":1}`} },
	)},
	{"single-quoted pair", variants(
		func(s string) []string { return []string{"x", `'password'='` + s + `'`} },
	)},
	{"YAML pair", variants(
		func(s string) []string { return []string{"x", "password: " + s} },
	)},
	{"cookie header", variants(
		func(s string) []string { return []string{"curl", "-H", "Cookie: sid=" + s} },
	)},
	{"mysql -pSECRET", variants(
		func(s string) []string { return []string{"/usr/bin/mysql", "-uroot", "-p" + s, "-h", "db"} },
		func(s string) []string { return []string{"mysqldump", "-p" + s, "shop"} },
		func(s string) []string { return []string{"mariadb", "-p" + s} },
	)},
	{"sshpass -pSECRET", variants(
		func(s string) []string { return []string{"sshpass", "-p" + s, "ssh", "host"} },
	)},
	{"sshpass -p SECRET", variants(
		func(s string) []string { return []string{"sshpass", "-p", s, "ssh", "-p", "22", "host"} },
	)},
	{"client in a shell word", variants(
		func(s string) []string { return []string{"sh", "-c", "mysqldump -uroot -p" + s + " shop > /b.sql"} },
		func(s string) []string { return []string{"bash", "-c", "set -e\nmysql -p" + s + "\nssh -p2222 h"} },
	)},
	{"quoted flag value in a shell word", variants(
		func(s string) []string { return []string{"sh", "-c", "app --password '" + s + "' --v=2"} },
	)},

	{"redis-cli -a", variants(
		func(s string) []string { return []string{"redis-cli", "-a", s} },
		func(s string) []string { return []string{"redis-cli", "-h", "db", "-p", "6379", "-a", s, "ping"} },
		func(s string) []string { return []string{"valkey-cli", "--no-auth-warning", "-a", s} },
		func(s string) []string { return []string{"redis-benchmark", "-a", s, "-q"} },
		func(s string) []string { return []string{"redis-cli", "--pass", s} },
	)},
	{"curl -u user:password", variants(
		func(s string) []string { return []string{"curl", "-u", "alice:" + s, "https://h/"} },
		func(s string) []string { return []string{"curl", "--user", "alice:" + s} },
		func(s string) []string { return []string{"curl", "-ualice:" + s} },
		func(s string) []string { return []string{"curl", "-sSfu", "alice:" + s} },
		func(s string) []string { return []string{"curl", "-sSualice:" + s} },
		func(s string) []string { return []string{"curl", "--proxy-user", "bob:" + s} },
		func(s string) []string { return []string{"curl", "-U", "bob:" + s, "-x", "proxy:3128"} },
		func(s string) []string { return []string{"wget", "--http-password", s} },
	)},
	{"login -p", variants(
		func(s string) []string {
			return []string{"docker", "login", "-u", "me", "-p", s, "registry.example.com"}
		},
		func(s string) []string { return []string{"docker", "login", "-p" + s} },
		func(s string) []string { return []string{"podman", "login", "--password", s, "quay.io"} },
		func(s string) []string { return []string{"nerdctl", "login", "-p", s} },
		func(s string) []string { return []string{"skopeo", "login", "-p=" + s, "r.io"} },
		func(s string) []string { return []string{"helm", "registry", "login", "r.io", "-u", "me", "-p", s} },
		func(s string) []string { return []string{"crane", "auth", "login", "r.io", "-u", "me", "-p", s} },
		func(s string) []string { return []string{"oc", "login", "-u", "dev", "-p", s} },
	)},
	{"JSON Web Token", variants(
		func(s string) []string { return []string{"webhook", jwtOf(s)} },
		func(s string) []string { return []string{"curl", "-H", "Authorization:" + jwtOf(s)} },
		func(s string) []string { return []string{"oidc", "--id-token-hint=" + jwtOf(s)} },
		func(s string) []string { return []string{"webhook", "--header", jwtOf(s)} },
		func(s string) []string { return []string{"open", "https://app/cb#id=" + jwtOf(s)} },
	)},
	{"value beginning with '-'", variants(
		func(s string) []string { return []string{"dbtool", "--password", "-" + s, "--verbose"} },
		func(s string) []string { return []string{"app", "--token", "-" + s} },
		func(s string) []string { return []string{"redis-cli", "-a", "-" + s} },
		func(s string) []string { return []string{"docker", "login", "-p", "-" + s} },
		func(s string) []string { return []string{"sshpass", "-p", "-" + s, "ssh", "h"} },
	)},

	{"redis-server passwords", variants(
		func(s string) []string { return []string{"redis-server", "--requirepass", s} },
		func(s string) []string { return []string{"redis-server", "--masterauth", s} },
	)},
	{"passphrases", variants(
		func(s string) []string { return []string{"gpg", "--batch", "--passphrase", s} },
		func(s string) []string { return []string{"openssl", "rsa", "-passin", "pass:" + s} },
	)},
	{"registry credentials", variants(
		func(s string) []string { return []string{"skopeo", "copy", "--src-creds", "me:" + s, "docker://a"} },
		func(s string) []string { return []string{"ctr", "images", "pull", "-u", "me:" + s, "r/i"} },
		func(s string) []string { return []string{"crictl", "pull", "--auth", s, "r/i"} },
	)},
}

func variants(v ...func(string) []string) []func(string) []string { return v }

// prefixes are what runs a command line: nothing, sudo, env, time, a shell (the command one word).
var prefixes = []struct {
	argv  []string
	shell bool // the rest of the command line is one word, a shell's script
}{
	{nil, false},
	{[]string{"sudo"}, false},
	{[]string{"sudo", "-u", "root"}, false},
	{[]string{"env", "LANG=C"}, false},
	{[]string{"/usr/bin/time", "-v"}, false},
	{[]string{"timeout", "30"}, false},
	{[]string{"nice", "-n", "5"}, false},
	{[]string{"sh", "-c"}, true},
	{[]string{"/bin/bash", "-lc"}, true},
}

// plant builds the command line of shape's variant with secret s, between the words before and after.
func plant(shape, variant, prefix int, s string, before, after []string) []string {
	sh := shapes[shape%len(shapes)]
	p := prefixes[prefix%len(prefixes)]
	words := append(append(append([]string{}, before...), sh.variants[variant%len(sh.variants)](s)...), after...)
	if p.shell {
		return append(append([]string{}, p.argv...), strings.Join(words, " "))
	}
	return append(append([]string{}, p.argv...), words...)
}

// leaks returns the outputs of redaction of argv that still hold s.
func leaks(argv []string, s string) []string {
	var out []string
	for _, o := range []string{Join(argv), strings.Join(Args(argv), " "), Text(strings.Join(argv, " "))} {
		if strings.Contains(o, s) {
			out = append(out, o)
		}
	}
	return out
}

// TestPlantedShapes: every variant of every shape hides its secret, alone and behind each prefix.
func TestPlantedShapes(t *testing.T) {
	t.Parallel()
	const secret = "S3cr3tValue9"
	for i, sh := range shapes {
		for v := range sh.variants {
			for p := range prefixes {
				argv := plant(i, v, p, secret, nil, []string{"--v=2"})
				if l := leaks(argv, secret); l != nil {
					t.Errorf("%s, variant %d: %q left the secret in %q", sh.name, v, argv, l)
				}
			}
		}
	}
}

// secretByte is what a planted secret is made of: what tokens and passwords hold (base64url, . ~ +), and
// nothing a rule splits on, so that a secret is one value.
func secretByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~+", c) >= 0
}

// fuzzWords cuts s into at most 3 words of printable ASCII.
func fuzzWords(s string) []string {
	var words []string
	for _, w := range strings.Fields(s) {
		for i := range len(w) {
			if w[i] < '!' || w[i] > '~' {
				return nil
			}
		}
		words = append(words, w)
	}
	if len(words) > 3 {
		words = words[:3]
	}
	return words
}

// FuzzArgsHidePlantedSecret plants a secret in one of the shapes, behind a prefix and between random words,
// and checks that neither Join, Args nor Text of the joined line shows it.
func FuzzArgsHidePlantedSecret(f *testing.F) {
	for i, sh := range shapes {
		for v := range sh.variants {
			f.Add(uint8(i), uint8(v), uint8(v+i), "S3cr3tValue9", "", "")
		}
	}
	// Words around the shape that a rule may take for part of a pair, a flag or a client's arguments.
	for i, w := range []string{"x:", "x= {", `"`, "'", "[", "(", "--token", "password:", "login", ";", "&&",
		"mysql", "sshpass -p", "-a", "curl -o", "eyJ", "https://u:", "?token=", "Bearer", "--password-stdin"} {
		f.Add(uint8(i), uint8(i/len(shapes)), uint8(i), "pa55word.X_~+", w, w)
	}
	f.Fuzz(func(t *testing.T, shape, variant, prefix uint8, secret, before, after string) {
		if len(secret) < 6 || secret[0] == '-' {
			return
		}
		sh := shapes[int(shape)%len(shapes)]
		for i := range len(secret) {
			if !secretByte(secret[i]) || strings.IndexByte(cannotHold[sh.name], secret[i]) >= 0 {
				return
			}
		}
		argv := plant(int(shape), int(variant), int(prefix), secret, fuzzWords(before), fuzzWords(after))
		if strings.Count(strings.Join(argv, " "), secret) != 1 {
			return // the secret is also a word of the text around it, which stays
		}
		if l := leaks(argv, secret); l != nil {
			t.Errorf("%s: %q left the secret %q in %q", sh.name, argv, secret, l)
		}
	})
}
