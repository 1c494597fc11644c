package lab

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
)

// Residue is what the components leave on the machine outside the lab directory whatever they are told:
// directories, container log links, containerd's shim sockets, libcni's cached results and the pod
// bridge. Up records which machine directories were absent (absentDirs); Down removes those and the rest.

// machineDirs are directories outside the lab directory that the components create whatever they are
// told: kubelet's device-plugins directory and container log links, libcni's result cache, containerd's
// shim sockets, the pod network namespaces. up records which were absent; down removes those.
var machineDirs = []string{"/var/lib/kubelet", "/var/lib/cni", "/var/log/containers", "/var/log/pods", "/run/containerd", "/run/netns"}

func absentDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
			out = append(out, d)
		}
	}
	return out
}

// removeMachineDirs removes the directories the lab made (namespaces and sockets only when empty).
func removeMachineDirs(made []string) error {
	var errs []error
	for _, d := range made {
		var err error
		if d == "/run/netns" || d == "/run/containerd" {
			_ = os.Remove(filepath.Join(d, "s"))
			err = os.Remove(d)
			if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
				err = nil // in use by someone else now: leave it
			}
		} else {
			err = os.RemoveAll(d)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// removeCNIResults removes libcni's cached results for the lab's pods (/var/lib/cni/results keeps one
// per network and interface, named NETWORK-CONTAINERID-IFNAME) when the directory predates the lab.
func removeCNIResults(p paths) {
	sandboxes, _ := os.ReadDir(p.join("containerd", "root", "io.containerd.grpc.v1.cri", "sandboxes"))
	ents, _ := os.ReadDir("/var/lib/cni/results")
	for _, e := range ents {
		n := e.Name()
		ours := strings.HasPrefix(n, cniNetworkName+"-")
		for _, sb := range sandboxes {
			ours = ours || strings.Contains(n, "-"+sb.Name()+"-")
		}
		if ours {
			_ = os.Remove(filepath.Join("/var/lib/cni/results", n))
		}
	}
}

// removeContainerLogLinks removes the kubelet's /var/log/containers symlinks into the lab's pod logs.
func removeContainerLogLinks(p paths) {
	ents, _ := os.ReadDir("/var/log/containers")
	for _, e := range ents {
		l := filepath.Join("/var/log/containers", e.Name())
		if t, err := os.Readlink(l); err == nil && strings.HasPrefix(t, p.join("pod-logs")+"/") {
			_ = os.Remove(l)
		}
	}
}

// removeShimSockets removes the sockets of shims that were killed rather than stopped: containerd 1.6
// names them /run/containerd/s/sha256(address/namespace/id).
func removeShimSockets(p paths) {
	tasks := filepath.Join(p.containerdState(), "io.containerd.runtime.v2.task", containerdNS)
	ents, _ := os.ReadDir(tasks)
	for _, e := range ents {
		sum := sha256.Sum256([]byte(filepath.Join(p.containerdSocket(), containerdNS, e.Name())))
		_ = os.Remove(fmt.Sprintf("/run/containerd/s/%x", sum))
	}
}

// removeBridge deletes the lab's pod bridge (the veths went with the pods' network namespaces).
func removeBridge() error {
	l, err := netlink.LinkByName(bridgeName)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("finding the %s bridge: %w", bridgeName, err)
	}
	if err := netlink.LinkDel(l); err != nil {
		return fmt.Errorf("deleting the %s bridge: %w", bridgeName, err)
	}
	return nil
}
