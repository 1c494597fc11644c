package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// binaries are the programs a lab runs.
type binaries struct {
	etcd, apiserver, kcm, scheduler, kubelet, proxy string
	containerd, ctr, kwok, kwokStages               string
}

// findBinaries locates every program `up` needs: the Kubernetes components in binDir or tare's cache,
// etcd, containerd and ctr on PATH, kwok and its stages in the cache. What is missing is named with
// what to run.
func findBinaries(binDir string, controlOnly, kwok bool) (binaries, error) {
	var b binaries
	cache, err := CacheDir()
	if err != nil {
		return b, err
	}
	k8s := k8sBinDir(cache)
	if binDir != "" {
		k8s = binDir
	}
	var missing []string
	built := func(name string) string {
		p := filepath.Join(k8s, name)
		if executable(p) != nil {
			missing = append(missing, p)
		}
		return p
	}
	onPath := func(name string) string {
		p, err := exec.LookPath(name)
		if err != nil {
			missing = append(missing, name+" (on PATH)")
		}
		return p
	}
	b.etcd = onPath("etcd")
	b.apiserver, b.kcm, b.scheduler = built("kube-apiserver"), built("kube-controller-manager"), built("kube-scheduler")
	if !controlOnly {
		b.kubelet, b.proxy = built("kubelet"), built("kube-proxy")
		b.containerd, b.ctr = onPath("containerd"), onPath("ctr")
		if _, err := exec.LookPath("runc"); err != nil {
			missing = append(missing, "runc (on PATH)")
		}
		if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
			missing = append(missing, "/usr/lib/cni/bridge")
		}
	}
	if kwok {
		dir := kwokDir(cache)
		b.kwok, b.kwokStages = filepath.Join(dir, "bin", "kwok"), filepath.Join(dir, "stages.yaml")
		for _, p := range []string{b.kwok, b.kwokStages} {
			if _, err := os.Stat(p); err != nil {
				missing = append(missing, p)
			}
		}
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
	_, err := findBinaries(binDir, controlOnly, false)
	return err
}
