package machine

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/tare-dev/tare/internal/kernel"
)

// Residue is what the components leave on the machine outside the lab directory whatever they are told:
// directories, container log links, containerd's shim sockets, libcni's cached results and the pod
// bridge. Up records which machine directories were absent (AbsentDirs of Dirs); Down removes those
// (RemoveDirs) and the rest.

// Dirs are directories outside the lab directory that the components create whatever they are told:
// kubelet's device-plugins directory and container log links, libcni's result cache, containerd's shim
// sockets, the pod network namespaces. up records which were absent; down removes those.
var Dirs = []string{"/var/lib/kubelet", "/var/lib/cni", "/var/log/containers", "/var/log/pods", "/run/containerd", netnsDir}

// AbsentDirs lists the directories of dirs that do not exist.
func AbsentDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
			out = append(out, d)
		}
	}
	return out
}

// RemoveDirs removes the directories the lab made (namespaces and sockets only when empty).
func RemoveDirs(made []string) error {
	var errs []error
	for _, d := range made {
		var err error
		if d == netnsDir || d == "/run/containerd" {
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

// RemoveCNIResults removes libcni's cached results for the lab's pods (/var/lib/cni/results keeps one
// per network and interface, named NETWORK-CONTAINERID-IFNAME): those of the network named network and of
// the pod sandboxes listed in sandboxes (containerd's directory of them).
func RemoveCNIResults(network, sandboxes string) {
	ids, _ := os.ReadDir(sandboxes)
	ents, _ := os.ReadDir("/var/lib/cni/results")
	for _, e := range ents {
		n := e.Name()
		ours := strings.HasPrefix(n, network+"-")
		for _, sb := range ids {
			ours = ours || strings.Contains(n, "-"+sb.Name()+"-")
		}
		if ours {
			_ = os.Remove(filepath.Join("/var/lib/cni/results", n))
		}
	}
}

// RemoveContainerLogLinks removes the kubelet's /var/log/containers symlinks into podLogs, the lab's pod
// logs.
func RemoveContainerLogLinks(podLogs string) {
	ents, _ := os.ReadDir("/var/log/containers")
	for _, e := range ents {
		l := filepath.Join("/var/log/containers", e.Name())
		if t, err := os.Readlink(l); err == nil && strings.HasPrefix(t, podLogs+"/") {
			_ = os.Remove(l)
		}
	}
}

// RemoveShimSockets removes the sockets of shims that were killed rather than stopped: containerd 1.6
// names them /run/containerd/s/sha256(address/namespace/id), for containerd at socket whose tasks of
// namespace ns are in tasks.
func RemoveShimSockets(tasks, socket, ns string) {
	ents, _ := os.ReadDir(tasks)
	for _, e := range ents {
		sum := sha256.Sum256([]byte(filepath.Join(socket, ns, e.Name())))
		_ = os.Remove(fmt.Sprintf("/run/containerd/s/%x", sum))
	}
}

// HasLink says whether the machine has a link named name.
func HasLink(name string) bool { return kernel.HasLink(kernel.HostSys, name) }

// RemoveLink deletes the link name (the lab's pod bridge: its veths went with the pods' network
// namespaces), if there is one.
func RemoveLink(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("finding the %s bridge: %w", name, err)
	}
	if err := netlink.LinkDel(l); err != nil {
		return fmt.Errorf("deleting the %s bridge: %w", name, err)
	}
	return nil
}
