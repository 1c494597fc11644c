package fit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/tare-dev/tare/internal/userfile"
)

// The measured allocatable document's apiVersion and kind.
const (
	AllocatableAPIVersion = "tare.dev/v1alpha1"
	AllocatableKind       = "MeasuredAllocatable"
)

// maxAllocatableFile bounds a measured allocatable document read from a file.
const maxAllocatableFile = 1 << 20

// Allocatable is a measured allocatable: what the pods of one node shape really get, measured by tare
// density, meant to be kept per instance type and read by capacity tools (and tare fit --allocatable) in
// place of a flat guess. Allocatable = Capacity − KubeReserved − SystemReserved − EvictionHard, for cpu
// and memory; pods is the node's pod limit the reservations were sized for. Every list holds Kubernetes
// quantities (cpu in cores or millicores, memory in bytes), as a node's status does.
type Allocatable struct {
	APIVersion     string              `json:"apiVersion"`
	Kind           string              `json:"kind"`
	Shape          Shape               `json:"shape"`
	Capacity       corev1.ResourceList `json:"capacity"`
	KubeReserved   corev1.ResourceList `json:"kubeReserved"`
	SystemReserved corev1.ResourceList `json:"systemReserved"`
	EvictionHard   corev1.ResourceList `json:"evictionHard"`
	Allocatable    corev1.ResourceList `json:"allocatable"`
	// Basis says how each figure was measured (the percentile, the windows, the eviction threshold's source).
	Basis       []string  `json:"basis"`
	Measured    time.Time `json:"measured"`
	TareVersion string    `json:"tareVersion"`
}

// Shape is what makes two nodes alike for their allocatable: the node's own report of its system, and the
// instance type label where the node has one.
type Shape struct {
	Node             string `json:"node"`
	InstanceType     string `json:"instanceType,omitempty"` // label node.kubernetes.io/instance-type
	OSImage          string `json:"osImage"`
	Kernel           string `json:"kernelVersion"`
	ContainerRuntime string `json:"containerRuntimeVersion"`
	Kubelet          string `json:"kubeletVersion"`
	Architecture     string `json:"architecture"`
	// PodImage is the image of the idle pods the run measured with.
	PodImage string `json:"podImage"`
}

// ShapeOf is a node's shape from what its status reports.
func ShapeOf(n *corev1.Node, podImage string) Shape {
	i := n.Status.NodeInfo
	return Shape{Node: n.Name, InstanceType: n.Labels[corev1.LabelInstanceTypeStable], OSImage: i.OSImage, Kernel: i.KernelVersion,
		ContainerRuntime: i.ContainerRuntimeVersion, Kubelet: i.KubeletVersion, Architecture: i.Architecture, PodImage: podImage}
}

// NewAllocatable makes the document: capacity cpu (millicores), memory (bytes) and pods, the reservations
// (millicores and bytes, each at least zero) and the eviction threshold (bytes), with allocatable worked
// out (never below zero).
func NewAllocatable(shape Shape, cpu, memory float64, pods int, kubeCPU, kubeMem, sysCPU, sysMem, eviction float64) Allocatable {
	milli := func(v float64) resource.Quantity {
		return *resource.NewMilliQuantity(int64(max(0, v)+0.999), resource.DecimalSI)
	}
	byteQ := func(v float64) resource.Quantity {
		return *resource.NewQuantity(int64(max(0, v)+0.999), resource.BinarySI)
	}
	a := Allocatable{
		APIVersion: AllocatableAPIVersion, Kind: AllocatableKind, Shape: shape,
		Capacity:       corev1.ResourceList{corev1.ResourceCPU: milli(cpu), corev1.ResourceMemory: byteQ(memory), corev1.ResourcePods: *resource.NewQuantity(int64(pods), resource.DecimalSI)},
		KubeReserved:   corev1.ResourceList{corev1.ResourceCPU: milli(kubeCPU), corev1.ResourceMemory: byteQ(kubeMem)},
		SystemReserved: corev1.ResourceList{corev1.ResourceCPU: milli(sysCPU), corev1.ResourceMemory: byteQ(sysMem)},
		EvictionHard:   corev1.ResourceList{corev1.ResourceMemory: byteQ(eviction)},
		Allocatable:    corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(pods), resource.DecimalSI)},
	}
	// Worked out on the rounded quantities, which round each reservation up: the document adds up.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		left := a.Capacity[r].DeepCopy()
		for _, l := range []corev1.ResourceList{a.KubeReserved, a.SystemReserved, a.EvictionHard} {
			if q, ok := l[r]; ok {
				left.Sub(q)
			}
		}
		if left.Sign() < 0 {
			left = *resource.NewQuantity(0, left.Format)
		}
		a.Allocatable[r] = left
	}
	return a
}

