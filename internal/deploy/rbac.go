package deploy

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// namespace is the agent's own namespace. Its Pod Security level is privileged: the agent needs the
// host's PID namespace, network and paths, which the baseline and restricted levels forbid, so a cluster
// enforcing either by default would refuse its pods.
func namespace(o Options) *corev1.Namespace {
	l := labels()
	l["pod-security.kubernetes.io/enforce"] = "privileged"
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Namespace, Labels: l},
	}
}

// serviceAccount is the identity the agent's pods run as.
func serviceAccount(o Options) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: o.Namespace, Labels: labels()},
	}
}

// clusterRole is the least the agent needs:
//   - list and watch pods (of every namespace, since a node runs pods of many), to name the pod a process
//     belongs to. It lists the pods of its own node with a field selector; RBAC cannot narrow a grant to one
//     node's pods, so the role allows listing every pod; no get, no writes, no secrets, no nodes;
//   - create tokenreviews and subjectaccessreviews: the agent asks the API server who a caller is and
//     whether it may read /metrics or /summary (the rules of system:auth-delegator, as the kubelet and
//     kube-rbac-proxy do).
func clusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: labels()},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		},
	}
}

// clusterRoleBinding grants clusterRole to the agent's ServiceAccount.
func clusterRoleBinding(o Options) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: labels()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: Name, Namespace: o.Namespace}},
	}
}

// clientCABinding lets the agent read the CA the cluster's client certificates are signed by (the API
// server's ConfigMap kube-system/extension-apiserver-authentication), through the Role the API server
// keeps for that, so that callers with a client certificate (kubectl's usual admin credentials) are
// recognised as by the API server.
func clientCABinding(o Options) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: Name + "-client-ca", Namespace: "kube-system", Labels: labels()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: Name, Namespace: o.Namespace}},
	}
}

// Roles for the agents' readers, bound by the cluster's administrator to whom may read them.
const (
	// MetricsReaderRole may get the agents' /metrics: Prometheus's ServiceAccount. kube-prometheus's
	// prometheus-k8s role already grants get on the non-resource URL /metrics, which covers it.
	MetricsReaderRole = "tare-agent-metrics-reader"
	// ClusterReaderRole is what tare cluster measure needs: list nodes and pods, and get the agents'
	// /summary (every process's CPU and memory, by program and group, and by command line when the agents
	// serve them).
	ClusterReaderRole = "tare-cluster-reader"
)

// readerRoles are the roles of the agents' readers.
func readerRoles() []*rbacv1.ClusterRole {
	role := func(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels()},
			Rules:      rules,
		}
	}
	return []*rbacv1.ClusterRole{
		role(MetricsReaderRole, rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}),
		role(ClusterReaderRole,
			rbacv1.PolicyRule{NonResourceURLs: []string{"/summary"}, Verbs: []string{"get"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: []string{"list"}}),
	}
}
