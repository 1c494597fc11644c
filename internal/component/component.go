package component

import "slices"

// Role is what a component does in a cluster.
type Role string

// Roles, from the control plane down to the tools people run now and then.
const (
	RoleControlPlane Role = "control-plane" // etcd, the API server, the controller managers, the scheduler
	RoleNode         Role = "node"          // the node's agents: kubelet, kube-proxy
	RoleRuntime      Role = "runtime"       // the container runtime's daemon: containerd, dockerd, CRI-O
	RolePodRuntime   Role = "pod-runtime"   // what the runtime runs for each pod: shims, runc, pause, CNI plugins
	RoleAddon        Role = "addon"         // cluster add-ons: DNS, network daemons, metrics-server
	RoleDistribution Role = "distribution"  // a whole cluster in one program (k3s)
	RoleSimulator    Role = "simulator"     // fake nodes and pods (kwok)
	RoleTool         Role = "tool"          // clients run now and then: kubectl, etcdctl, tare
)

// Source is how tare's lab gets a component's program.
type Source string

// Sources of the lab's programs.
const (
	// SourceNone: the lab does not install the program (it does not use it, or the program comes with
	// another component's, as containerd's shims come with containerd).
	SourceNone Source = ""
	// SourceUpstream: built from the k8s.io/kubernetes module at the lab's pinned Kubernetes version.
	SourceUpstream Source = "upstream"
	// SourceDebian: installed with apt-get from the Debian package named in Lab.Package.
	SourceDebian Source = "debian"
	// SourceGoInstall: installed with go install at the lab's pinned version of Lab.Module.
	SourceGoInstall Source = "go install"
)

// Endpoint is where a component serves /metrics and /debug/pprof by upstream default.
type Endpoint struct {
	Port int  // TCP port; 0 when it serves none by default (containerd's pprof is on its debug socket)
	TLS  bool // https rather than http
}

// Lab is what tare's lab does with a component. The zero Lab means the lab neither needs nor runs it.
type Lab struct {
	Source  Source
	Package string // the Debian package that ships Program (SourceDebian)
	Module  string // the Go package built (SourceUpstream) or installed (SourceGoInstall)
	// Program is the executable the lab needs: a name looked up on PATH, an absolute path, or the name of
	// the file tare builds or installs into its cache.
	Program string
	// Daemon: the program runs for the lab's lifetime with the lab directory on its command line (started
	// by the lab, or by containerd for its shims); down finds a lost one by that.
	Daemon bool
	// Tunable: --set and the lab's profiles may change its flags.
	Tunable bool
	// Node: part of the lab's node, left out of a control-plane-only lab.
	Node bool
}

// Entry is one component and every fact tare keeps about it.
type Entry struct {
	// Name is the group its processes are reported under and the name --set and --pprof take; for the
	// control plane, it is also the component label kubeadm gives its static pods.
	Name string
	// Programs are the executable names that are this component: the base name of /proc/PID/exe or of
	// argv[0], the first argument of a multi-call program (hyperkube, k3s), or comm (cut to 15 bytes).
	Programs []string
	// Dir recognises a component by the directory its executables live in (CNI plugins are many small
	// programs in a cni directory); "" for none.
	Dir     string
	Role    Role
	Metrics Endpoint
	// Lease is the name of its leader-election lease in kube-system; "" when it takes none.
	Lease string
	Lab   Lab
}

// InLab says whether tare's lab needs or runs the component.
func (e Entry) InLab() bool { return e.Lab.Program != "" }

// Core says whether the component is one of the lab's own control plane, node agents or container runtime:
// the groups experiments and benchmarks report one by one.
func (e Entry) Core() bool {
	switch e.Role {
	case RoleControlPlane, RoleNode, RoleRuntime:
		return e.InLab()
	}
	return false
}

// All returns every component, in the order reports list them. The slice is the caller's.
func All() []Entry { return slices.Clone(registry) }

// Lookup returns the component named name.
func Lookup(name string) (Entry, bool) {
	i := slices.IndexFunc(registry, func(e Entry) bool { return e.Name == name })
	if i < 0 {
		return Entry{}, false
	}
	return registry[i], true
}

// Names lists, in report order, the names of the components keep accepts (all of them when keep is nil).
func Names(keep func(Entry) bool) []string {
	var out []string
	for _, e := range registry {
		if keep == nil || keep(e) {
			out = append(out, e.Name)
		}
	}
	return out
}

// LabPrograms lists, in report order, the programs (Lab.Program) of the lab's components keep accepts (all
// of them when keep is nil): the names their processes have, containerd's shims' included.
func LabPrograms(keep func(Entry) bool) []string {
	var out []string
	for _, e := range registry {
		if e.InLab() && (keep == nil || keep(e)) {
			out = append(out, e.Lab.Program)
		}
	}
	return out
}
