package redact

import (
	"path"
	"strings"
)

// A secretKind says which part of a password flag's value is the secret.
type secretKind uint8

const (
	wholeValue secretKind = iota // the value is the password (redis-cli -a SECRET)
	afterColon                   // the value is user:password (curl -u alice:SECRET): the user stays
)

// A passwordFlag is a flag of one program whose value is a secret though its name does not say so.
type passwordFlag struct {
	kind     secretKind
	separate bool // the value may be the next word (-a SECRET)
	attached bool // the value may be glued to a short flag (-pSECRET, -p=SECRET) or follow = (--user=a:b)
	login    bool // only after a login subcommand: docker login -p is a password, docker run -p a port
}

// A client is a program whose own flags carry passwords that the name rules do not see. Elsewhere the same
// flags mean other things (ssh -p 22, docker run -p 8080:80, kubectl port-forward -p POD, redis-cli -p6379,
// ls -a, sudo -u root, docker run -u 1000:1000), so they are masked only in the arguments of these programs.
type client struct {
	flags map[string]passwordFlag
	// bundled lists the short flags that take a value when the client lets switches be bundled before one
	// (curl -sSu alice:SECRET): a password flag's letter after only switches is still that flag.
	bundled string
	// once: the client's first password ends its arguments (what follows sshpass's is the command it runs).
	once bool
}

var (
	// mysql's -p takes the password glued (-pSECRET); a bare -p prompts, and the word after it is the
	// database, which stays.
	mysqlClient = &client{flags: map[string]passwordFlag{"-p": {attached: true}}, once: true}
	sshpass     = &client{flags: map[string]passwordFlag{"-p": {separate: true, attached: true}}, once: true}
	// redis-cli and its kin read the word after -a as the password (--pass, its long form, is sensitive by
	// name); -p is the port.
	redisClient = &client{flags: map[string]passwordFlag{"-a": {separate: true}}}
	// curl's -u/-U take user:password (a user alone makes curl prompt, and stays), as does --cert's
	// certificate:password; -b takes cookies (or a file of them: masked too, at little cost).
	curl = &client{flags: map[string]passwordFlag{
		"-u": userPass, "--user": userPass, "-U": userPass, "--proxy-user": userPass,
		"-E": userPass, "--cert": userPass, "--proxy-cert": userPass,
		"-b": {separate: true, attached: true},
	}, bundled: "AbcCdDeEFHKmoPQrtTuUwxXyYz"}
	// containerd's ctr takes the registry's user:password with -u/--user (ctr images pull -u a:b).
	ctr = &client{flags: map[string]passwordFlag{"-u": userPass, "--user": userPass}}
	// crictl's --auth is the registry's base64 user:password (its --creds is sensitive by name).
	crictl = &client{flags: map[string]passwordFlag{"--auth": {separate: true, attached: true}}}
	// A registry or cluster login's -p is its password (docker login -u me -p SECRET, helm registry login,
	// crane auth login, oc login, az login).
	loginClient = &client{flags: map[string]passwordFlag{"-p": {separate: true, attached: true, login: true}}}

	userPass = passwordFlag{kind: afterColon, separate: true, attached: true}
)

// clients are the programs with password flags of their own, by the base name of their executable.
var clients = map[string]*client{
	"mysql": mysqlClient, "mysqldump": mysqlClient, "mysqladmin": mysqlClient, "mysqlimport": mysqlClient,
	"mysqlshow": mysqlClient, "mysqlcheck": mysqlClient, "mysqlpump": mysqlClient, "mysqlsh": mysqlClient,
	"mysqlbinlog": mysqlClient, "mysqlslap": mysqlClient, "mariadb": mysqlClient, "mariadb-dump": mysqlClient,
	"mariadb-admin": mysqlClient, "mariadb-import": mysqlClient, "mariadb-check": mysqlClient,
	"mariadb-show": mysqlClient, "mariadb-slap": mysqlClient,
	"sshpass":   sshpass,
	"redis-cli": redisClient, "redis-benchmark": redisClient, "valkey-cli": redisClient,
	"valkey-benchmark": redisClient, "keydb-cli": redisClient, "keydb-benchmark": redisClient,
	"curl": curl, "ctr": ctr, "crictl": crictl,
	"docker": loginClient, "podman": loginClient, "buildah": loginClient, "skopeo": loginClient,
	"nerdctl": loginClient, "finch": loginClient, "helm": loginClient, "oras": loginClient,
	"crane": loginClient, "regctl": loginClient, "oc": loginClient, "az": loginClient,
}

