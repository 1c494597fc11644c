package deploy

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
)

// strict decodes manifests as the API server's typed decoding does, refusing unknown and duplicate
// fields.
var strict = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

var quantities = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// decodeYAML splits a multi-document stream and decodes each document strictly into its typed object.
func decodeYAML(t *testing.T, b []byte) []runtime.Object {
	t.Helper()
	var objs []runtime.Object
	for i, doc := range strings.Split(string(b), "\n---\n") {
		obj, gvk, err := strict.Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("document %d does not decode strictly: %v\n%s", i, err, doc)
		}
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
		objs = append(objs, obj)
	}
	return objs
}

func objects(t *testing.T, o Options) []runtime.Object {
	t.Helper()
	objs, err := Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestManifestDecodesStrictly: the YAML and the JSON List decode strictly into exactly the typed objects
// Objects built, in the order they apply.
func TestManifestDecodesStrictly(t *testing.T) {
	t.Parallel()
	if _, _, err := strict.Decode([]byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\nbogus: 1\n"), nil, nil); err == nil {
		t.Fatal("the decoder accepts an unknown field: it is not strict")
	}
	want := objects(t, Options{})
	var y bytes.Buffer
	if err := WriteYAML(&y, want); err != nil {
		t.Fatal(err)
	}
	got := decodeYAML(t, y.Bytes())
	if diff := cmp.Diff(want, got, quantities); diff != "" {
		t.Errorf("YAML round trip (-built +decoded):\n%s", diff)
	}
	var kinds []string
	for _, obj := range got {
		kinds = append(kinds, obj.GetObjectKind().GroupVersionKind().Kind)
	}
	if diff := cmp.Diff([]string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "RoleBinding", "ClusterRole", "ClusterRole", "DaemonSet"}, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}

	var j bytes.Buffer
	if err := WriteJSON(&j, want); err != nil {
		t.Fatal(err)
	}
	obj, _, err := strict.Decode(j.Bytes(), nil, nil)
	if err != nil {
		t.Fatalf("the JSON List does not decode strictly: %v", err)
	}
	list, ok := obj.(*corev1.List)
	if !ok || len(list.Items) != len(want) {
		t.Fatalf("JSON decodes to %T with %d items", obj, len(list.Items))
	}
	for i, item := range list.Items {
		obj, gvk, err := strict.Decode(item.Raw, nil, nil)
		if err != nil {
			t.Fatalf("list item %d: %v", i, err)
		}
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
		if diff := cmp.Diff(want[i], obj, quantities); diff != "" {
			t.Errorf("JSON item %d (-built +decoded):\n%s", i, diff)
		}
	}
}

// TestRBACIsNarrow: the agent may list and watch pods, review tokens and rights, and read the cluster's
// client CA through the API server's own Role, and nothing else; the readers' roles grant one path each
// (and what tare cluster measure lists).
func TestRBACIsNarrow(t *testing.T) {
	t.Parallel()
	roles := map[string]*rbacv1.ClusterRole{}
	var bindings []*rbacv1.ClusterRoleBinding
	var roleBindings []*rbacv1.RoleBinding
	for _, obj := range objects(t, Options{Namespace: "monitoring"}) {
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			roles[o.Name] = o
			if o.AggregationRule != nil {
				t.Errorf("%s must not aggregate others", o.Name)
			}
		case *rbacv1.ClusterRoleBinding:
			bindings = append(bindings, o)
		case *rbacv1.RoleBinding:
			roleBindings = append(roleBindings, o)
		case *rbacv1.Role:
			t.Errorf("unexpected Role %s", o.Name)
		}
	}
	want := map[string][]rbacv1.PolicyRule{
		Name: {
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		},
		MetricsReaderRole: {{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		ClusterReaderRole: {
			{NonResourceURLs: []string{"/summary"}, Verbs: []string{"get"}},
			{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: []string{"list"}},
		},
	}
	if len(roles) != len(want) {
		t.Errorf("%d ClusterRoles, want %d", len(roles), len(want))
	}
	for name, rules := range want {
		if roles[name] == nil {
			t.Errorf("no ClusterRole %s", name)
			continue
		}
		if diff := cmp.Diff(rules, roles[name].Rules); diff != "" {
			t.Errorf("%s's rules (-want +got):\n%s", name, diff)
		}
	}
	wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: Name, Namespace: "monitoring"}}
	if len(bindings) != 1 || len(roleBindings) != 1 {
		t.Fatalf("%d ClusterRoleBindings and %d RoleBindings, want one of each: the readers' roles are bound by the administrator", len(bindings), len(roleBindings))
	}
	b := bindings[0]
	if diff := cmp.Diff(wantSubjects, b.Subjects); diff != "" || b.RoleRef.Name != Name || b.RoleRef.Kind != "ClusterRole" {
		t.Errorf("binding %+v (subjects -want +got:\n%s)", b, diff)
	}
	rb := roleBindings[0]
	if diff := cmp.Diff(wantSubjects, rb.Subjects); diff != "" || rb.Namespace != "kube-system" ||
		rb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"}) {
		t.Errorf("role binding %+v (subjects -want +got:\n%s)", rb, diff)
	}
}

