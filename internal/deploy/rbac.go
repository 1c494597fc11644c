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

// clusterRole is the least the agent needs: reading pods (of every namespace, since a node runs pods of
// many), to name the pod a process belongs to. It lists the pods of its own node with a field selector;
// RBAC cannot narrow a grant to one node's pods, so the role allows reading every pod, and nothing else:
// no secrets, no writes, no nodes.
func clusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: labels()},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""},
			Resources: []string{"pods"},
			Verbs:     []string{"get", "list", "watch"},
		}},
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
