package lab

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
// there before it (netnsNames); Down detaches the rest (unmountLab).

// netnsNames lists /run/netns.
func netnsNames() []string {
	ents, _ := os.ReadDir("/run/netns")
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func newNetns(before []string) []string {
	var out []string
	for _, n := range netnsNames() {
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

// unmountLab detaches every mount the lab made and removes the pod netns files.
func unmountLab(dir string, netnsBefore []string) error {
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
	for _, n := range newNetns(netnsBefore) {
		if err := os.Remove(filepath.Join("/run/netns", n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
