package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/tare-dev/tare/internal/component"
)

// KwokVersion is the pinned kwok release installed from its Go module.
const KwokVersion = "v0.8.0"

// Component is one program the lab runs.
type Component struct {
	Name    string        `json:"name"`
	Path    string        `json:"path"`
	Source  string        `json:"source"` // cached, built, apt, bin-dir, go install, present
	Version string        `json:"version"`
	Took    time.Duration `json:"took_ns"`
}

// built are the components tare builds from k8s.io/kubernetes, in the registry's order.
var built = component.Names(func(e component.Entry) bool { return e.Lab.Source == component.SourceUpstream })

// debianPackage is a program the lab needs and the Debian package that ships it.
type debianPackage struct{ program, pkg string }

// debianPackages are the programs of the components installed from Debian (etcd, containerd, runc, the CNI
// plugins), then iptables, which kubelet and kube-proxy drive, and busybox.
var debianPackages = func() []debianPackage {
	var out []debianPackage
	for _, e := range component.All() {
		if e.Lab.Source == component.SourceDebian {
			out = append(out, debianPackage{e.Lab.Program, e.Lab.Package})
		}
	}
	// busybox-static: the busybox image (busyboximage.go) is built from its binary.
	return append(out, debianPackage{"iptables", "iptables"}, debianPackage{busyboxPath, "busybox-static"})
}()

// InstallOptions configure Install.
type InstallOptions struct {
	BinDir string                 // use the Kubernetes binaries found here instead of building them
	Log    func(component string) // called as each component starts (progress)
}

// Install makes every lab component available: Debian packages (etcd, containerd, runc, CNI plugins,
// iptables) installed with apt when missing, the Kubernetes components built from the upstream module at
// KubernetesVersion (or taken from BinDir), and kwok from its module. Everything is cached: a second
// Install is a no-op.
func Install(ctx context.Context, opts InstallOptions) ([]Component, error) {
	if opts.BinDir != "" { // check the user's binaries before installing anything
		for _, name := range built {
			if err := executable(filepath.Join(opts.BinDir, name)); err != nil {
				return nil, fmt.Errorf("--bin-dir %s: %w", opts.BinDir, err)
			}
		}
	}
	var out []Component
	pkgs, err := ensurePackages(ctx)
	out = append(out, pkgs...)
	if err != nil {
		return out, err
	}
	for _, name := range built {
		if opts.Log != nil {
			opts.Log(name)
		}
		start := time.Now()
		c := Component{Name: name, Version: KubernetesVersion}
		if opts.BinDir != "" {
			c.Path, c.Source = filepath.Join(opts.BinDir, name), "bin-dir"
			if err := executable(c.Path); err != nil {
				return out, fmt.Errorf("--bin-dir %s: %w", opts.BinDir, err)
			}
			c.Version = "as found"
		} else {
			c.Source = "cached"
			if !cachedBuild(name) {
				c.Source = "built"
			}
			if c.Path, err = Build(ctx, name); err != nil {
				return out, err
			}
		}
		c.Took = time.Since(start)
		out = append(out, c)
	}
	if opts.Log != nil {
		opts.Log(component.Kwok)
	}
	k, err := ensureKwok(ctx)
	out = append(out, k)
	if err != nil {
		return out, err
	}
	if opts.Log != nil {
		opts.Log("images")
	}
	start := time.Now()
	src := "cached"
	if !imagesCached() {
		src = "go build"
	}
	archives, err := ensureImages(ctx)
	for i, a := range archives {
		out = append(out, Component{Name: "image " + labImages[i].Name, Path: a, Source: src, Version: labImages[i].Source, Took: time.Since(start)})
	}
	return out, err
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

func cachedBuild(name string) bool {
	cache, err := CacheDir()
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(k8sBinDir(cache), name))
	return err == nil
}

// missingPackages lists the Debian packages whose programs are not on this machine; lookPath is injected
// for tests.
func missingPackages(lookPath func(string) (string, error)) []string {
	var missing []string
	for _, p := range debianPackages {
		if filepath.IsAbs(p.program) {
			if _, err := os.Stat(p.program); err == nil {
				continue
			}
		} else if _, err := lookPath(p.program); err == nil {
			continue
		}
		missing = append(missing, p.pkg)
	}
	return missing
}

// installPackages installs the missing Debian packages with apt, when there are any and this process may.
func installPackages(ctx context.Context, missing []string) error {
	_, aptErr := exec.LookPath("apt-get")
	if err := canInstall(missing, os.Geteuid(), aptErr == nil); err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	return aptInstall(ctx, missing...)
}

