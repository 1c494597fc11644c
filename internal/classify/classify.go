package classify

import (
	"regexp"
	"strings"

	"github.com/tare-dev/tare/internal/component"
)

// Group kinds.
const (
	KindComponent = "component"
	KindPod       = "pod"
	KindKernel    = "kernel"
	KindSelf      = "self"
	KindOther     = "other"
	// KindForeign is a pod another kubelet runs on the same kernel: another node of a cluster whose nodes
	// share one machine (tare's multi-node lab; kind and minikube nodes are containers with a PID
	// namespace each and never show another node's processes). See ForeignGroup.
	KindForeign = "foreign"
)

// ForeignGroup is the one group of every KindForeign process.
const ForeignGroup = "pods of other nodes"

// Component returns the Kubernetes component a process is, from its executable path, comm and redacted
// command line, or "" if it is none of them. The components and how each is recognised are the registry's
// (internal/component).
func Component(exe, comm, cmdline string) string { return component.Recognise(exe, comm, cmdline) }

// Pod is what a cgroup path says about the pod a process runs in.
type Pod struct {
	UID       string // pod UID with dashes
	Container string // container ID (64 hex) or "" for the pod-level cgroup
	QoS       string // guaranteed, burstable or besteffort
	// Root is the cgroup path above the kubelet's kubepods cgroup, ending in "/": "/" on a node, the
	// node's own cgroup on a node that is a container or a lab node. Pods with different roots belong
	// to different kubelets.
	Root string
}

var (
	podSegment      = regexp.MustCompile(`^(?:kubepods-(?:burstable-|besteffort-)?)?pod([0-9a-fA-F_\-]{32,36})(?:\.slice)?$`)
	containerSuffix = regexp.MustCompile(`^(?:cri-containerd-|docker-|crio-|containerd-)?([0-9a-f]{64})(?:\.scope)?$`)
)

// PodFromCgroup parses a cgroup path such as /kubepods/burstable/pod<uid>/<id> (cgroupfs driver) or
// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/cri-containerd-<id>.scope
// (systemd driver), also nested inside another container (kind, minikube). ok is false outside a pod.
func PodFromCgroup(p string) (Pod, bool) {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if !strings.HasPrefix(s, "kubepods") {
			continue
		}
		pod := Pod{Root: strings.Join(segs[:i], "/") + "/"}
		for _, t := range segs[i:] {
			switch {
			case strings.Contains(t, "burstable") && pod.UID == "":
				pod.QoS = "burstable"
			case strings.Contains(t, "besteffort") && pod.UID == "":
				pod.QoS = "besteffort"
			}
			if m := podSegment.FindStringSubmatch(t); m != nil {
				pod.UID = strings.ReplaceAll(m[1], "_", "-")
				continue
			}
			if m := containerSuffix.FindStringSubmatch(t); m != nil && pod.UID != "" {
				pod.Container = m[1]
			}
		}
		if pod.UID == "" {
			return Pod{}, false
		}
		if pod.QoS == "" {
			pod.QoS = "guaranteed"
		}
		return pod, true
	}
	return Pod{}, false
}

// Result is the group a process belongs to.
type Result struct {
	Group string
	Kind  string
	Pod   Pod
	InPod bool
}

// Process classifies one process. A recognised component wins over its pod (kube-proxy or coredns running
// as pods are still named as components); other pod processes are grouped per pod.
func Process(exe, comm, cmdline, cgroup string, kernel, self bool) Result {
	pod, inPod := PodFromCgroup(cgroup)
	r := Result{Pod: pod, InPod: inPod}
	switch {
	case self:
		r.Group, r.Kind = "tare (self)", KindSelf
	case kernel:
		r.Group, r.Kind = "kernel threads", KindKernel
	default:
		if c := Component(exe, comm, cmdline); c != "" {
			r.Group, r.Kind = c, KindComponent
		} else if inPod {
			r.Group, r.Kind = "pod "+pod.UID, KindPod
		} else {
			r.Group, r.Kind = "other", KindOther
		}
	}
	return r
}
