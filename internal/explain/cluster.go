package explain

// ClusterFacts is what explain's rules read from the live cluster (kube.Cluster.Facts reads them).
type ClusterFacts struct {
	Source string `json:"kubeconfig"`
	Nodes  int    `json:"nodes"`
	// Leases are the lease locks in kube-system (leader election).
	Leases []LeaseFact `json:"leases"`
	// ControlPlanePods counts kube-system pods per component label (static pods of kubeadm clusters).
	ControlPlanePods map[string]int `json:"control_plane_pods"`
	CoreDNS          *Deployment    `json:"coredns,omitempty"`
	// Unreadable lists what could not be read and why (RBAC, say); the rules that need it are skipped.
	Unreadable []string `json:"unreadable,omitempty"`
}

// LeaseFact is one lease lock.
type LeaseFact struct {
	Name            string  `json:"name"`
	Holder          string  `json:"holder"`
	DurationSeconds int32   `json:"lease_duration_seconds"`
	RenewedAgo      float64 `json:"renewed_seconds_ago"`
	Transitions     int32   `json:"transitions"`
}

// Deployment is a Deployment's name and desired replicas.
type Deployment struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Replicas  int32  `json:"replicas"`
}
