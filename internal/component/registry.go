package component

// registry is every component tare knows, in the order reports list them: the lab's control plane, its
// node and runtime, kwok, then the components of other clusters and the tools. Ports are the upstream
// defaults; the lab moves etcd's off 2379 (see internal/lab/ports.go).
var registry = []Entry{
	{Name: Etcd, Programs: []string{"etcd"}, Role: RoleControlPlane, Metrics: Endpoint{Port: 2379},
		Lab: Lab{Source: SourceDebian, Package: "etcd-server", Program: "etcd", Daemon: true, Tunable: true}},
	{Name: APIServer, Programs: []string{"kube-apiserver"}, Role: RoleControlPlane, Metrics: Endpoint{Port: 6443, TLS: true},
		Lab: Lab{Source: SourceUpstream, Module: "k8s.io/kubernetes/cmd/kube-apiserver", Program: "kube-apiserver", Daemon: true, Tunable: true}},
	{Name: ControllerManager, Programs: []string{"kube-controller-manager"}, Role: RoleControlPlane,
		Metrics: Endpoint{Port: 10257, TLS: true}, Lease: "kube-controller-manager",
		Lab: Lab{Source: SourceUpstream, Module: "k8s.io/kubernetes/cmd/kube-controller-manager", Program: "kube-controller-manager", Daemon: true, Tunable: true}},
	{Name: Scheduler, Programs: []string{"kube-scheduler"}, Role: RoleControlPlane,
		Metrics: Endpoint{Port: 10259, TLS: true}, Lease: "kube-scheduler",
		Lab: Lab{Source: SourceUpstream, Module: "k8s.io/kubernetes/cmd/kube-scheduler", Program: "kube-scheduler", Daemon: true, Tunable: true}},
	{Name: Kubelet, Programs: []string{"kubelet"}, Role: RoleNode, Metrics: Endpoint{Port: 10250, TLS: true},
		Lab: Lab{Source: SourceUpstream, Module: "k8s.io/kubernetes/cmd/kubelet", Program: "kubelet", Daemon: true, Tunable: true, Node: true}},
	{Name: KubeProxy, Programs: []string{"kube-proxy"}, Role: RoleNode, Metrics: Endpoint{Port: 10249},
		Lab: Lab{Source: SourceUpstream, Module: "k8s.io/kubernetes/cmd/kube-proxy", Program: "kube-proxy", Daemon: true, Tunable: true, Node: true}},
	{Name: Containerd, Programs: []string{"containerd"}, Role: RoleRuntime,
		Lab: Lab{Source: SourceDebian, Package: "containerd", Program: "containerd", Daemon: true, Node: true}},
	{Name: ContainerdShim, Programs: []string{"containerd-shim", "containerd-shim-runc-v1", "containerd-shim-runc-v2"}, Role: RolePodRuntime,
		Lab: Lab{Program: "containerd-shim-runc-v2", Daemon: true, Node: true}},
	{Name: Runc, Programs: []string{"runc", "crun"}, Role: RolePodRuntime,
		Lab: Lab{Source: SourceDebian, Package: "runc", Program: "runc", Node: true}},
	{Name: CNI, Dir: "cni", Role: RolePodRuntime,
		Lab: Lab{Source: SourceDebian, Package: "containernetworking-plugins", Program: "/usr/lib/cni/bridge", Node: true}},
	{Name: Pause, Programs: []string{"pause"}, Role: RolePodRuntime},
	{Name: Kwok, Programs: []string{"kwok"}, Role: RoleSimulator,
		Lab: Lab{Source: SourceGoInstall, Module: "sigs.k8s.io/kwok/cmd/kwok", Program: "kwok", Daemon: true, Tunable: true}},

	{Name: "cloud-controller-manager", Programs: []string{"cloud-controller-manager"}, Role: RoleControlPlane},
	{Name: CoreDNS, Programs: []string{"coredns"}, Role: RoleAddon},
	{Name: "dockerd", Programs: []string{"dockerd", "docker-proxy"}, Role: RoleRuntime},
	{Name: "cri-dockerd", Programs: []string{"cri-dockerd"}, Role: RoleRuntime},
	{Name: "cri-o", Programs: []string{"crio", "conmon"}, Role: RoleRuntime},
	{Name: "k3s", Programs: []string{"k3s", "k3s-server", "k3s-agent"}, Role: RoleDistribution},
	{Name: "kube-addon-manager", Programs: []string{"kube-addon-manager"}, Role: RoleAddon},
	{Name: "flannel", Programs: []string{"flanneld"}, Role: RoleAddon},
	{Name: "calico", Programs: []string{"calico-node"}, Role: RoleAddon},
	{Name: "cilium", Programs: []string{"cilium-agent"}, Role: RoleAddon},
	{Name: "kindnet", Programs: []string{"kindnetd"}, Role: RoleAddon},
	{Name: "metrics-server", Programs: []string{"metrics-server"}, Role: RoleAddon},
	{Name: "kubectl", Programs: []string{"kubectl"}, Role: RoleTool},
	{Name: "etcdctl", Programs: []string{"etcdctl"}, Role: RoleTool},
	{Name: "tare", Programs: []string{"tare"}, Role: RoleTool},
}

// multiCall are programs that run the component named by their first argument (hyperkube kubelet …,
// k3s server …): not components themselves, except k3s, which is one when its argument names none.
var multiCall = map[string]bool{"hyperkube": true, "k3s": true, "kube": true}
