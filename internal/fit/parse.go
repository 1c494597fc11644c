package fit

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ParseList reads "cpu=500m,memory=1Gi" as Kubernetes quantities.
func ParseList(s string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want NAME=QUANTITY, e.g. cpu=500m,memory=1Gi", part)
		}
		q, err := resource.ParseQuantity(val)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", name, val, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("%s=%s is negative", name, val)
		}
		if _, dup := out[corev1.ResourceName(name)]; dup {
			return nil, fmt.Errorf("%s given twice", name)
		}
		out[corev1.ResourceName(name)] = q
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no resources: want e.g. cpu=500m,memory=1Gi")
	}
	return out, nil
}
