package kube_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/cli"
	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/lab/labtest"
	"github.com/tare-dev/tare/internal/summary"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// The package's tests share one real API server: the lab's etcd (Debian's) and kube-apiserver (built from
// the upstream module, cached after the first build), started by lab.Up with nothing else (labtest.APIServer).
var apiLab *lab.State

func TestMain(m *testing.M) {
	testload.Main()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if os.Geteuid() != 0 || testing.Short() {
		fmt.Fprintln(os.Stderr, "kube: skipping the API server tests (they need root, and are not -short)")
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	st, stop, err := labtest.APIServer(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube: starting a real API server:", err)
		return 1
	}
	apiLab = st
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "kube: stopping the API server:", err)
		return 1
	}
	return code
}

func requireAPIServer(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	if apiLab == nil {
		if testing.Short() {
			t.Skip("starts a real API server")
		}
		testenv.NeedRoot(t, "starting a real API server (etcd and kube-apiserver)")
	}
	c, err := kube.NewClient(apiLab.Kubeconfig, kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// probePod creates a pod and reports a running container with the given ID in its status, as a kubelet
// would.
func probePod(t *testing.T, c *kubernetes.Clientset, name, containerID string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	// Without kube-controller-manager nobody creates the namespace's default service account, which the
	// ServiceAccount admission plugin looks up for every pod.
	_, _ = c.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	pod, err := c.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "tare/probe:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{}) })
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", ContainerID: "containerd://" + containerID, Image: "tare/probe:1"}}
	pod, err = c.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func TestPodNamerAgainstAPIServer(t *testing.T) {
	c := requireAPIServer(t)
	cid := strings.Repeat("ab", 32)
	pod := probePod(t, c, "tare-namer-probe", cid)
	n, err := kube.NewPodNamer(t.Context(), apiLab.Kubeconfig, "", "")
	if err != nil {
		t.Fatal(err)
	}
	// The list may come from the API server's watch cache a moment behind the status update that named
	// the container; the namer's watch brings the update.
	want := kube.PodRef{Namespace: "default", Name: "tare-namer-probe", Container: "app"}
	ref, ok := n.Name(string(pod.UID), cid)
	for deadline := time.Now().Add(10 * time.Second); (!ok || ref != want) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		ref, ok = n.Name(string(pod.UID), cid)
	}
	if !ok || ref != want {
		t.Errorf("Name(%s) = %+v, %v", pod.UID, ref, ok)
	}
	// A pod created after the list is named through the namer's watch, without asking for it first (an
	// unknown UID would start a list: the watch alone must bring it).
	later := probePod(t, c, "tare-namer-later", strings.Repeat("cd", 32))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ref, ok := n.Name(string(later.UID), ""); ok {
			if ref.Name != "tare-namer-later" {
				t.Errorf("the watched pod is named %+v", ref)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a pod created after the namer's list is not named within 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMeasureNamesPodsAndComponents: with --kubeconfig, a process in a pod's cgroup is shown as
// namespace/name and container, and the control plane's own processes are named by component.
func TestMeasureNamesPodsAndComponents(t *testing.T) {
	c := requireAPIServer(t)
	cid := strings.Repeat("cd", 32)
	pod := probePod(t, c, "tare-measure-probe", cid)
	cmd := testload.Command("burn", "50")
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	buf := make([]byte, 16)
	_, _ = out.Read(buf) // "ready"
	testload.KubepodsCgroup(t, string(pod.UID), cid, cmd.Process.Pid)

	var stdout, stderr strings.Builder
	err := cli.Execute(context.Background(), []string{"measure", "--duration", "2s", "--interval", "500ms",
		"--kubeconfig", apiLab.Kubeconfig, "-o", "json"}, strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Fatalf("measure: %v\n%s", err, stderr.String())
	}
	var s summary.Summary
	if err := json.Unmarshal([]byte(stdout.String()), &s); err != nil {
		t.Fatal(err)
	}
	found := map[int]summary.Process{}
	for _, p := range s.Processes {
		found[p.PID] = p
	}
	p := found[cmd.Process.Pid]
	if p.Group != "pod default/tare-measure-probe" || p.PodName != "tare-measure-probe" || p.CtrName != "app" {
		t.Errorf("pod process shown as group %q pod %q container %q", p.Group, p.PodName, p.CtrName)
	}
	for _, want := range []string{component.Etcd, component.APIServer} {
		p, _ := apiLab.Process(want)
		if got := found[p.PID].Group; got != want {
			t.Errorf("%s (pid %d) grouped as %q", want, p.PID, got)
		}
	}
}
