package machine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"
)

// The lab's mounts are the kubelet's volume mounts under the lab directory, containerd's rootfs mounts and
// the pod network namespaces the CNI plugins bind under /run/netns. Up records the namespaces that were
// there before it (NetnsNames); Down detaches the rest (Unmount).

// NetnsNames lists /run/netns.
func NetnsNames() []string {
	ents, _ := os.ReadDir(netnsDir)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// NewPodNetns lists the pod network namespaces (cni-…) in /run/netns that are not in before.
func NewPodNetns(before []string) []string {
	var out []string
	for _, n := range NetnsNames() {
		if strings.HasPrefix(n, "cni-") && !slices.Contains(before, n) {
			out = append(out, n)
		}
	}
	return out
}

// labMounts picks, from the mount points of this machine, those the lab made: everything under the lab
// directory and the pod network namespaces (/run/netns/cni-…) that did not exist before up. Deepest first.
func labMounts(mountPoints []string, dir string, netnsBefore []string) []string {
	var out []string
	for _, m := range mountPoints {
		switch {
		case strings.HasPrefix(m, dir+"/"):
		case strings.HasPrefix(m, "/run/netns/cni-") && !slices.Contains(netnsBefore, filepath.Base(m)):
		default:
			continue
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return strings.Count(out[i], "/") > strings.Count(out[j], "/") || (strings.Count(out[i], "/") == strings.Count(out[j], "/") && out[i] > out[j])
	})
	return out
}

// Unmount detaches every mount the lab in dir made and removes the pod netns files not in netnsBefore.
func Unmount(dir string, netnsBefore []string) error {
	mounts, err := procfs.GetMounts()
	if err != nil {
		return fmt.Errorf("reading mounts: %w", err)
	}
	var points []string
	for _, m := range mounts {
		points = append(points, m.MountPoint)
	}
	var errs []error
	for _, m := range labMounts(points, dir, netnsBefore) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
		}
	}
	for _, n := range NewPodNetns(netnsBefore) {
		if err := os.Remove(filepath.Join(netnsDir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