func daemonSetOf(t *testing.T, objs []runtime.Object) *appsv1.DaemonSet {
	t.Helper()
	for _, obj := range objs {
		if ds, ok := obj.(*appsv1.DaemonSet); ok {
			return ds
		}
	}
	t.Fatal("no DaemonSet")
	return nil
}

// TestOptionsChangeTheManifest: --namespace, --image, --interval and --port reach every place they
// belong, and only those.
func TestOptionsChangeTheManifest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		opts     Options
		ns, img  string
		interval string
		port     int32
	}{
		{"defaults", Options{}, "tare", "tare.dev/tare:dev", "1s", 9847},
		{"all set", Options{Namespace: "monitoring", Image: "registry.example.com/tare:v1", Interval: 250 * time.Millisecond, Port: 19847},
			"monitoring", "registry.example.com/tare:v1", "250ms", 19847},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			objs := objects(t, tt.opts)
			for _, obj := range objs {
				m := obj.(metav1.Object)
				switch obj.(type) {
				case *corev1.Namespace:
					if m.GetName() != tt.ns {
						t.Errorf("namespace object named %q, want %q", m.GetName(), tt.ns)
					}
				case *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
					if m.GetNamespace() != "" {
						t.Errorf("cluster-scoped %T in namespace %q", obj, m.GetNamespace())
					}
				case *rbacv1.RoleBinding:
					if m.GetNamespace() != "kube-system" {
						t.Errorf("the client CA's RoleBinding in namespace %q, want kube-system", m.GetNamespace())
					}
				default:
					if m.GetNamespace() != tt.ns {
						t.Errorf("%T in namespace %q, want %q", obj, m.GetNamespace(), tt.ns)
					}
				}
			}
			ds := daemonSetOf(t, objs)
			c := ds.Spec.Template.Spec.Containers[0]
			if c.Image != tt.img {
				t.Errorf("image %q, want %q", c.Image, tt.img)
			}
			wantArgs := []string{"agent", "--listen=0.0.0.0:" + itoa(tt.port), "--health-listen=127.0.0.1:" + itoa(tt.port+1), "--interval=" + tt.interval, "--node=$(NODE_NAME)",
				"--proc-root=/host/proc", "--sys-root=/host/sys", "--host-root=/host/root"}
			if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			wantPorts := []corev1.ContainerPort{{Name: "metrics", ContainerPort: tt.port, HostPort: tt.port, Protocol: corev1.ProtocolTCP}}
			if diff := cmp.Diff(wantPorts, c.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
			if got := ds.Spec.Template.Annotations["prometheus.io/port"]; got != itoa(tt.port) {
				t.Errorf("prometheus.io/port = %q", got)
			}
		})
	}
}

func itoa(p int32) string { return strconv.Itoa(int(p)) }

