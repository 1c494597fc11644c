package lab

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeLabDir is a lab directory with a state and an admin kubeconfig (no processes): what
// AddUserContext reads. The certificates are placeholders; nothing connects.
func fakeLabDir(t *testing.T, parent, name, server string) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: lab, cluster: {server: "`+server+`", certificate-authority-data: Y2E=}}]
users: [{name: admin, user: {client-certificate-data: Y3J0, client-key-data: a2V5}}]
contexts: [{name: lab, context: {cluster: lab, user: admin}}]
current-context: lab
`), 0o600); err != nil {
		t.Fatal(err)
	}
	st := &State{Version: stateVersion, Dir: dir, Kubeconfig: kc, Server: server, Ready: true}
	if err := st.save(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// kubectlAt runs the real kubectl with the environment the test set ($HOME, $KUBECONFIG).
func kubectlAt(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("kubectl", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func needKubectl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("the user's kubeconfig is read back with the real kubectl: install it (apt-get install kubectl)")
	}
}

// removeContext runs what down does with the user's kubeconfig.
func removeContext(t *testing.T, dir string) string {
	t.Helper()
	st, err := loadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	note, err := removeUserContext(st)
	if err != nil {
		t.Fatal(err)
	}
	return note
}

// TestUserContextNoKubeconfig: with no kubeconfig at all, up makes ~/.kube/config with the lab's context
// current (as kubectl reads it), and down removes the file and the directory it made.
func TestUserContextNoKubeconfig(t *testing.T) {
	needKubectl(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	dir := fakeLabDir(t, t.TempDir(), "lab1", "https://127.0.0.1:6443")
	uc, err := at(dir).AddUserContext()
	if err != nil {
		t.Fatal(err)
	}
	want := "tare-lab-lab1"
	if uc.Name != want || uc.Previous != "" {
		t.Errorf("context %q (previous %q), want %q and none", uc.Name, uc.Previous, want)
	}
	if got := kubectlAt(t, "config", "current-context"); got != want {
		t.Errorf("kubectl's current context: %q, want %q", got, want)
	}
	if got := kubectlAt(t, "config", "view", "-o", "jsonpath={.clusters[0].cluster.server}"); got != "https://127.0.0.1:6443" {
		t.Errorf("kubectl sees the server %q", got)
	}
	if st, err := loadState(dir); err != nil || st.UserContext == nil || st.UserContext.Name != want {
		t.Fatalf("the state does not record the context: %+v, %v", st, err)
	}
	if note := removeContext(t, dir); !strings.Contains(note, "put back") {
		t.Errorf("down says %q", note)
	}
	if _, err := os.Stat(filepath.Join(home, ".kube")); !os.IsNotExist(err) {
		t.Errorf("~/.kube is still there after down: %v", err)
	}
}

// kubectlMadeConfig is a kubeconfig the user made with kubectl, with a context current.
func kubectlMadeConfig(t *testing.T) {
	t.Helper()
	kubectlAt(t, "config", "set-cluster", "prod", "--server", "https://192.0.2.1:6443")
	kubectlAt(t, "config", "set-credentials", "me", "--token", "t0k")
	kubectlAt(t, "config", "set-context", "prod", "--cluster", "prod", "--user", "me", "--namespace", "shop")
	kubectlAt(t, "config", "use-context", "prod")
}

// TestUserContextExisting: beside the user's own context, which stays; down puts the file back byte for
// byte, even a hand-written one that kubectl would reformat.
func TestUserContextExisting(t *testing.T) {
	needKubectl(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	kubectlMadeConfig(t)
	path := filepath.Join(home, ".kube", "config")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before = append([]byte("# my clusters\n"), before...)
	if err := os.WriteFile(path, before, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	dir := fakeLabDir(t, t.TempDir(), "tare-lab-42", "https://127.0.0.1:6443")
	uc, err := at(dir).AddUserContext()
	if err != nil {
		t.Fatal(err)
	}
	if uc.Name != "tare-lab-42" || uc.Previous != "prod" {
		t.Errorf("context %q, previous %q: want tare-lab-42, prod", uc.Name, uc.Previous)
	}
	if got := kubectlAt(t, "config", "current-context"); got != uc.Name {
		t.Errorf("kubectl's current context: %q", got)
	}
	if got := kubectlAt(t, "config", "get-contexts", "-o", "name"); got != "prod\n"+uc.Name {
		t.Errorf("kubectl's contexts: %q", got)
	}
	if note := removeContext(t, dir); !strings.Contains(note, "current context prod") {
		t.Errorf("down says %q", note)
	}
	after, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(after, before) {
		t.Errorf("the kubeconfig is not as it was (%v):\n%s\nwant:\n%s", err, after, before)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("the kubeconfig's mode: %v, %v", fi.Mode(), err)
	}
}

// TestUserContextChangedSinceUp: when the user changed the kubeconfig while the lab ran, down deletes
// the lab's entries as kubectl would and keeps the change; the previous context is current again.
func TestUserContextChangedSinceUp(t *testing.T) {
	needKubectl(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	kubectlMadeConfig(t)
	dir := fakeLabDir(t, t.TempDir(), "lab", "https://127.0.0.1:6443")
	uc, err := at(dir).AddUserContext()
	if err != nil {
		t.Fatal(err)
	}
	kubectlAt(t, "config", "set-context", "staging", "--cluster", "prod", "--user", "me")
	if note := removeContext(t, dir); !strings.Contains(note, "changed since up") {
		t.Errorf("down says %q", note)
	}
	if got := kubectlAt(t, "config", "get-contexts", "-o", "name"); got != "prod\nstaging" {
		t.Errorf("contexts after down: %q, want prod and staging (not %s)", got, uc.Name)
	}
	if got := kubectlAt(t, "config", "current-context"); got != "prod" {
		t.Errorf("current context after down: %q, want prod", got)
	}
	if got := kubectlAt(t, "config", "view", "-o", "jsonpath={.clusters[*].name} {.users[*].name}"); got != "prod me" {
		t.Errorf("clusters and users after down: %q", got)
	}
}

// TestUserContextKUBECONFIG: with $KUBECONFIG listing several files, the entries go where kubectl puts
// a new one (the first file that exists), and down leaves every file as it was.
func TestUserContextKUBECONFIG(t *testing.T) {
	needKubectl(t)
	t.Setenv("HOME", t.TempDir())
	kdir := t.TempDir()
	missing, second := filepath.Join(kdir, "missing"), filepath.Join(kdir, "second")
	t.Setenv("KUBECONFIG", second)
	kubectlMadeConfig(t)
	before, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", missing+string(filepath.ListSeparator)+second)
	dir := fakeLabDir(t, t.TempDir(), "lab", "https://127.0.0.1:6443")
	uc, err := at(dir).AddUserContext()
	if err != nil {
		t.Fatal(err)
	}
	if len(uc.Files) != 1 || uc.Files[0].Path != second {
		t.Errorf("files changed: %+v, want %s alone", uc.Files, second)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("%s was made: %v", missing, err)
	}
	if got := kubectlAt(t, "config", "current-context"); got != uc.Name {
		t.Errorf("kubectl's current context: %q", got)
	}
	removeContext(t, dir)
	if after, err := os.ReadFile(second); err != nil || !bytes.Equal(after, before) {
		t.Errorf("%s is not as it was (%v)", second, err)
	}
}

// TestUserContextUnwritable: a kubeconfig that cannot be written is an error naming it, and nothing is
// recorded for down.
func TestUserContextUnwritable(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	notDir := filepath.Join(home, "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(notDir, "config")) // below a file: no one can make it
	dir := fakeLabDir(t, t.TempDir(), "lab", "https://127.0.0.1:6443")
	if _, err := at(dir).AddUserContext(); err == nil || !strings.Contains(err.Error(), notDir) {
		t.Errorf("got %v, want an error naming %s", err, notDir)
	}
	if st, err := loadState(dir); err != nil || st.UserContext != nil {
		t.Errorf("the state records a context: %+v, %v", st.UserContext, err)
	}
}

// TestUserContextTwoLabs: labs in directories of the same name get a context each, and the first's
// stays when the second's is added.
func TestUserContextTwoLabs(t *testing.T) {
	needKubectl(t)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	a := fakeLabDir(t, t.TempDir(), "lab", "https://127.0.0.1:6443")
	b := fakeLabDir(t, t.TempDir(), "lab", "https://127.0.0.1:6543")
	ua, err := at(a).AddUserContext()
	if err != nil {
		t.Fatal(err)
	}
	ub, err := at(b).AddUserContext()
	if err != nil {
		t.Fatal(err)
	}
	if ua.Name == ub.Name || ub.Previous != ua.Name {
		t.Errorf("contexts %q and %q (previous %q)", ua.Name, ub.Name, ub.Previous)
	}
	if got := kubectlAt(t, "config", "get-contexts", "-o", "name"); got != ua.Name+"\n"+ub.Name {
		t.Errorf("kubectl's contexts: %q", got)
	}
	removeContext(t, b)
	if got := kubectlAt(t, "config", "current-context"); got != ua.Name {
		t.Errorf("after the second lab's down the current context is %q, want %q", got, ua.Name)
	}
	removeContext(t, a)
}

func TestContextName(t *testing.T) {
	t.Setenv("TARE_LAB_DIR", "/var/lib/tare/lab")
	for dir, want := range map[string]string{
		"/var/lib/tare/lab":       DefaultContext,
		"/tmp/lab2":               "tare-lab-lab2",
		"/tmp/tare-lab-123":       "tare-lab-123",
		"/tmp/My Lab":             "tare-lab-my-lab",
		"/tmp/tare-lab-":          "tare-lab-" + dirHash("/tmp/tare-lab-"),
		"/var/lib/tare/lab/../x/": "tare-lab-x",
	} {
		if got := ContextName(dir); got != want {
			t.Errorf("ContextName(%q) = %q, want %q", dir, got, want)
		}
	}
}
