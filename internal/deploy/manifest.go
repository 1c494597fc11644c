package deploy

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Defaults of `tare agent manifest`.
const (
	// DefaultNamespace holds the agent's objects.
	DefaultNamespace = "tare"
	// DefaultImage is the image the lab builds from the running tare binary and imports into its
	// containerd on `tare lab up`; `tare agent image` writes the same image as an OCI archive.
	DefaultImage = "tare.dev/tare:dev"
	// DefaultInterval is the agent's sampling interval, as `tare measure` samples by default.
	DefaultInterval = time.Second
	// DefaultPort is the port the agent serves /metrics, /summary and /healthz on.
	DefaultPort = 9847
)

// Names the other parts of tare (the cluster view, the Prometheus scrape config) find the agent by.
const (
	// Name names the DaemonSet, its ServiceAccount, ClusterRole and ClusterRoleBinding.
	Name = "tare-agent"
	// NameLabel is the label every agent pod carries with the value Name; the shipped scrape config keeps
	// pods with it.
	NameLabel = "app.kubernetes.io/name"
	// PortName names the agent's container port.
	PortName = "metrics"
)

// Options say where and how the agent runs; the zero value of a field takes its default.
type Options struct {
	Namespace string        // DefaultNamespace when empty
	Image     string        // DefaultImage when empty
	Interval  time.Duration // DefaultInterval when zero
	Port      int           // DefaultPort when zero
	// HealthPort is Port+1 when zero.
	HealthPort int
}

// withDefaults fills the empty fields with their defaults.
func (o Options) withDefaults() Options {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.HealthPort == 0 {
		o.HealthPort = o.Port + 1
	}
	return o
}

// validate rejects what the API server would reject, before anything is printed.
func (o Options) validate() error {
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return fmt.Errorf("namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
	}
	if strings.TrimSpace(o.Image) != o.Image || strings.ContainsAny(o.Image, " \t\n") {
		return fmt.Errorf("image %q: an image reference has no spaces (e.g. registry.example.com/tare:v1)", o.Image)
	}
	if o.Interval < 0 {
		return fmt.Errorf("interval %s: give a positive sampling interval, e.g. 1s", o.Interval)
	}
	if o.Port < 1 || o.Port > 65535 {
		return fmt.Errorf("port %d: give a port from 1 to 65535", o.Port)
	}
	if o.HealthPort < 1 || o.HealthPort > 65535 || o.HealthPort == o.Port {
		return fmt.Errorf("health port %d: give a port from 1 to 65535 other than the port %d", o.HealthPort, o.Port)
	}
	return nil
}

// Objects returns the agent's objects in the order they can be applied: the Namespace, its
// ServiceAccount, its ClusterRole and ClusterRoleBinding, the RoleBinding that lets it read the cluster's
// client CA, the two ClusterRoles of its readers (MetricsReaderRole, ClusterReaderRole), and the DaemonSet. Each carries its TypeMeta,
// so it serialises as a complete manifest.
func Objects(o Options) ([]runtime.Object, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	roles := readerRoles()
	return []runtime.Object{
		namespace(o),
		serviceAccount(o),
		clusterRole(),
		clusterRoleBinding(o),
		clientCABinding(o),
		roles[0],
		roles[1],
		daemonSet(o),
	}, nil
}

// labels are the labels of every object and of the agent's pods.
func labels() map[string]string {
	return map[string]string{NameLabel: Name, "app.kubernetes.io/part-of": "tare"}
}