// TestDaemonSetRunsOnTheHost: what the agent needs from the node, and that it asks no more.
func TestDaemonSetRunsOnTheHost(t *testing.T) {
	t.Parallel()
	ds := daemonSetOf(t, objects(t, Options{}))
	p := ds.Spec.Template.Spec
	c := p.Containers[0]
	if !p.HostPID || !p.HostNetwork || p.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("hostPID %v, hostNetwork %v, dnsPolicy %s", p.HostPID, p.HostNetwork, p.DNSPolicy)
	}
	if p.ServiceAccountName != Name || p.PriorityClassName != "system-node-critical" {
		t.Errorf("serviceAccountName %q, priorityClassName %q", p.ServiceAccountName, p.PriorityClassName)
	}
	if diff := cmp.Diff([]corev1.Toleration{{Operator: corev1.TolerationOpExists}}, p.Tolerations); diff != "" {
		t.Errorf("tolerations must let the agent run on every node (-want +got):\n%s", diff)
	}
	if ds.Spec.Selector.MatchLabels[NameLabel] != Name || ds.Spec.Template.Labels[NameLabel] != Name {
		t.Errorf("selector %v, pod labels %v", ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly {
			t.Errorf("mount %s is writable", m.MountPath)
		}
		mounts[m.Name] = m.MountPath
	}
	for _, v := range p.Volumes {
		if v.HostPath == nil {
			t.Errorf("volume %s is not a host path", v.Name)
			continue
		}
		mounts[v.Name] = v.HostPath.Path + " -> " + mounts[v.Name]
	}
	wantMounts := map[string]string{"proc": "/proc -> /host/proc", "sys": "/sys -> /host/sys", "boot": "/boot -> /host/root/boot"}
	if diff := cmp.Diff(wantMounts, mounts); diff != "" {
		t.Errorf("host mounts (-want +got):\n%s", diff)
	}
	sc := c.SecurityContext
	if sc.Privileged != nil && *sc.Privileged {
		t.Error("the agent must not be privileged")
	}
	if diff := cmp.Diff([]corev1.Capability{"ALL"}, sc.Capabilities.Drop); diff != "" {
		t.Errorf("drop (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.Capability{"NET_ADMIN", "SYS_PTRACE", "DAC_READ_SEARCH", "BPF", "PERFMON"}, sc.Capabilities.Add); diff != "" {
		t.Errorf("add (-want +got):\n%s", diff)
	}
	if env := c.Env[0]; env.Name != "NODE_NAME" || env.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("NODE_NAME comes from %+v", env)
	}
	for _, pr := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		if pr == nil || pr.HTTPGet == nil || pr.HTTPGet.Path != "/healthz" || pr.HTTPGet.Host != "127.0.0.1" ||
			pr.HTTPGet.Port.IntValue() != DefaultPort+1 || pr.HTTPGet.Scheme != corev1.URISchemeHTTP {
			t.Errorf("probe %+v, want GET /healthz on the node's 127.0.0.1:%d", pr, DefaultPort+1)
		}
	}
	if sc := p.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v, want the runtime's default seccomp profile", sc)
	}
	if env := c.Env[1]; env.Name != "GOMEMLIMIT" || env.Value == "" {
		t.Errorf("GOMEMLIMIT %+v", env)
	} else if q, err := resource.ParseQuantity(strings.TrimSuffix(env.Value, "B")); err != nil || q.Value() > c.Resources.Limits.Memory().Value()*4/5 {
		t.Errorf("GOMEMLIMIT %s (%v): want at most 80%% of the memory limit %s, so the runtime collects before the kernel kills", env.Value, err, c.Resources.Limits.Memory())
	}
	res := c.Resources
	if _, ok := res.Limits[corev1.ResourceCPU]; ok {
		t.Error("a CPU limit would throttle the sampler")
	}
	if res.Requests.Cpu().MilliValue() != 20 || res.Requests.Memory().Value() != 64<<20 || res.Limits.Memory().Value() != 256<<20 {
		t.Errorf("resources %v", res)
	}
}

// TestOptionsRefused: what the API server would refuse is refused first, with what to give instead.
func TestOptionsRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		opts Options
		want string
	}{
		{Options{Namespace: "Tare_NS"}, `namespace "Tare_NS"`},
		{Options{Image: "tare dev"}, "has no spaces"},
		{Options{Interval: -time.Second}, "positive sampling interval"},
		{Options{Port: 70000}, "from 1 to 65535"},
		{Options{Port: -1}, "from 1 to 65535"},
		{Options{Port: 65535}, "health port 65536"},
		{Options{Port: 9000, HealthPort: 9000}, "other than the port"},
	}
	for _, tt := range tests {
		if _, err := Objects(tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want an error with %q", tt.opts, err, tt.want)
		}
	}
}
