package density

import (
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RuntimeClass returns a RuntimeClass for handler whose overhead.podFixed is the model's per-pod overhead:
// CPU rounded up to the millicore, memory (private, what one more pod adds) rounded up to the MiB, at
// least 1m and 1Mi. It returns nil when the model has no per-pod overhead to give (fewer than two pod
// counts measured, say: a run cut short).
func RuntimeClass(name, handler string, m Model) *nodev1.RuntimeClass {
	if math.IsNaN(m.Overhead.CPU) || math.IsNaN(m.Overhead.Private) || len(m.OverheadFrom) == 0 {
		return nil
	}
	cpu := max(1, int64(math.Ceil(m.Overhead.CPU)))
	mib := max(1, int64(math.Ceil(m.Overhead.Private/(1<<20))))
	return &nodev1.RuntimeClass{
		TypeMeta: metav1.TypeMeta{APIVersion: "node.k8s.io/v1", Kind: "RuntimeClass"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			"tare.dev/overhead-from": strings.Join(m.OverheadFrom, ","),
		}},
		Handler: handler,
		Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(mib<<20, resource.BinarySI),
		}},
	}
}
