package component

// Names of the components tare's code refers to one by one. Each is the Name of an entry in the registry;
// a test checks that every constant has one.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Kubelet           = "kubelet"
	KubeProxy         = "kube-proxy"
	Containerd        = "containerd"
	ContainerdShim    = "containerd-shim"
	Runc              = "runc"
	CNI               = "cni"
	Pause             = "pause"
	Kwok              = "kwok"
	CoreDNS           = "coredns"
)
