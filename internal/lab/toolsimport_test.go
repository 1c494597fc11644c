package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/lab/images"
	"github.com/tare-dev/tare/internal/testenv"
)

// TestImportToolsImage starts a real lab of two nodes (one when the machine cannot run more), imports the
// datapath tools image into every node's containerd, and runs the tools in pods: on node 1 each tool's
// --version runs to Succeeded; on the last node `iperf3 -s -1` answers the machine's iperf3 client for one
// second. A second import finds the image on every node and only checks.
func TestImportToolsImage(t *testing.T) {
	if testing.Short() { // before the tools are looked for
		t.Skip("starts a real lab")
	}
	if err := images.CheckTools(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	nodes := 2
	if _, err := (UpOptions{Nodes: nodes}).checkNodes(); err != nil {
		t.Logf("one node only: %v", err)
		nodes = 1
	}
	ctx, st := upLab(t, UpOptions{Nodes: nodes}, 10*time.Minute)
	dir := st.Dir
	for i, want := range []time.Duration{time.Minute, 3 * time.Second} {
		start := time.Now()
		if err := at(dir).ImportToolsImage(ctx); err != nil {
			t.Fatalf("import %d: %v", i+1, err)
		}
		took := time.Since(start)
		t.Logf("import %d into %d nodes took %s", i+1, nodes, took.Round(time.Millisecond))
		if took > want {
			t.Errorf("import %d took %s, want at most %s", i+1, took.Round(time.Millisecond), want)
		}
	}
	a, err := images.ToolsArchive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Client(st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var versions []corev1.Container
	for _, tool := range a.Tools {
		versions = append(versions, corev1.Container{Name: tool, Image: images.Tools.Name, ImagePullPolicy: corev1.PullNever,
			Command: []string{tool, "--version"}})
	}
	runTools(ctx, t, c, "tools-versions", st.Node, versions)
	waitPhase(ctx, t, c, "tools-versions", corev1.PodSucceeded)

	last := st.Node
	if len(st.ExtraNodes) > 0 {
		last = st.ExtraNodes[len(st.ExtraNodes)-1].Name
	}
	runTools(ctx, t, c, "iperf3-server", last, []corev1.Container{{Name: "iperf3", Image: images.Tools.Name,
		ImagePullPolicy: corev1.PullNever, Command: []string{"iperf3", "-s", "-1"}}})
	pod := waitPhase(ctx, t, c, "iperf3-server", corev1.PodRunning)
	bps := iperf3Client(ctx, t, pod.Status.PodIP)
	t.Logf("machine → pod on %s: %.1f Gbit/s", last, bps/1e9)
	waitPhase(ctx, t, c, "iperf3-server", corev1.PodSucceeded) // -1: one test, then exit 0
}

// runTools creates a pod of the containers on a node (bypassing the scheduler), run once.
func runTools(ctx context.Context, t *testing.T, c kubernetes.Interface, name, node string, containers []corev1.Container) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever, Containers: containers,
			TerminationGracePeriodSeconds: new(int64), AutomountServiceAccountToken: new(bool)},
	}
	if _, err := c.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitPhase polls a pod until it reaches phase (Running: with an IP), and fails the test on Failed or after
// a minute, with the pod's containers' states.
func waitPhase(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		p, err := c.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == phase && (phase != corev1.PodRunning || p.Status.PodIP != "") {
			return p
		}
		if err == nil && p.Status.Phase == corev1.PodFailed || time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("pod %s: want %s: %v", name, phase, err)
			}
			states := ""
			for _, cs := range p.Status.ContainerStatuses {
				b, _ := json.Marshal(cs.State)
				states += fmt.Sprintf("\n  %s: %s", cs.Name, b)
			}
			t.Fatalf("pod %s: want %s, got %s%s", name, phase, p.Status.Phase, states)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// iperf3Client runs the machine's iperf3 against the server at ip for one second, retrying while the
// server starts, and returns the bits per second received.
func iperf3Client(ctx context.Context, t *testing.T, ip string) float64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		out, err := exec.CommandContext(cctx, "iperf3", "-c", ip, "-t", "1", "-J").Output()
		cancel()
		var r struct {
			End struct {
				SumReceived struct {
					BitsPerSecond float64 `json:"bits_per_second"`
				} `json:"sum_received"`
			} `json:"end"`
			Error string `json:"error"`
		}
		if err == nil && json.Unmarshal(out, &r) == nil && r.End.SumReceived.BitsPerSecond > 0 {
			return r.End.SumReceived.BitsPerSecond
		}
		if time.Now().After(deadline) {
			t.Fatalf("iperf3 -c %s: %v %s\n%.500s", ip, err, r.Error, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func TestParseImageDigest(t *testing.T) {
	t.Parallel()
	const out = `REF                          TYPE                                       DIGEST                                                                  SIZE     PLATFORMS   LABELS
tare.lab/datapath-tools:v1   application/vnd.oci.image.manifest.v1+json sha256:4f1c0f0e3c7d1f5d6f1b6b7e0c5e2d3b1a9f8e7d6c5b4a39281706f5e4d3c2b1 98.2 MiB linux/amd64 -
`
	want := "sha256:4f1c0f0e3c7d1f5d6f1b6b7e0c5e2d3b1a9f8e7d6c5b4a39281706f5e4d3c2b1"
	if got := parseImageDigest(out, images.Tools.Name); got != want {
		t.Errorf("digest = %q, want %q", got, want)
	}
	if got := parseImageDigest(out, "tare.lab/web:v1"); got != "" {
		t.Errorf("digest of an image not listed = %q", got)
	}
	if got := parseImageDigest("REF TYPE DIGEST SIZE PLATFORMS LABELS\n", images.Tools.Name); got != "" {
		t.Errorf("digest from an empty list = %q", got)
	}
}
