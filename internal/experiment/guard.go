package experiment

import (
	"context"
	"fmt"
	"net/http"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/lab/images"
	"github.com/tare-dev/tare/internal/stats"
)

// guardName names the guard's Deployment and Service (namespace default).
const guardName = "tare-guard"

// reachable creates a one-replica Deployment of the lab's web image behind a Service and waits until an
// HTTP GET through the Service's ClusterIP answers 200, the seeds' "time until a user can use it".
func reachable(ctx context.Context, cs kubernetes.Interface, image string) error {
	labels := map[string]string{"app": guardName}
	one := int32(1)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: guardName, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: new(int64),
					AutomountServiceAccountToken:  new(bool),
					Containers: []corev1.Container{{Name: "web", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
						Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
							PeriodSeconds: 1}}},
				},
			},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: guardName, Labels: labels},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	// A trial that failed before its cleanup leaves the guard behind: start from nothing.
	if err := removeGuard(ctx, cs); err != nil {
		return err
	}
	// removeGuard waited until the old Deployment was gone: one still there (AlreadyExists) would be one
	// being deleted, whose ReplicaSet creates no pod, and the trial would wait its 2 minutes out.
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the guard Deployment: %w", err)
	}
	created, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = cs.CoreV1().Services("default").Get(ctx, guardName, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("creating the guard Service: %w", err)
	}
	url := "http://" + created.Spec.ClusterIP + "/"
	// A fresh connection per attempt: before kube-proxy has written the Service's rules the ClusterIP is
	// routed off the machine, where something may answer (a transparent proxy's 404), and a kept-alive
	// connection to it would be reused for every later attempt.
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the guard Deployment was not reachable through %s within 2 minutes: %w", url, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// removeGuard deletes the guard's Deployment and Service and waits until the Deployment and its pods are
// gone, so the next trial starts from the same state. The deletion is in the foreground: the Deployment
// stays, marked deleted, until the garbage collector of kube-controller-manager has removed its ReplicaSet
// and pods. A trial that restarts kube-controller-manager right after can leave it there for the next
// collector to finish; creating the guard again meanwhile returns AlreadyExists for a Deployment that will
// never have a pod (CI saw two trials wait out their 2 minutes so).
func removeGuard(ctx context.Context, cs kubernetes.Interface) error {
	fg := metav1.DeletePropagationForeground
	_ = cs.CoreV1().Services("default").Delete(ctx, guardName, metav1.DeleteOptions{})
	err := cs.AppsV1().Deployments("default").Delete(ctx, guardName, metav1.DeleteOptions{PropagationPolicy: &fg, GracePeriodSeconds: new(int64)})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting the guard Deployment: %w", err)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		_, err := cs.AppsV1().Deployments("default").Get(ctx, guardName, metav1.GetOptions{})
		pods, perr := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + guardName})
		if apierrors.IsNotFound(err) && perr == nil && len(pods.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deleting the guard Deployment: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("the guard Deployment or its pods were still there a minute after deleting it (is kube-controller-manager's garbage collector running?)")
}

// apiLatency is the median of 20 GETs of one pod list page, in milliseconds.
func apiLatency(ctx context.Context, cs kubernetes.Interface) (float64, error) {
	var ds []float64
	for i := 0; i < 20; i++ {
		start := time.Now()
		if _, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return 0, fmt.Errorf("API latency probe: %w", err)
		}
		ds = append(ds, float64(time.Since(start).Microseconds())/1000)
	}
	return stats.MedianOf(ds), nil
}

// scale sets each NAMESPACE/DEPLOYMENT=REPLICAS and waits until the replicas are ready.
func scale(ctx context.Context, cs kubernetes.Interface, specs []string) error {
	for _, s := range specs {
		ns, name, n, err := parseScale(s)
		if err != nil {
			return err
		}
		sc, err := cs.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("scale %s: %w", s, err)
		}
		sc.Spec.Replicas = n
		if _, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, name, sc, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("scale %s: %w", s, err)
		}
		deadline := time.Now().Add(2 * time.Minute)
		for {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil && d.Status.ReadyReplicas == n && d.Status.Replicas == n {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("scale %s: not %d ready replicas after 2 minutes", s, n)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// defaultImage is the guard's image on the lab.
var defaultImage = images.Web.Name
