package density

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tare-dev/tare/internal/deploy"
	"github.com/tare-dev/tare/internal/output"
)

// Output is what tare density prints: the report and the RuntimeClass made from it.
type Output struct {
	Report
	RuntimeClass *nodev1.RuntimeClass `json:"runtime_class"`
}

// JSON writes the output as indented JSON.
func (o Output) JSON(w io.Writer) error {
	return output.JSON(w, o)
}

// Table writes the per-pod model, a row per component, then the RuntimeClass as YAML.
func (o Output) Table(w io.Writer) error {
	fmt.Fprintf(w, "Node %s: %v idle pods of %s, %d trials in shuffled order (--seed %d), %s windows (n = %d, took %s)\n\n",
		o.Node, o.Counts, o.podImage(), o.Trials, o.Seed, o.Window, len(o.Steps), o.Took)
	for _, x := range o.Warnings {
		fmt.Fprintf(w, "%s\n\n", x.Note())
	}
	if o.Kwok {
		return o.kwokTable(w)
	}
	m := o.Model
	fmt.Fprintf(w, "Node busy: %s at 0 pods, %s per pod [95%% CI %s, %s], R² %.2f\n\n",
		output.MillicoresFixed(m.Busy.Fixed, 2), output.MillicoresFixed(m.Busy.Marginal, 2), output.MillicoresFixed(m.Busy.Lo, 2), output.MillicoresFixed(m.Busy.Hi, 2), m.Busy.R2)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// R² of a robust line can be below zero: the line then fits worse than the mean (noise, no trend).
	fmt.Fprintln(tw, "COMPONENT\tCHARGED TO\tCPU AT 0\tCPU PER POD [95% CI]\tR²\tPRIVATE PER POD [95% CI]\tPSS PER POD\tRSS AT 0")
	for _, c := range m.Components {
		if !c.listed() {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s [%s, %s]\t%.2f\t%s [%s, %s]\t%s\t%s\n", c.Name, c.ChargedTo,
			output.MillicoresFixed(c.CPU.Fixed, 2), output.MillicoresFixed(c.CPU.Marginal, 2), output.MillicoresFixed(c.CPU.Lo, 2), output.MillicoresFixed(c.CPU.Hi, 2), c.CPU.R2,
			output.MiBFixed(c.Private.Marginal, 2), output.MiBFixed(c.Private.Lo, 2), output.MiBFixed(c.Private.Hi, 2), output.MiBFixed(c.PSS.Marginal, 2), output.MiBFixed(c.RSS.Fixed, 2))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nPer pod outside the pod cgroups (%s together): %s CPU [95%% CI %s, %s], %s private memory [%s, %s].\n",
		strings.Join(m.OverheadFrom, ", "), output.MillicoresFixed(m.OverheadCPU.Marginal, 2), output.MillicoresFixed(m.OverheadCPU.Lo, 2), output.MillicoresFixed(m.OverheadCPU.Hi, 2),
		output.MiBFixed(m.OverheadPrivate.Marginal, 2), output.MiBFixed(m.OverheadPrivate.Lo, 2), output.MiBFixed(m.OverheadPrivate.Hi, 2))
	if o.Churn != nil {
		fmt.Fprintln(w)
		if err := o.Churn.table(w); err != nil {
			return err
		}
	}
	if o.KubeReserved != nil {
		fmt.Fprintln(w)
		if err := o.KubeReserved.table(w); err != nil {
			return err
		}
	}
	if o.Spikes != nil {
		fmt.Fprintln(w)
		if err := o.Spikes.table(w); err != nil {
			return err
		}
	}
	if o.Memory != nil {
		fmt.Fprintln(w)
		if err := o.Memory.table(w); err != nil {
			return err
		}
	}
	if a := o.Allocatable; a != nil {
		fmt.Fprintf(w, "\nMeasured allocatable at %s pods: cpu %s, memory %s (capacity cpu %s, memory %s); --allocatable-out FILE writes it for tare fit --allocatable.\n\n",
			quantity(a.Allocatable, corev1.ResourcePods), quantity(a.Allocatable, corev1.ResourceCPU), output.MiBFixed(a.Allocatable.Memory().AsApproximateFloat64(), 0),
			quantity(a.Capacity, corev1.ResourceCPU), output.MiBFixed(a.Capacity.Memory().AsApproximateFloat64(), 0))
	}
	if o.RuntimeClass == nil {
		_, err := fmt.Fprintln(w, "No RuntimeClass: the per-pod overhead needs windows at two pod counts or more.")
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "A RuntimeClass that charges it to every pod, at the intervals' upper ends (kubectl apply -f -; pods opt in with runtimeClassName):")
	fmt.Fprintln(w)
	y, err := runtimeClassYAML(o.RuntimeClass)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, y)
	return err
}

// podImage is what each pod runs: the image, or how many containers of it.
func (r Report) podImage() string {
	if r.Containers > 1 {
		return fmt.Sprintf("%d containers of %s", r.Containers, r.Image)
	}
	return r.Image
}

// runtimeClassYAML is the RuntimeClass as kubectl apply -f takes it.
func runtimeClassYAML(rc *nodev1.RuntimeClass) (string, error) {
	var b bytes.Buffer
	if err := deploy.WriteYAML(&b, []runtime.Object{rc}); err != nil {
		return "", err
	}
	return b.String(), nil
}

// kwokTable writes the control plane's model of a --kwok run: per 1,000 pods, the node's agents out of it.
func (o Output) kwokTable(w io.Writer) error {
	m := o.Model
	k := func(v float64) float64 { return 1000 * v }
	fmt.Fprintf(w, "Node busy: %s at 0 pods, %s per 1,000 pods [95%% CI %s, %s], R² %.2f\n\n",
		output.MillicoresFixed(m.Busy.Fixed, 1), output.MillicoresFixed(k(m.Busy.Marginal), 1), output.MillicoresFixed(k(m.Busy.Lo), 1), output.MillicoresFixed(k(m.Busy.Hi), 1), m.Busy.R2)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tCPU AT 0\tCPU PER 1,000 PODS [95% CI]\tR²\tRSS AT 0\tRSS PER 1,000 PODS [95% CI]\tR²\tPRIVATE PER 1,000 PODS")
	for _, c := range m.Components {
		if !c.listed() {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s [%s, %s]\t%.2f\t%s\t%s [%s, %s]\t%.2f\t%s\n", c.Name,
			output.MillicoresFixed(c.CPU.Fixed, 1), output.MillicoresFixed(k(c.CPU.Marginal), 1), output.MillicoresFixed(k(c.CPU.Lo), 1), output.MillicoresFixed(k(c.CPU.Hi), 1), c.CPU.R2,
			output.MiBFixed(c.RSS.Fixed, 1), output.MiBFixed(k(c.RSS.Marginal), 1), output.MiBFixed(k(c.RSS.Lo), 1), output.MiBFixed(k(c.RSS.Hi), 1), c.RSS.R2,
			output.MiBFixed(k(c.Private.Marginal), 1))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\nThe pods ran on kwok's fake nodes: no container ran, so this is the control plane's cost of pod count (and kwok's own); no RuntimeClass or kube-reserved comes from it.")
	return err
}

// quantity is l's quantity of r as Kubernetes writes it.
func quantity(l corev1.ResourceList, r corev1.ResourceName) string {
	q := l[r]
	return q.String()
}
