package kube_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/kube"
)

// TestCheckKubeconfig: a usable kubeconfig passes, and each way a file can fail to be one is named.
func TestCheckKubeconfig(t *testing.T) {
	t.Parallel()
	const valid = `apiVersion: v1
kind: Config
clusters: [{name: lab, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: admin, user: {token: t0k}}]
contexts: [{name: lab, context: {cluster: lab, user: admin}}]
current-context: lab
`
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content, want string // content "" means no file; want "" means accepted
	}{
		{"valid", valid, ""},
		{"no current-context", strings.Replace(valid, "current-context: lab\n", "", 1), "has no current-context"},
		{"current-context names no context", strings.Replace(valid, "current-context: lab", "current-context: prod", 1), `context was not found for specified context: prod`},
		{"cluster without server", strings.Replace(valid, `server: "https://127.0.0.1:6443"`, `insecure-skip-tls-verify: true`, 1), `no server found for cluster "lab"`},
		{"missing", "", "no such file"},
		{"notes", "just some notes\n", "is not a kubeconfig"},
		{"binary", "\x00\x01\x02\xff", "is not a kubeconfig"},
		{"no clusters", "apiVersion: v1\nkind: Config\n", "names no cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if tc.content != "" {
				if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := kube.CheckKubeconfig(path, "")
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			case err != nil && !strings.Contains(err.Error(), path):
				t.Errorf("the error does not name the file: %v", err)
			}
		})
	}
	// kubectl's --context: a context that exists is used even when none is current; one that does not is
	// named.
	t.Run("context", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(dir, "no-current")
		if err := os.WriteFile(path, []byte(strings.Replace(valid, "current-context: lab\n", "", 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := kube.CheckKubeconfig(path, "lab"); err != nil {
			t.Errorf("--context lab: %v", err)
		}
		if err := kube.CheckKubeconfig(path, "prod"); err == nil || !strings.Contains(err.Error(), `has no context "prod"`) {
			t.Errorf("--context prod: got %v, want an error naming it", err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		t.Parallel()
		if err := kube.CheckKubeconfig(dir, ""); err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("a directory: got %v, want an error naming it", err)
		}
	})
}
