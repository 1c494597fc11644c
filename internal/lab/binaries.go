package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/tare-dev/tare/internal/component"
)

// binaries are the programs a lab runs.
type binaries struct {
	// paths holds the program of every lab component looked for, by component name.
	paths map[string]string
	// ctr is containerd's client (the lab imports images and checks containerd with it); kwokStages is the
	// file of kwok's stage configurations.
	ctr, kwokStages string
	// nsenter runs an extra node's programs in its network namespace (UpOptions.checkNodes finds it).
	nsenter string
}

// path returns the program of a lab component, or "" when it was not looked for or is not on PATH.
func (b binaries) path(name string) string { return b.paths[name] }

// findBinaries locates the programs of the lab components named (UpOptions.components), as the component
// registry says the lab gets them: the Kubernetes components in binDir or tare's cache, the Debian ones
// (etcd, containerd, runc, the CNI plugins) on PATH or where the package puts them, kwok and its stages in
// the cache, and with containerd its client ctr. What is missing is named with what to run.
func findBinaries(binDir string, components []string) (binaries, error) {
	b := binaries{paths: map[string]string{}}
	cache, err := CacheDir()
	if err != nil {
		return b, err
	}
	k8s := k8sBinDir(cache)
	if binDir != "" {
		k8s = binDir
	}
	var missing []string
	for _, e := range component.All() {
		if !slices.Contains(components, e.Name) {
			continue
		}
		l := e.Lab
		switch l.Source {
		case component.SourceUpstream:
			p := filepath.Join(k8s, l.Program)
			if executable(p) != nil {
				missing = append(missing, p)
			}
			b.paths[e.Name] = p
		case component.SourceDebian:
			if filepath.IsAbs(l.Program) {
				if _, err := os.Stat(l.Program); err != nil {
					missing = append(missing, l.Program)
				}
				b.paths[e.Name] = l.Program
				continue
			}
			p, err := exec.LookPath(l.Program)
			if err != nil {
				missing = append(missing, l.Program+" (on PATH)")
			}
			b.paths[e.Name] = p
		case component.SourceGoInstall:
			dir := kwokDir(cache)
			b.paths[e.Name], b.kwokStages = filepath.Join(dir, "bin", l.Program), filepath.Join(dir, "stages.yaml")
			for _, p := range []string{b.paths[e.Name], b.kwokStages} {
				if _, err := os.Stat(p); err != nil {
					missing = append(missing, p)
				}
			}
		}
	}
	if slices.Contains(components, component.Containerd) { // its client, from its package
		p, err := exec.LookPath("ctr")
		if err != nil {
			missing = append(missing, "ctr (on PATH)")
		}
		b.ctr = p
	}
	if len(missing) > 0 {
		hint := "run `tare lab install` first (as root)"
		if binDir != "" {
			hint = "put them in --bin-dir " + binDir + " or run `tare lab install` first (as root)"
		}
		return b, fmt.Errorf("the lab is not installed: missing %v; %s: %w", missing, hint, ErrPrerequisite)
	}
	return b, nil
}

// CheckInstalled reports whether everything a lab needs is installed (the control plane's programs only,
// with controlOnly), so that a caller can refuse before it writes anything. The error names what is missing
// and matches ErrPrerequisite.
func CheckInstalled(binDir string, controlOnly bool) error {
	_, err := findBinaries(binDir, UpOptions{ControlPlaneOnly: controlOnly}.components())
	return err
}
