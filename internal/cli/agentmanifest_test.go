package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/deploy"
)

// TestAgentManifestGolden: tare agent manifest prints exactly the golden YAML and, with -o json, the golden
// List, with nothing on stderr.
func TestAgentManifestGolden(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"agentmanifest.yaml", []string{"agent", "manifest"}},
		{"agentmanifest.json", []string{"agent", "manifest", "-o", "json"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, err := run(context.Background(), tt.args...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", tt.args, err, errOut)
			}
			golden(t, tt.name+".stdout", out)
			golden(t, tt.name+".stderr", errOut)
		})
	}
}

// TestAgentManifestFlags: each flag reaches the manifest; a bad value is a usage error saying what to give.
func TestAgentManifestFlags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	out, errOut, err := run(ctx, "agent", "manifest", "--namespace", "monitoring", "--image", "registry.example.com/tare:v1",
		"--interval", "500ms", "--port", "19847")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{"\n  namespace: monitoring\n", "name: monitoring\n", "image: registry.example.com/tare:v1\n",
		"- --interval=500ms\n", "- --listen=0.0.0.0:19847\n", "containerPort: 19847\n", `prometheus.io/port: "19847"`} {
		if !strings.Contains(out, want) {
			t.Errorf("manifest lacks %q:\n%s", want, out)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--namespace", "Bad_NS"}, `namespace "Bad_NS"`},
		{[]string{"--port", "70000"}, "from 1 to 65535"},
		{[]string{"--interval", "-1s"}, "--interval must be positive"},
		{[]string{"extra"}, "unknown command"},
	} {
		out, errOut, err := run(ctx, append([]string{"agent", "manifest"}, tt.args...)...)
		var ec ExitCoder
		if !errors.As(err, &ec) || ec.ExitCode() != 2 || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("%v: %v (want exit 2 with %q), stdout %q, stderr %q", tt.args, err, tt.want, out, errOut)
		}
	}
}

// TestAgentImage writes the agent's image as `tare agent image --out` does and checks it is the OCI archive
// `ctr images import` reads, named as the manifest's default image.
func TestAgentImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tare")
	}
	out := filepath.Join(t.TempDir(), "tare-image.tar")
	var stdout, stderr bytes.Buffer
	cmd := newAgentImage(streams{out: &stdout, err: &stderr}, &globalOptions{output: "table"})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs([]string{"--out", out})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "ctr -n k8s.io images import "+out) {
		t.Errorf("stderr: %q", stderr.String())
	}
	list := exec.Command("tar", "-tf", out)
	b, err := list.Output()
	if err != nil {
		t.Fatalf("tar -tf %s: %v", out, err)
	}
	if !strings.Contains(string(b), "index.json\n") || strings.Count(string(b), "blobs/sha256/") != 3 {
		t.Errorf("archive holds:\n%s", b)
	}
	idx, err := exec.Command("tar", "-xOf", out, "index.json").Output()
	if err != nil || !strings.Contains(string(idx), `"io.containerd.image.name":"`+deploy.DefaultImage+`"`) {
		t.Errorf("index.json %s: %v", idx, err)
	}
	cmd = newAgentImage(streams{out: &stdout, err: &stderr}, &globalOptions{output: "table"})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(nil)
	if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "--out FILE.tar is required") {
		t.Errorf("without --out: %v", err)
	}
}

// checkAgentRBAC asks the API server what the agent's ServiceAccount may do: list and watch pods
// everywhere, review tokens and rights, read the client CA's ConfigMap, and nothing else it is asked about.
func checkAgentRBAC(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	user := "system:serviceaccount:" + deploy.DefaultNamespace + ":" + deploy.Name
	for _, tt := range []struct {
		verb, group, resource, namespace, name string
		allowed                                bool
	}{
		// the API server's Role lets it read the client CA's ConfigMap, and no other
		{"get", "", "configmaps", "kube-system", "extension-apiserver-authentication", true},
		{"get", "", "configmaps", "kube-system", "kubeadm-config", false},
		{"list", "", "pods", "", "", true},
		{"watch", "", "pods", "", "", true},
		{"get", "", "pods", "kube-system", "", false},
		{"create", "authentication.k8s.io", "tokenreviews", "", "", true},
		{"create", "authorization.k8s.io", "subjectaccessreviews", "", "", true},
		{"list", "", "configmaps", "default", "", false},
		{"create", "", "pods", "default", "", false},
		{"delete", "", "pods", "default", "", false},
		{"get", "", "pods/log", "default", "", false},
		{"list", "", "secrets", "", "", false},
		{"get", "", "nodes", "", "", false},
		{"list", "apps", "daemonsets", "", "", false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: tt.verb, Group: tt.group, Resource: tt.resource, Namespace: tt.namespace, Name: tt.name},
		}}
		got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != tt.allowed {
			t.Errorf("%s may %s %s/%s in %q: %v, want %v", user, tt.verb, tt.group, tt.resource, tt.namespace, got.Status.Allowed, tt.allowed)
		}
	}
}

// waitAgentReady waits for the agent's pod on node to be Ready. While `tare agent` itself is not built,
// the pod starts (image, capabilities and host mounts accepted) and its container exits saying so: the
// test skips then, having checked all it could.
func waitAgentReady(ctx context.Context, t *testing.T, cs kubernetes.Interface, node string) *corev1.Pod {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: deploy.NameLabel + "=" + deploy.Name, FieldSelector: "spec.nodeName=" + node}
	var last string
	for {
		pods, err := cs.CoreV1().Pods(deploy.DefaultNamespace).List(ctx, sel)
		if err == nil && len(pods.Items) == 1 {
			p := &pods.Items[0]
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					return p
				}
			}
			b, _ := json.Marshal(p.Status.ContainerStatuses)
			last = string(b)
			if len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount > 0 {
				logs, _ := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Previous: true}).DoRaw(ctx)
				if strings.Contains(string(logs), "tare agent is not built yet") {
					t.Skipf("the agent's pod ran the tare image on node %s, but tare agent is not built yet:\n%s", node, logs)
				}
				last += "\nlogs: " + string(logs)
			}
		} else {
			last = fmt.Sprintf("%d pods, %v", len(pods.Items), err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the agent's pod on %s is not Ready: %s", node, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// kubectlIn runs kubectl with stdin.
func kubectlIn(t *testing.T, kubeconfig, stdin string, args ...string) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, b)
	}
}
