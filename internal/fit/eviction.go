package fit

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// DefaultEvictionMemory is the kubelet's default evictionHard memory.available (100Mi): what a node
// whose configuration cannot be read is assumed to keep.
const DefaultEvictionMemory = 100 << 20

// ParseEvictionMemory reads evictionHard's memory.available from a kubelet's configz (kube.KubeletConfigz)
// in bytes, a percentage taken of capacity (bytes). A configuration that sets evictionHard without
// memory.available has no memory threshold (0), as the kubelet then has none; one that sets no
// evictionHard has the kubelet's default. from says which.
func ParseEvictionMemory(configz []byte, capacity float64) (bytes float64, from string, err error) {
	var c struct {
		Kubelet *struct {
			EvictionHard map[string]string `json:"evictionHard"`
		} `json:"kubeletconfig"`
	}
	if err := json.Unmarshal(configz, &c); err != nil {
		return 0, "", fmt.Errorf("kubelet configz: %w", err)
	}
	if c.Kubelet == nil {
		return 0, "", errors.New("kubelet configz: no kubeletconfig object")
	}
	if c.Kubelet.EvictionHard == nil {
		return DefaultEvictionMemory, "the kubelet's default evictionHard memory.available 100Mi (its configuration sets none)", nil
	}
	v, ok := c.Kubelet.EvictionHard["memory.available"]
	if !ok {
		return 0, "the kubelet's evictionHard, which has no memory.available", nil
	}
	if pct, ok := strings.CutSuffix(strings.TrimSpace(v), "%"); ok {
		p, err := strconv.ParseFloat(pct, 64)
		if err != nil || p < 0 || p > 100 || math.IsNaN(p) {
			return 0, "", fmt.Errorf("kubelet evictionHard memory.available %q: want a quantity or a percentage", v)
		}
		return p / 100 * capacity, fmt.Sprintf("the kubelet's evictionHard memory.available %s of capacity", v), nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() < 0 {
		return 0, "", fmt.Errorf("kubelet evictionHard memory.available %q: want a quantity or a percentage", v)
	}
	return q.AsApproximateFloat64(), "the kubelet's evictionHard memory.available " + v, nil
}