// WriteYAML writes the document as YAML (which JSON readers of it may also take as JSON: ParseAllocatable
// reads both).
func (a Allocatable) WriteYAML(w io.Writer) error {
	b, err := yaml.Marshal(a)
	if err != nil {
		return fmt.Errorf("writing the measured allocatable: %w", err)
	}
	_, err = w.Write(b)
	return err
}

// ReadAllocatable reads a measured allocatable document (YAML or JSON) from path.
func ReadAllocatable(path string) (Allocatable, error) {
	b, err := userfile.ReadAll(path, "measured allocatable", maxAllocatableFile)
	if err != nil {
		return Allocatable{}, err
	}
	a, err := ParseAllocatable(b)
	if err != nil {
		return Allocatable{}, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// errNotAllocatable says what a measured allocatable document is, for a file that is not one.
var errNotAllocatable = errors.New("not a measured allocatable (tare density --allocatable-out writes one: apiVersion " + AllocatableAPIVersion + ", kind " + AllocatableKind + ")")

// ParseAllocatable reads a measured allocatable document, YAML or JSON, strictly (an unknown field is an
// error), and checks it: its apiVersion and kind, cpu, memory and pods in capacity and allocatable, no
// negative quantity, and allocatable within capacity.
func ParseAllocatable(b []byte) (Allocatable, error) {
	var a Allocatable
	if len(bytes.TrimSpace(b)) == 0 {
		return Allocatable{}, fmt.Errorf("empty: %w", errNotAllocatable)
	}
	if err := yaml.UnmarshalStrict(b, &a); err != nil {
		return Allocatable{}, fmt.Errorf("%w: %w", errNotAllocatable, err)
	}
	if a.APIVersion != AllocatableAPIVersion || a.Kind != AllocatableKind {
		return Allocatable{}, fmt.Errorf("apiVersion %q, kind %q: %w", a.APIVersion, a.Kind, errNotAllocatable)
	}
	need := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods}
	for _, l := range []struct {
		name string
		list corev1.ResourceList
		need bool
	}{{"capacity", a.Capacity, true}, {"allocatable", a.Allocatable, true}, {"kubeReserved", a.KubeReserved, false},
		{"systemReserved", a.SystemReserved, false}, {"evictionHard", a.EvictionHard, false}} {
		if l.need {
			for _, r := range need {
				if _, ok := l.list[r]; !ok {
					return Allocatable{}, fmt.Errorf("%s has no %s: want %s", l.name, r, "cpu, memory and pods")
				}
			}
		}
		for r, q := range l.list {
			if q.Sign() < 0 {
				return Allocatable{}, fmt.Errorf("%s %s is negative (%s)", l.name, r, q.String())
			}
		}
	}
	for _, r := range need {
		c, al := a.Capacity[r], a.Allocatable[r]
		if al.Cmp(c) > 0 {
			return Allocatable{}, fmt.Errorf("allocatable %s %s exceeds capacity %s", r, al.String(), c.String())
		}
	}
	return a, nil
}

// Apply is n with the document's allocatable cpu, memory and pods in place of what its kubelet reports:
// what the scheduler would weigh if the node reserved what was measured. Other resources stay the node's.
func (a Allocatable) Apply(n Node) Node {
	n.Allocatable = n.Allocatable.DeepCopy()
	if n.Allocatable == nil {
		n.Allocatable = corev1.ResourceList{}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		n.Allocatable[r] = a.Allocatable[r].DeepCopy()
	}
	return n
}

// Warnings compares the document's shape with node's: what differs makes the measured allocatable
// another node's.
func (a Allocatable) Warnings(node *corev1.Node) []string {
	got := ShapeOf(node, a.Shape.PodImage)
	var out []string
	for _, f := range []struct{ what, want, have string }{
		{"kernel", a.Shape.Kernel, got.Kernel}, {"OS image", a.Shape.OSImage, got.OSImage},
		{"container runtime", a.Shape.ContainerRuntime, got.ContainerRuntime}, {"instance type", a.Shape.InstanceType, got.InstanceType},
	} {
		if f.want != f.have {
			out = append(out, fmt.Sprintf("the measured allocatable's %s is %q, node %s's %q", f.what, f.want, node.Name, f.have))
		}
	}
	c := node.Status.Capacity
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		want, have := a.Capacity[r], c[r]
		if want.Cmp(have) != 0 {
			out = append(out, fmt.Sprintf("the measured allocatable's capacity %s is %s, node %s's %s", r, want.String(), node.Name, have.String()))
		}
	}
	slices.Sort(out)
	return out
}
