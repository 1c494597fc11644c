package redact

import (
	"strings"
	"testing"
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

func FuzzArgsNeverLeaks(f *testing.F) {
	f.Add("--token", "SECRETVALUE")
	f.Add("--password=", "SECRETVALUE")
	f.Fuzz(func(t *testing.T, flag, value string) {
		if value == "" || strings.ContainsAny(value, " -=&;,:@") || !strings.HasPrefix(flag, "--token") {
			return
		}
		out := Join([]string{"x", flag, value})
		if strings.Contains(out, value) && !strings.Contains(flag, value) {
			t.Errorf("leaked %q in %q", value, out)
		}
	})
}
