package redact

import (
	"strings"
	"testing"
	"time"
)

func TestArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []string
		want string
	}{
		{"equals form", []string{"app", "--token=SECRET123"}, "app --token=***"},
		{"separate value", []string{"app", "--password", "SECRET456", "--v=2"}, "app --password *** --v=2"},
		{"single dash", []string{"mysql", "-password", "hunter2"}, "mysql -password ***"},
		{"file flags stay", []string{"kube-apiserver", "--token-auth-file=/etc/tokens.csv", "--tls-private-key-file=/k.pem"}, "kube-apiserver --token-auth-file=/etc/tokens.csv --tls-private-key-file=/k.pem"},
		{"env words", []string{"env", "AWS_SECRET_ACCESS_KEY=abc", "DB_PASSWORD=xyz", "PATH=/bin"}, "env AWS_SECRET_ACCESS_KEY=*** DB_PASSWORD=*** PATH=/bin"},
		{"bearer header", []string{"curl", "-H", "Authorization: Bearer eyJhbGciOi.abc"}, "curl -H Authorization: Bearer ***"},
		{"url password", []string{"psql", "postgres://admin:s3cr3t@db:5432/x"}, "psql postgres://admin:***@db:5432/x"},
		{"query token", []string{"wget", "https://h/x?a=1&access_token=abc&b=2"}, "wget https://h/x?a=1&access_token=***&b=2"},
		{"query token after a port", []string{"curl", "http://127.0.0.1:8080/debug?token=sekret"}, "curl http://127.0.0.1:8080/debug?token=***"},
		{"bootstrap token", []string{"kubeadm", "join", "--token", "abcdef.0123456789abcdef"}, "kubeadm join --token ***"},
		{"authorization mode is not secret", []string{"kube-apiserver", "--authorization-mode=Node,RBAC"}, "kube-apiserver --authorization-mode=Node,RBAC"},
		{"value with secret assignment", []string{"x", "--env=API_KEY=k1"}, "x --env=API_KEY=***"},
		{"json env", []string{"agent", "--env", `{"AWS_CA_BUNDLE": "/etc/ssl/ca.pem", "AWS_SECRET_ACCESS_KEY": "abc123", "api_token":"t0k"}`}, `agent --env {"AWS_CA_BUNDLE": "/etc/ssl/ca.pem", "AWS_SECRET_ACCESS_KEY": "***", "api_token":"***"}`},
		{"yaml style", []string{"x", "password: hunter2"}, "x password: ***"},
		{"nothing to hide", []string{"sleep", "10"}, "sleep 10"},
		{"mysql glued password", []string{"/usr/bin/mysql", "-uroot", "-pSECRET", "-h", "db"}, "/usr/bin/mysql -uroot -p*** -h db"},
		{"mysqldump glued password", []string{"mysqldump", "-pS3cr3t!", "shop"}, "mysqldump -p*** shop"},
		{"sshpass glued password", []string{"sshpass", "-phunter2", "ssh", "host"}, "sshpass -p*** ssh host"},
		{"mysql prompt flag alone", []string{"mysql", "-u", "root", "-p"}, "mysql -u root -p"},
		{"glued -p elsewhere is a port", []string{"redis-cli", "-p6379"}, "redis-cli -p6379"},
		{"go test -parallel stays", []string{"go", "test", "-parallel=4"}, "go test -parallel=4"},
		{"sshpass separate password", []string{"sshpass", "-p", "hunter2", "ssh", "-p", "22", "host"}, "sshpass -p *** ssh -p 22 host"},
		{"mysql through sudo", []string{"sudo", "-u", "backup", "/usr/bin/mysqldump", "-phunter2", "shop"}, "sudo -u backup /usr/bin/mysqldump -p*** shop"},
		{"mysql bare -p prompts, the database stays", []string{"mysql", "-p", "shop"}, "mysql -p shop"},
		{"mysql in a shell command", []string{"sh", "-c", "mysql -uroot -phunter2 shop; ssh -p2222 host"}, "sh -c mysql -uroot -p*** shop; ssh -p2222 host"},
		{"ssh port stays", []string{"ssh", "-p", "22", "host"}, "ssh -p 22 host"},
		{"docker publish stays", []string{"docker", "run", "-p", "8080:80", "nginx"}, "docker run -p 8080:80 nginx"},
		{"kubectl port-forward pod stays", []string{"kubectl", "port-forward", "-p", "web", "8080:80"}, "kubectl port-forward -p web 8080:80"},
		{"redis-cli port stays", []string{"redis-cli", "-p", "6379"}, "redis-cli -p 6379"},
		{"mkdir -p stays", []string{"mkdir", "-p", "/var/lib/x"}, "mkdir -p /var/lib/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Join(tt.in); got != tt.want {
				t.Errorf("Join(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	in := `user-agent kubectl --token SECRET1 --password=SECRET2 "Authorization: bearer SECRET3" https://u:SECRET4@h`
	got := Text(in)
	for _, s := range []string{"SECRET1", "SECRET2", "SECRET3", "SECRET4"} {
		if strings.Contains(got, s) {
			t.Errorf("Text left %s in %q", s, got)
		}
	}
}

// TestTextPairs: pairs inside the value of another pair, and quoted words, as in JSON on a command line or a
// logged argv.
func TestTextPairs(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`x --env=API_KEY=k1 --v=2`:                    `x --env=API_KEY=*** --v=2`,
		`config: {"password": "hunter2"}`:             `config: {"password": "***"}`,
		`--overrides={"db": {"password": "hunter2"}}`: `--overrides={"db": {"password": "***"}}`,
		`x= {"token": "t0k", "n": [1, 2]}`:            `x= {"token": "***", "n": [1, 2]}`,
		`["app" "--password" "hunter2" "-v"]`:         `["app" "--password" "***" "-v"]`,
		`run(app, --token, 'abc')`:                    `run(app, --token, '***')`,
		`{"mode": "fast", "level": 2}`:                `{"mode": "fast", "level": 2}`,
		`Bearer AWS_SECRET_ACCESS_KEY=abc123 x`:       `Bearer *** x`,
		`"Authorization: Basic dXNlcjpwdw==", next`:   `"Authorization: Basic ***", next`,
		`https://h/x?auth=Bearer%20abc&b=2`:           `https://h/x?auth=Bearer%20***&b=2`,
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTextPairsLinear: pairs nested in pairs' values (a=a=a=…, 64 KiB of them) are searched in one pass. A
// search that started over inside each value took minutes here; one pass takes milliseconds, so the bound
// holds on a loaded machine and under the race detector.
func TestTextPairsLinear(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("a=", 1<<15) + "password=hunter2"
	start := time.Now()
	got := Text(s)
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Text of %d bytes of nested pairs took %v", len(s), d)
	}
	if strings.Contains(got, "hunter2") {
		t.Errorf("Text left the password in the nested pairs")
	}
}

// TestTextClientPasswords: a mysql-style -pPASSWORD inside free text (a shell script's line, a log line)
// is masked, and the text around it is kept, quotes included.
func TestTextClientPasswords(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`bash -c "mysqldump -uroot -phunter2 shop > /backup/shop.sql"`: `bash -c "mysqldump -uroot -p*** shop > /backup/shop.sql"`,
		`exec: 'mysql -h db -pS3cr3t!'`:                                `exec: 'mysql -h db -p***'`,
		`mariadb -phunter2 && nc -p 4000 host`:                         `mariadb -p*** && nc -p 4000 host`,
		`listening with ssh -p 2222 and mkdir -p /x`:                   `listening with ssh -p 2222 and mkdir -p /x`,
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzArgsNeverLeaks(f *testing.F) {
	f.Add("--token", "SECRETVALUE")
	f.Add("--password=", "SECRETVALUE")
	f.Add("--token\r", "SECRETVALUE")
	f.Fuzz(func(t *testing.T, flag, value string) {
		// A sensitive flag without "=" takes the next word as its value: that word must come out masked.
		// (Comparing substrings of the joined line would call a value such as "x" leaked by the program's
		// own name.)
		// A word with white space inside it is a script, not a flag (white space at its end, a CRLF script's
		// \r, leaves it a flag).
		if value == "" || strings.ContainsAny(value, " -=&;,:@") || !strings.HasPrefix(flag, "--token") ||
			strings.Contains(flag, "=") || strings.ContainsAny(strings.TrimRight(flag, " \t\n\r\v\f"), " \t\n\r\v\f") ||
			!Sensitive(flag) {
			return
		}
		out := Args([]string{"x", flag, value})
		if out[2] != Mask {
			t.Errorf("leaked %q as %q in %q", value, out[2], out)
		}
	})
}

// FuzzClientPasswordNeverLeaks: whatever is glued to a mysql client's -p does not reach the output. A value
// with white space in it is left out: in free text white space parts words (a script's mysql -p\tdb is a
// prompt and a database), and Join masks such a value whole from its argv word.
func FuzzClientPasswordNeverLeaks(f *testing.F) {
	f.Add("/usr/bin/mysql", "hunter2")
	f.Add("sshpass", "S3cr3t!")
	f.Fuzz(func(t *testing.T, client, value string) {
		name := client[strings.LastIndex(client, "/")+1:]
		if c := clients[name]; c != mysqlClient && c != sshpass || len(value) < 3 || strings.Contains(client, value) || strings.ContainsAny(value, " \t\n\r\v\f\"';*") {
			return
		}
		for _, out := range []string{Join([]string{client, "-u", "root", "-p" + value}), Text(client + " -p" + value + " db")} {
			if strings.Contains(out, value) {
				t.Errorf("leaked %q in %q", value, out)
			}
		}
	})
}

// FuzzTextShortcut: the shortcuts that skip a rule for text that cannot hold what it looks for (no pair,
// no eyJ, no client's name, no sensitive flag) never change what Text returns.
func FuzzTextShortcut(f *testing.F) {
	for _, s := range []string{"/usr/bin/sleep", "3600", "Authorization: Bearer abc", "BASIC%20x", "baſic%20x",
		"--token=abc", "https://u:p@h/x?token=1", "-pSECRET", "--password hunter2", "bearer\tzz", "eyJhbGciOi.eyJzdWIi.c2ln", "x eyJ", "redis-cli -a pw", "docker login -p x", `["--token" "t"]`,
		"curl -sSu a:b", "set -e\nmysql -px"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := flagWords(pairs(jwt.ReplaceAllString(clientWords(s), Mask)))
		if got := Text(s); got != want {
			t.Errorf("Text(%q) = %q; through every pattern: %q", s, got, want)
		}
	})
}
