package kubeconfigfuzz_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/kube"
)

// FuzzCheckKubeconfig feeds the kubeconfig check a file, seeded with kubeconfigs in the shapes tare lab
// up writes (client certificate, the lab's CA) and kubeadm-style token ones: whatever the file holds,
// the check answers without a panic, and a refusal names the file.
func FuzzCheckKubeconfig(f *testing.F) {
	pem := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	f.Add([]byte(`apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: ` + pem("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n") + `
users:
- name: admin
  user:
    client-certificate-data: ` + pem("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n") + `
    client-key-data: ` + pem("-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\n") + `
contexts:
- name: lab
  context: {cluster: lab, user: admin}
current-context: lab
`))
	f.Add([]byte(`apiVersion: v1
kind: Config
clusters: [{name: lab, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: admin, user: {token: t0k}}]
contexts: [{name: lab, context: {cluster: lab, user: admin, namespace: kube-system}}]
current-context: lab
`))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"http://[::1]:8080","insecure-skip-tls-verify":true}}],"contexts":[{"name":"x","context":{"cluster":"c"}}],"current-context":"x"}`))
	f.Add([]byte("apiVersion: v1\nkind: Config\n"))
	f.Add([]byte("\x00\x01\x02\xff"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "config")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := kube.CheckKubeconfig(path, ""); err != nil && !strings.Contains(err.Error(), path) {
			t.Fatalf("the error does not name the file: %v", err)
		}
	})
}
