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
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/lab/images"
	"github.com/tare-dev/tare/internal/output"
)

// KwokVersion is the pinned kwok release installed from its Go module.
const KwokVersion = "v0.8.0"

// Component is one program the lab runs.
type Component struct {
	Name    string        `json:"name"`
	Path    string        `json:"path"`
	Source  string        `json:"source"` // cached, built, apt, bin-dir, go install, present
	Version string        `json:"version"`
	Took    time.Duration `json:"took_ns"` // the step's that got it (one go build gets every Kubernetes component)
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
	// busybox-static: the busybox image (images.Busybox) is built from its binary.
	return append(out, debianPackage{"iptables", "iptables"}, debianPackage{images.BusyboxPath, "busybox-static"})
}()

// InstallOptions configure Install.
type InstallOptions struct {
	BinDir   string            // use the Kubernetes binaries found here instead of building them
	Progress func(InstallStep) // called as each step starts and as it ends (progress); never twice at once
}

// InstallStep is one step of Install, reported as it starts (Done false) and as it ends.
type InstallStep struct {
	Name       string        // what it gets: "Debian packages", the Kubernetes components' names, "kwok", "images"
	Done       bool          // false: starting
	Components []Component   // when Done: what it got (cached, built, …), in Install's order
	Took       time.Duration // when Done: how long it took
	Err        error         // when Done: why it failed, or nil
}

// Install steps other than the Kubernetes components, named for what they get.
const (
	stepPackages = "Debian packages"
	stepImages   = "images"
)

// Install makes every lab component available: Debian packages (etcd, containerd, runc, CNI plugins,
// iptables) installed with apt when missing, the Kubernetes components built from the upstream module at
// KubernetesVersion (or taken from BinDir), kwok from its module, and the pod images. Everything is
// cached: a second Install is a no-op. Three lanes run at once, since they wait on different things (apt
// and the network, the compiler): the packages then the images (one is built from busybox's package), the
// Kubernetes components (one go build), and kwok. The components come back in that order whatever
// finished first, with what was got before a failure.
func Install(ctx context.Context, opts InstallOptions) ([]Component, error) {
	if opts.BinDir != "" { // check the user's binaries before installing anything
		for _, name := range built {
			if err := executable(filepath.Join(opts.BinDir, name)); err != nil {
				return nil, fmt.Errorf("--bin-dir %s: %w", opts.BinDir, err)
			}
		}
	}
	var mu sync.Mutex
	step := func(name string, get func() ([]Component, error)) ([]Component, error) {
		report := func(s InstallStep) {
			if opts.Progress != nil {
				mu.Lock()
				defer mu.Unlock()
				opts.Progress(s)
			}
		}
		report(InstallStep{Name: name})
		start := time.Now()
		cs, err := get()
		report(InstallStep{Name: name, Done: true, Components: cs, Took: time.Since(start), Err: err})
		return cs, err
	}
	var pkgs, k8s, kwok, images []Component
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var err error
		if pkgs, err = step(stepPackages, func() ([]Component, error) { return ensurePackages(gctx) }); err != nil {
			return err
		}
		images, err = step(stepImages, func() ([]Component, error) { return installImages(gctx) })
		return err
	})
	g.Go(func() error {
		var err error
		k8s, err = step(strings.Join(built, ", "), func() ([]Component, error) { return installUpstream(gctx, opts.BinDir) })
		return err
	})
	g.Go(func() error {
		var err error
		kwok, err = step(component.Kwok, func() ([]Component, error) {
			c, err := ensureKwok(gctx)
			return []Component{c}, err
		})
		return err
	})
	err := g.Wait()
	return slices.Concat(pkgs, k8s, kwok, images), err
}

// installUpstream gets the Kubernetes components: those in binDir when it is set, else built into the
// cache by one go build (each Component's Took is that build's).
func installUpstream(ctx context.Context, binDir string) ([]Component, error) {
	start := time.Now()
	var out []Component
	if binDir != "" {
		for _, name := range built {
			c := Component{Name: name, Path: filepath.Join(binDir, name), Source: "bin-dir", Version: "as found"}
			if err := executable(c.Path); err != nil {
				return out, fmt.Errorf("--bin-dir %s: %w", binDir, err)
			}
			c.Took = time.Since(start)
			out = append(out, c)
		}
		return out, nil
	}
	paths, fresh, err := buildUpstream(ctx, built)
	if err != nil {
		return nil, err
	}
	for i, name := range built {
		src := "cached"
		if slices.Contains(fresh, name) {
			src = "built"
		}
		out = append(out, Component{Name: name, Path: paths[i], Source: src, Version: KubernetesVersion, Took: time.Since(start)})
	}
	return out, nil
}

// installImages builds the lab's images into the cache (images.Ensure), once.
func installImages(ctx context.Context) ([]Component, error) {
	start := time.Now()
	src := "cached"
	if !images.Cached() {
		src = "go build"
	}
	archives, err := images.Ensure(ctx)
	var out []Component
	for i, a := range archives {
		out = append(out, Component{Name: "image " + images.Lab[i].Name, Path: a, Source: src, Version: images.Lab[i].Source, Took: time.Since(start)})
	}
	return out, err
}

// InstallDatapathTools installs the Debian packages of the datapath tools (iperf3, sockperf, fio) with apt
// when missing (which needs root) and builds the archive of their image (images.ToolsArchive). It returns the
// tools and the image as Components, and is a no-op when everything is there.
func InstallDatapathTools(ctx context.Context) ([]Component, error) {
	start := time.Now()
	var missing []string
	for _, t := range images.DatapathTools {
		if !t.Installed() {
			missing = append(missing, t.Package)
		}
	}
	if err := installPackages(ctx, missing); err != nil {
		return nil, err
	}
	var out []Component
	for _, t := range images.DatapathTools {
		if !t.Installed() {
			return out, fmt.Errorf("%s still missing after installing %s", t.Path(), t.Package)
		}
		src := "present"
		if slices.Contains(missing, t.Package) {
			src = "apt"
		}
		out = append(out, Component{Name: t.Name, Path: t.Path(), Source: src, Version: "debian " + t.Package, Took: time.Since(start)})
	}
	a, err := images.ToolsArchive(ctx)
	if err != nil {
		return out, err
	}
	src := "cached"
	if a.Built {
		src = "built"
	}
	return append(out, Component{Name: "image " + images.Tools.Name, Path: a.Path, Source: src, Version: images.Tools.Source, Took: time.Since(start)}), nil
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
	// -trimpath as the Kubernetes components are built, so that the standard library compiled for one serves
	// the other; no DWARF (-w), as for them.
	cmd := exec.CommandContext(ctx, gobin, "install", "-trimpath", "-ldflags=-w", kwok.Module+"@"+KwokVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return c, fmt.Errorf("go install kwok %s: %w\n%s", KwokVersion, err, output.LastLines(out, 10))
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
		return fmt.Errorf("apt-get update: %w\n%s", err, output.LastLines(out, 10))
	}
	if out, err := run(install...); err != nil {
		return fmt.Errorf("apt-get install %v: %w\n%s", pkgs, err, output.LastLines(out, 10))
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
