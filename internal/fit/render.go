package fit

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tare-dev/tare/internal/output"
)

// Output is what tare fit prints: the count, and with --pods the largest request that fits that many.
type Output struct {
	Result
	Pods    int                 `json:"pods,omitempty"`
	Largest corev1.ResourceList `json:"largest_request_for_pods,omitempty"`
}

// JSON writes the output as indented JSON.
func (o Output) JSON(w io.Writer) error {
	return output.JSON(w, o)
}

// Table writes the node, the count and the binding resource, and the inverse when asked.
func (o Output) Table(w io.Writer) error {
	n := o.Node
	fmt.Fprintf(w, "Node %s: allocatable %s; %d pods there request %s (DaemonSets' %s)\n", n.Name, list(n.Allocatable),
		n.Pods, list(n.Used), list(n.DaemonSet))
	if o.Request != nil {
		fmt.Fprintf(w, "Each new pod: request %s + overhead %s\n", list(o.Request), list(o.Overhead))
		var by []string
		for _, name := range slices.Sorted(maps.Keys(o.PerRes)) {
			by = append(by, fmt.Sprintf("%s %d", name, o.PerRes[name]))
		}
		fmt.Fprintf(w, "Fits: %d pods (%s binds first; by resource: %s)\n", o.Fits, o.Binding, strings.Join(by, ", "))
	}
	if o.Largest != nil {
		fmt.Fprintf(w, "Largest request that fits %d pods (overhead %s each): %s\n", o.Pods, list(o.Overhead), list(o.Largest))
	}
	return nil
}

func list(l corev1.ResourceList) string {
	if len(l) == 0 {
		return "none"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(l)) {
		q := l[name]
		parts = append(parts, string(name)+"="+q.String())
	}
	return strings.Join(parts, ",")
}