// spelledPassword are -p words that name the flag rather than glue a value to it (mysql -password VALUE):
// the flag rule masks the next word instead.
var spelledPassword = map[string]bool{"password": true, "passwd": true, "pass": true}

// clientPasswords returns words with the passwords given to a client masked: after the client's name (so
// through sudo, env or time too), its password flags' values. A shell separator (; | && ||, and in free
// text a new line) ends a client's arguments. seps, when not nil, is the white space between words (seps[i]
// follows words[i]), as splitLine gives. words is not changed.
func clientPasswords(words, seps []string) []string {
	out := make([]string, len(words))
	copy(out, words)
	var c *client
	login := false
	for i := 0; i < len(out); i++ {
		w := out[i]
		if i > 0 && seps != nil && strings.Contains(seps[i-1], "\n") {
			c = nil
		}
		switch {
		case w == ";" || w == "|" || w == "&&" || w == "||":
			c = nil
		case c != nil && w == "login":
			login = true
		case c != nil:
			f, at, ok := c.match(w, login)
			if !ok {
				break
			}
			if at >= 0 {
				out[i] = w[:at] + f.kind.hide(w[at:])
			} else if i+1 < len(out) {
				i++
				out[i] = f.kind.hide(out[i])
			}
			if c.once || strings.HasSuffix(words[i], ";") {
				c = nil
			}
			// A value that names a client may be where it starts, if the flag took none after all (sshpass
			// -p redis-cli -a SECRET): masking its arguments too costs less than missing them.
			if next := clientNamed(words[i]); at < 0 && next != nil {
				c, login = next, false
			}
			continue
		}
		if next := clientNamed(w); next != nil {
			c, login = next, false
		}
		if strings.HasSuffix(w, ";") {
			c = nil
		}
	}
	return out
}

// clientNamed returns the client whose executable w names, or nil.
func clientNamed(w string) *client {
	return clients[path.Base(strings.TrimLeft(w, `"'(`))]
}

// match reports whether word w is one of c's password flags (login: after a login subcommand), and where in
// w its value starts: -1 when the value is the next word.
func (c *client) match(w string, login bool) (passwordFlag, int, bool) {
	use := func(f passwordFlag, ok bool) bool { return ok && (login || !f.login) }
	if f, ok := c.flags[w]; use(f, ok) && f.separate {
		return f, -1, true
	}
	if strings.HasPrefix(w, "--") {
		name, _, eq := strings.Cut(w, "=")
		if f, ok := c.flags[name]; use(f, ok) && eq && f.attached {
			return f, len(name) + 1, true
		}
		return passwordFlag{}, 0, false
	}
	if len(w) < 3 || w[0] != '-' || spelledPassword[w[1:]] {
		return passwordFlag{}, 0, false
	}
	if f, ok := c.flags[w[:2]]; use(f, ok) && f.attached {
		return f, 2, true
	}
	if c.bundled == "" {
		return passwordFlag{}, 0, false
	}
	for i := 1; i < len(w); i++ {
		if f, ok := c.flags["-"+w[i:i+1]]; use(f, ok) {
			switch {
			case i+1 < len(w) && f.attached:
				return f, i + 1, true
			case i+1 == len(w) && f.separate:
				return f, -1, true
			}
		}
		if strings.IndexByte(c.bundled, w[i]) >= 0 {
			break // the rest of w is that flag's value
		}
	}
	return passwordFlag{}, 0, false
}

// hide masks the secret in v, a password flag's value. A closing quote or ; of free text stays.
func (k secretKind) hide(v string) string {
	body := strings.TrimRight(v, `"';`)
	tail := v[len(body):]
	if k == afterColon {
		user, _, ok := strings.Cut(body, ":")
		if !ok {
			return v // a user alone: the client asks for the password
		}
		return user + ":" + Mask + tail
	}
	return Mask + tail
}
