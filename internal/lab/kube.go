package lab

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func (l *lab) client() (kubernetes.Interface, error) { return Client(l.st.Kubeconfig) }

// Client returns a clientset for a kubeconfig (the lab's admin one).
func Client(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", kubeconfig, err)
	}
	cfg.UserAgent = "tare-lab"
	return kubernetes.NewForConfig(cfg)
}

// nodeReady says whether a node is Ready with a heartbeat at or after since (a warm start finds the
// previous run's Ready condition in etcd).
func nodeReady(ctx context.Context, c kubernetes.Interface, name string, since time.Time) error {
	n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.Status == corev1.ConditionTrue && !cond.LastHeartbeatTime.Time.Before(since.Truncate(time.Second)) {
				return nil
			}
			return fmt.Errorf("node %s not Ready: %s", name, cond.Message)
		}
	}
	return fmt.Errorf("node %s has no Ready condition yet", name)
}

// probe runs a pod to completion of its start (Running) and deletes it: the proof that scheduling,
// the sandbox, CNI and the image all work.
func (l *lab) probe(ctx context.Context) error {
	c, err := l.client()
	if err != nil {
		return err
	}
	pods := c.CoreV1().Pods(metav1.NamespaceDefault)
	_ = pods.Delete(ctx, probePodName, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: probePodName, Labels: map[string]string{labManagedLabel: "probe"}},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "probe", Image: PauseImage.Name, ImagePullPolicy: corev1.PullNever}},
			TerminationGracePeriodSeconds: new(int64),
			AutomountServiceAccountToken:  new(bool),
		},
	}
	if l.opts.ControlPlaneOnly {
		pod.Spec.NodeSelector = map[string]string{"type": "kwok"}
		pod.Spec.Tolerations = []corev1.Toleration{{Key: kwokAnnotation, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	} else {
		pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": l.st.Node}
	}
	// Admission refuses pods until the namespace's default service account exists; the controller
	// manager makes it seconds after it starts, so make it now (the controller then finds it there).
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: metav1.NamespaceDefault}}
	if _, err := c.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default service account: %w", err)
	}
	if err := l.waitFor(ctx, "probe pod creation", 60*time.Second, func(ctx context.Context) error {
		_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}); err != nil {
		return err
	}
	err = l.waitFor(ctx, "probe pod", 120*time.Second, func(ctx context.Context) error {
		p, err := pods.Get(ctx, probePodName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase == corev1.PodRunning {
			return nil
		}
		return fmt.Errorf("probe pod is %s%s", p.Status.Phase, podWaiting(p))
	})
	if err != nil {
		return err
	}
	l.step("probe pod Running")
	return pods.Delete(context.WithoutCancel(ctx), probePodName, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
}

func podWaiting(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			return ": " + w.Reason + " " + w.Message
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			return ": " + c.Message
		}
	}
	return ""
}

// kwok starts kwok and registers the fake nodes it serves.
func (l *lab) kwok(ctx context.Context, tunings []Tuning) error {
	c, err := l.client()
	if err != nil {
		return err
	}
	// A warm start finds the previous run's nodes in etcd with a Ready condition whose heartbeat kwok
	// will not refresh (it renews the node's lease, not the condition), and their leases still held by
	// the previous kwok, which a new one waits out (40 s) before taking a node. Remove both before kwok
	// starts, so it only ever meets fresh nodes, as on a cold start.
	for i := range l.opts.KwokNodes {
		if err := removeKwokNode(ctx, c, fmt.Sprintf("%s%d", kwokNodePrefix, i)); err != nil {
			return err
		}
	}
	if _, err := l.launch("kwok", l.bin.kwok, []string{"--kubeconfig", l.st.Kubeconfig, "--config", l.bin.kwokStages,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector", kwokAnnotation + "=fake",
		"--server-address", "127.0.0.1:0", "--node-lease-duration-seconds", "40"}, tunings); err != nil {
		return err
	}
	for i := range l.opts.KwokNodes {
		if err := createKwokNode(ctx, c, fmt.Sprintf("%s%d", kwokNodePrefix, i)); err != nil {
			return err
		}
	}
	for i := range l.opts.KwokNodes {
		name := fmt.Sprintf("%s%d", kwokNodePrefix, i)
		if err := l.waitFor(ctx, "kwok node "+name, 60*time.Second, func(ctx context.Context) error { return nodeReady(ctx, c, name, l.start) }); err != nil {
			return err
		}
	}
	l.step(fmt.Sprintf("%d kwok nodes Ready", l.opts.KwokNodes))
	return nil
}

func createKwokNode(ctx context.Context, c kubernetes.Interface, name string) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("110"),
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": name, labManagedLabel: "kwok"},
			Annotations: map[string]string{kwokAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: kwokAnnotation, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	_, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating kwok node %s: %w", name, err)
	}
	return nil
}

// removeKwokNode deletes a previous run's kwok node and its lease and waits until the node is gone.
func removeKwokNode(ctx context.Context, c kubernetes.Interface, name string) error {
	zero := int64(0)
	if err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the previous run's lease of kwok node %s: %w", name, err)
	}
	err := c.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing the previous run's kwok node %s: %w", name, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the previous run's kwok node %s is still there 30 s after deleting it", name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