func ensurePackages(ctx context.Context) ([]Component, error) {
	start := time.Now()
	missing := missingPackages(exec.LookPath)
	if err := installPackages(ctx, missing); err != nil {
		return nil, err
	}
	var out []Component
	for _, p := range debianPackages {
		path := p.program
		if !filepath.IsAbs(path) {
			var err error
			if path, err = exec.LookPath(p.program); err != nil {
				return out, fmt.Errorf("%s still missing after installing %s: %w", p.program, p.pkg, err)
			}
		}
		src := "present"
		for _, m := range missing {
			if m == p.pkg {
				src = "apt"
			}
		}
		out = append(out, Component{Name: filepath.Base(p.program), Path: path, Source: src, Version: "debian " + p.pkg, Took: time.Since(start)})
	}
	return out, nil
}

// canInstall says whether missing packages can be installed here, and what to do if not.
func canInstall(missing []string, euid int, haveApt bool) error {
	switch {
	case len(missing) == 0:
		return nil
	case euid != 0:
		return fmt.Errorf("packages %v are missing and installing them needs root: run tare lab install with sudo (or apt-get install %v): %w",
			missing, missing, ErrPrerequisite)
	case !haveApt:
		return fmt.Errorf("packages %v are missing and there is no apt-get: install them with your package manager: %w", missing, ErrPrerequisite)
	}
	return nil
}

// ensureKwok installs kwok from its Go module into the cache (GOBIN), once.
func ensureKwok(ctx context.Context) (Component, error) {
	start := time.Now()
	kwok := labOf(component.Kwok)
	c := Component{Name: component.Kwok, Version: KwokVersion, Source: "cached"}
	cache, err := CacheDir()
	if err != nil {
		return c, err
	}
	bin := filepath.Join(kwokDir(cache), "bin")
	c.Path = filepath.Join(bin, kwok.Program)
	stages := filepath.Join(kwokDir(cache), "stages.yaml")
	_, binErr := os.Stat(c.Path)
	_, stErr := os.Stat(stages)
	if binErr == nil && stErr == nil {
		c.Took = time.Since(start)
		return c, nil
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return c, fmt.Errorf("installing kwok needs Go on PATH (https://go.dev/dl): %w", ErrPrerequisite)
	}
	if err := writeKwokStages(ctx, gobin, stages); err != nil {
		return c, err
	}
	if binErr == nil {
		c.Took = time.Since(start)
		return c, nil
	}
	cmd := exec.CommandContext(ctx, gobin, "install", kwok.Module+"@"+KwokVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return c, fmt.Errorf("go install kwok %s: %w\n%s", KwokVersion, err, tail(out, 10))
	}
	c.Source, c.Took = "go install", time.Since(start)
	if _, err := os.Stat(c.Path); err != nil {
		return c, errors.Join(fmt.Errorf("kwok not found after go install"), err)
	}
	return c, nil
}

// aptInstall installs Debian packages, refreshing the package lists once if they are stale or empty (a
// fresh machine often has none).
func aptInstall(ctx context.Context, pkgs ...string) error {
	run := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.CombinedOutput()
	}
	install := append([]string{"install", "-y", "-qq", "--no-install-recommends"}, pkgs...)
	if _, err := run(install...); err == nil {
		return nil
	}
	if out, err := run("update", "-qq"); err != nil {
		return fmt.Errorf("apt-get update: %w\n%s", err, tail(out, 10))
	}
	if out, err := run(install...); err != nil {
		return fmt.Errorf("apt-get install %v: %w\n%s", pkgs, err, tail(out, 10))
	}
	return nil
}

// kwokStages are the stage configurations kwok needs (it refuses to run without them): nodes become
// Ready and keep a lease; pods go Ready, complete and delete. They ship in kwok's module.
var kwokStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
	"kustomize/stage/pod/fast/pod-complete.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

// writeKwokStages copies kwok's stages from its module (downloaded if needed) into one file.
func writeKwokStages(ctx context.Context, gobin, path string) error {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, gobin, "mod", "download", "-json", "sigs.k8s.io/kwok@"+KwokVersion)
	cmd.Stdout, cmd.Env = &out, append(os.Environ(), "GOFLAGS=-mod=mod")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("downloading kwok %s for its stages: %w", KwokVersion, err)
	}
	var info struct{ Dir string }
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		return fmt.Errorf("reading go mod download output: %w", err)
	}
	var all []byte
	for _, s := range kwokStages {
		b, err := os.ReadFile(filepath.Join(info.Dir, s))
		if err != nil {
			return fmt.Errorf("kwok stage: %w", err)
		}
		all = append(append(all, "---\n"...), b...)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, all, 0o644)
}
