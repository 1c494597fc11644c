package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/lab/images"
	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/userfile"
)

// KubernetesVersion is the pinned upstream version tare builds.
const KubernetesVersion = "v1.32.4"

// ErrPrerequisite marks something missing from the machine that tare cannot install itself. It is
// images.ErrPrerequisite, so that what the images lack matches it too.
var ErrPrerequisite = images.ErrPrerequisite

// CacheDir is where built components live: $TARE_CACHE_DIR, else the user cache dir + /tare
// (images.CacheDir, where the images are built too).
func CacheDir() (string, error) { return images.CacheDir() }

// k8sBinDir and kwokDir are where the built Kubernetes components and kwok (with its stages) are cached.
func k8sBinDir(cache string) string { return filepath.Join(cache, "k8s", KubernetesVersion, "bin") }
func kwokDir(cache string) string   { return filepath.Join(cache, "kwok", KwokVersion) }

// EnsureEtcd returns the path of etcd, installing Debian's etcd-server when it is missing and tare may.
func EnsureEtcd(ctx context.Context) (string, error) {
	etcd := labOf(component.Etcd)
	if p, err := exec.LookPath(etcd.Program); err == nil {
		return p, nil
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("etcd is not installed and installing it needs root: run sudo apt-get install %s: %w", etcd.Package, ErrPrerequisite)
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "", fmt.Errorf("etcd is not installed and there is no apt-get: install etcd 3.4+ and put it on PATH: %w", ErrPrerequisite)
	}
	if err := aptInstall(ctx, etcd.Package); err != nil {
		return "", err
	}
	return exec.LookPath(etcd.Program)
}

// labOf returns what the lab does with a component (the zero Lab for a name the registry lacks).
func labOf(name string) component.Lab {
	e, _ := component.Lookup(name)
	return e.Lab
}

// Build returns the path of an upstream component (kube-apiserver, kubelet, …) built from the
// k8s.io/kubernetes module at KubernetesVersion, building it into the cache the first time.
func Build(ctx context.Context, name string) (string, error) {
	paths, _, err := buildUpstream(ctx, []string{name})
	if err != nil {
		return "", err
	}
	return paths[0], nil
}

// buildUpstream returns the paths of the upstream components names (in their order), building the ones
// the cache lacks, and those it built (fresh). They are built by one go build, which loads the package
// graph once, compiles what they share once and runs their links in parallel (go build -p), instead of
// five go commands in a row.
func buildUpstream(ctx context.Context, names []string) (paths, fresh []string, err error) {
	cache, err := CacheDir()
	if err != nil {
		return nil, nil, err
	}
	bin := k8sBinDir(cache)
	var pkgs []string
	for _, name := range names {
		l := labOf(name)
		if l.Source != component.SourceUpstream {
			return nil, nil, fmt.Errorf("%s is not a component tare builds from k8s.io/kubernetes (those are %s)", name,
				strings.Join(built, ", "))
		}
		paths = append(paths, filepath.Join(bin, l.Program))
		if _, err := os.Stat(paths[len(paths)-1]); err != nil {
			pkgs, fresh = append(pkgs, l.Module), append(fresh, name)
		}
	}
	if len(pkgs) == 0 {
		return paths, nil, nil
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return nil, nil, fmt.Errorf("building %s needs Go on PATH (https://go.dev/dl): %w", strings.Join(fresh, ", "), ErrPrerequisite)
	}
	dir := filepath.Join(cache, "k8s", KubernetesVersion, "build")
	if err := writeBuildModule(ctx, gobin, dir); err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp(bin, ".build-")
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := goCmd(ctx, gobin, dir, buildArgs(tmp, pkgs)...); err != nil {
		return nil, nil, fmt.Errorf("building %s %s: %w", strings.Join(fresh, ", "), KubernetesVersion, err)
	}
	for _, name := range fresh { // go build names each binary for its package's last element, the program
		p := labOf(name).Program
		if err := os.Rename(filepath.Join(tmp, path.Base(labOf(name).Module)), filepath.Join(bin, p)); err != nil {
			return nil, nil, fmt.Errorf("installing %s: %w", name, err)
		}
	}
	return paths, fresh, nil
}

// versionLDFlags stamp KubernetesVersion where the components (component-base) and their clients
// (client-go) report it; unstamped, they say v0.0.0-master+$Format:%H$, which kubectl cannot parse.
func versionLDFlags() []string {
	minor := strings.Split(strings.TrimPrefix(KubernetesVersion, "v"), ".")[1]
	var ld []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		ld = append(ld, "-X", pkg+".gitVersion="+KubernetesVersion, "-X", pkg+".gitMajor=1", "-X", pkg+".gitMinor="+minor)
	}
	return ld
}

// buildArgs are the go build arguments that build the main packages pkgs into dir (one binary each, named
// for its package), static, with the version stamped, and without DWARF (-w): the symbol table that
// profiles and perf read stays, while the link, the slowest step after a component's last package
// compiles, takes less time and writes a third less.
func buildArgs(dir string, pkgs []string) []string {
	ld := append([]string{"-w"}, versionLDFlags()...)
	args := []string{"build", "-trimpath", "-ldflags", strings.Join(ld, " "), "-o", dir + string(filepath.Separator)}
	return append(args, pkgs...)
}

// writeBuildModule makes a module that requires k8s.io/kubernetes and points each staging module (which
// its go.mod replaces with local paths) at the matching release. It leaves the rest of the module graph to
// the build (-mod=mod), which fetches only the modules of the packages it compiles for this platform;
// go mod tidy would also fetch those of every other platform and of the packages' tests. A build module
// an older tare left (tidied) serves as well.
func writeBuildModule(ctx context.Context, gobin, dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, gobin, "mod", "download", "-json", "k8s.io/kubernetes@"+KubernetesVersion)
	cmd.Dir, cmd.Stdout, cmd.Env = dir, &out, buildEnv()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("downloading k8s.io/kubernetes %s: %w", KubernetesVersion, err)
	}
	var info struct{ GoMod string }
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		return fmt.Errorf("reading go mod download output: %w", err)
	}
	upstreamMod, err := os.ReadFile(info.GoMod)
	if err != nil {
		return fmt.Errorf("reading kubernetes go.mod: %w", err)
	}
	// Whole or not at all (its presence means done), and safe from another tare writing it at once.
	return userfile.WriteMode(filepath.Join(dir, "go.mod"), 0o644, func(w io.Writer) error {
		_, err := w.Write(buildModule(upstreamMod))
		return err
	})
}

// buildModule is the go.mod of the build module, from k8s.io/kubernetes's own go.mod: it requires
// KubernetesVersion and replaces each staging module (./staging/… there) with its release of the same
// minor version.
func buildModule(upstreamMod []byte) []byte {
	staging := "v0" + strings.TrimPrefix(KubernetesVersion, "v1")
	var b strings.Builder
	fmt.Fprintf(&b, "module tarek8sbuild\n\ngo 1.23\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n", KubernetesVersion)
	for _, line := range strings.Split(string(upstreamMod), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[1] == "=>" && strings.HasPrefix(f[2], "./staging/") {
			fmt.Fprintf(&b, "\t%s => %s %s\n", f[0], f[0], staging)
		}
	}
	b.WriteString(")\n")
	return []byte(b.String())
}

func buildEnv() []string {
	// The checksum database does not know k8s.io/kubernetes; -mod=mod lets go resolve while building.
	return append(os.Environ(), "GONOSUMDB=k8s.io", "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
}

func goCmd(ctx context.Context, gobin, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir, cmd.Env = dir, buildEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", args[0], err, output.LastLines(out, 15))
	}
	return nil
}
