package redact

import (
	"strings"
	"testing"
)

// TestFlagValueStartingWithDash: a sensitive flag takes the next word as its value even when it starts with
// '-' (the value may be the secret); flags that say they take none keep the next word.
func TestFlagValueStartingWithDash(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []string
		want string
	}{
		{"--password -X", []string{"dbtool", "--password", "-hunter2", "--verbose"}, "dbtool --password *** --verbose"},
		{"--token -X", []string{"app", "--token", "-abc123"}, "app --token ***"},
		{"single dash", []string{"app", "-password", "-hunter2"}, "app -password ***"},
		{"a switch before a flag: the flag is masked", []string{"psql", "--password", "-h", "db"}, "psql --password *** db"},
		{"a masked flag takes its own value", []string{"app", "--password", "--token", "abc123"}, "app --password *** ***"},
		{"--flag=value masks the value only", []string{"app", "--password=-x", "-v"}, "app --password=*** -v"},
		{"stdin takes none", []string{"docker", "login", "--password-stdin", "-u", "me"}, "docker login --password-stdin -u me"},
		{"stdin takes none, a word after it stays", []string{"docker", "login", "--password-stdin", "r.io"}, "docker login --password-stdin r.io"},
		{"prompt takes none", []string{"tool", "--password-prompt", "--verbose"}, "tool --password-prompt --verbose"},
		{"ask- takes none", []string{"ansible-playbook", "--ask-vault-pass", "-i", "hosts"}, "ansible-playbook --ask-vault-pass -i hosts"},
		{"no- takes none", []string{"tool", "--no-password", "-v"}, "tool --no-password -v"},
		{"a switch keeps a flag after it", []string{"kube-apiserver", "--enable-bootstrap-token-auth", "--authorization-mode=Node,RBAC"}, "kube-apiserver --enable-bootstrap-token-auth --authorization-mode=Node,RBAC"},
		{"a switch still masks a word after it", []string{"x", "--use-token", "abc123"}, "x --use-token ***"},
		{"files stay", []string{"x", "--password-file", "-"}, "x --password-file -"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Join(tt.in); got != tt.want {
				t.Errorf("Join(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got := Text(strings.Join(tt.in, " ")); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", strings.Join(tt.in, " "), got, tt.want)
			}
		})
	}
}

// TestSensitive: names that carry a secret, and names that only look alike.
func TestSensitive(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"--token": true, "--password": true, "DB_PASS": true, "--pass": true, "-passin": true, "--proxy-pass": true,
		"--passphrase": true, "--requirepass": true, "--masterauth": true, "--creds": true, "--src-creds": true,
		"--api-key": true, "key": true, "--ſecret": true, "--K" + "ey": true, "--\u212aey": true,
		"--bypass": false, "--compass": false, "--passes": false, "--passphrase-file": false, "--token-auth-file": false,
		"--monkey": false, "--authorization-mode": false, "--v": false, "": false,
	} {
		if got := Sensitive(name); got != want {
			t.Errorf("Sensitive(%q) = %v, want %v", name, got, want)
		}
	}
}

// FuzzSensitiveShortcut: the stems that let a name skip the expression never change Sensitive's answer.
func FuzzSensitiveShortcut(f *testing.F) {
	for _, s := range []string{"--token", "DB_PASS", "--\u212aey", "ſecret", "--v", "x-creds", "SESSION_ID"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		n := strings.TrimLeft(name, "-")
		want := sensitiveName.MatchString(n) && !pathLike.MatchString(n)
		if got := Sensitive(name); got != want {
			t.Errorf("Sensitive(%q) = %v; through the expressions: %v", name, got, want)
		}
	})
}
