// Command lab is the lab benchmark (make bench): how long `tare lab up` takes to a Ready node and a
// Running first pod, cold (empty directory) and warm (a directory kept by down --keep), next to the
// published time-to-k8s totals of other local clusters; and the idle CPU of the lab's components with
// the upstream and the tuned profile, measured with tare measure, compared with Welch's t-test; then the
// cold start of a lab with -nodes real nodes (lab up --nodes) and its idle CPU per added node. With
// -firstrun, instead, a first run from cold Go and tare caches (firstrun.go).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/stats"
	"github.com/tare-dev/tare/internal/summary"
)

// anchors are the time-to-k8s totals published for other local clusters on their reference machine.
var anchors = []struct {
	name string
	secs float64
}{{"minikube", 50.8}, {"kind", 33.0}, {"k3d", 19.9}}

// components whose idle CPU is compared between profiles: the lab's control plane, node agents and runtime.
var components = component.Names(component.Entry.Core)

// podRuntime are the groups of what the runtime runs for pods (shims, runc, CNI plugins, pause), counted in
// the lab's total.
var podRuntime = component.Names(func(e component.Entry) bool { return e.Role == component.RolePodRuntime })

func main() {
	tare := flag.String("tare", "bin/tare", "tare binary")
	runs := flag.Int("runs", 3, "cold and warm starts, and idle windows per profile")
	window := flag.Duration("window", 45*time.Second, "idle measurement window")
	settle := flag.Duration("settle", 15*time.Second, "wait after up before measuring idle CPU")
	nodes := flag.Int("nodes", 3, "real nodes of the multi-node lab measured (1: skip it)")
	idle := flag.Bool("idle", true, "also measure idle CPU per profile and the multi-node lab (false: cold and warm starts only)")
	first := flag.Bool("firstrun", false, "measure a first run instead, from empty Go and tare caches: tare's build from -src, lab install, lab up and a -measure measurement, then warm")
	src := flag.String("src", ".", "tare's source tree, built by -firstrun")
	measure := flag.Duration("measure", time.Minute, "the measurement of -firstrun")
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "bench lab: needs root (a full lab with kubelet and containerd)")
		os.Exit(1)
	}
	if *first {
		if err := firstRun(context.Background(), *src, *measure); err != nil {
			fmt.Fprintln(os.Stderr, "bench lab:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(context.Background(), *tare, *runs, *nodes, *idle, *window, *settle); err != nil {
		fmt.Fprintln(os.Stderr, "bench lab:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, tare string, runs, nodes int, idleToo bool, window, settle time.Duration) error {
	if out, err := exec.CommandContext(ctx, tare, "lab", "install").CombinedOutput(); err != nil {
		return fmt.Errorf("lab install: %w\n%s", err, out)
	}
	var coldReady, coldPod, warmReady, warmPod []float64
	for i := range runs {
		dir, err := os.MkdirTemp("", "tare-bench-lab-")
		if err != nil {
			return err
		}
		st, err := up(ctx, tare, dir)
		if err != nil {
			return err
		}
		coldReady, coldPod = append(coldReady, at(st, "node Ready")), append(coldPod, at(st, "probe pod Running"))
		if err := down(ctx, tare, dir, true); err != nil {
			return err
		}
		if st, err = up(ctx, tare, dir); err != nil {
			return err
		}
		warmReady, warmPod = append(warmReady, at(st, "node Ready")), append(warmPod, at(st, "probe pod Running"))
		if err := down(ctx, tare, dir, false); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "start %d/%d: cold %.1fs, warm %.1fs to first pod\n", i+1, runs, coldPod[i], warmPod[i])
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "TIME TO\tCOLD (s, mean ± 95%% CI, n=%d)\tWARM\n", runs)
	fmt.Fprintf(tw, "node Ready\t%s\t%s\n", ci(coldReady), ci(warmReady))
	fmt.Fprintf(tw, "first pod Running\t%s\t%s\n", ci(coldPod), ci(warmPod))
	for _, a := range anchors {
		fmt.Fprintf(tw, "%s (published time-to-k8s total)\t%.1f\t\n", a.name, a.secs)
	}
	if err := tw.Flush(); err != nil || !idleToo {
		return err
	}

	idle := map[string]map[string][]float64{}
	for i := range runs {
		for _, profile := range []string{lab.ProfileUpstream, lab.ProfileTuned} { // interleaved: drift hits both
			m, err := idleCPU(ctx, tare, profile, window, settle)
			if err != nil {
				return err
			}
			if idle[profile] == nil {
				idle[profile] = map[string][]float64{}
			}
			for k, v := range m {
				idle[profile][k] = append(idle[profile][k], v)
			}
			fmt.Fprintf(os.Stderr, "idle %s %d/%d: control plane %.1fm\n", profile, i+1, runs, m["control plane"])
		}
	}
	fmt.Printf("\nIdle CPU, millicores (mean ± 95%% CI over %d windows of %s each, %s after up)\n", runs, window, settle)
	tw = tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tUPSTREAM\tTUNED\tDELTA\tP (Welch)\tSIGNIFICANT")
	for _, c := range append(append([]string{}, components...), "control plane", "all lab") {
		u, t := idle[lab.ProfileUpstream][c], idle[lab.ProfileTuned][c]
		d := stats.Welch(u, t, 0.05)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%+.2f (%+.0f%%)\t%.3f\t%v\n", c, ci(u), ci(t), d.Delta, d.DeltaPct, d.P, d.Significant)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if nodes <= 1 {
		return nil
	}
	return multiNode(ctx, tare, runs, nodes, window, settle, [2][]float64{coldReady, coldPod}, idle[lab.ProfileUpstream]["all lab"])
}

// multiNode measures a lab of nodes real nodes (upstream profile): its cold start to every node Ready and
// to the probe pod, next to the one-node lab's (cold1: to node Ready and to the probe pod, measured above the
// same way), and its idle CPU
// next to the one-node lab's (idle1, the upstream windows above): the difference divided by the nodes added
// is the lab's idle cost per added node (kubelet, containerd and kube-proxy, and the control plane's work
// for one more node).
func multiNode(ctx context.Context, tare string, runs, nodes int, window, settle time.Duration, cold1 [2][]float64, idle1 []float64) error {
	flags := []string{"--nodes", strconv.Itoa(nodes)}
	readyStep := fmt.Sprintf("%d nodes Ready", nodes)
	var ready, pod, idleN []float64
	for i := range runs {
		dir, err := os.MkdirTemp("", "tare-bench-lab-")
		if err != nil {
			return err
		}
		st, err := up(ctx, tare, dir, flags...)
		if err != nil {
			return err
		}
		ready, pod = append(ready, at(st, readyStep)), append(pod, at(st, "probe pod Running"))
		if err := down(ctx, tare, dir, false); err != nil {
			return err
		}
		m, err := idleCPU(ctx, tare, lab.ProfileUpstream, window, settle, flags...)
		if err != nil {
			return err
		}
		idleN = append(idleN, m["all lab"])
		fmt.Fprintf(os.Stderr, "%d nodes %d/%d: cold %.1fs to every node Ready, idle %.1fm\n", nodes, i+1, runs, ready[i], m["all lab"])
	}
	fmt.Printf("\n%d real nodes vs 1 (upstream profile; mean ± 95%% CI, n=%d)\n", nodes, runs)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\t1 NODE\tNODES\tPER ADDED NODE")
	fmt.Fprintf(tw, "cold start to every node Ready (s)\t%s\t%s\t%+.2f\n", ci(cold1[0]), ci(ready), (mean(ready)-mean(cold1[0]))/float64(nodes-1))
	fmt.Fprintf(tw, "cold start to first pod Running (s)\t%s\t%s\t%+.2f\n", ci(cold1[1]), ci(pod), (mean(pod)-mean(cold1[1]))/float64(nodes-1))
	d := stats.Welch(idle1, idleN, 0.05)
	fmt.Fprintf(tw, "idle CPU, all lab (millicores)\t%s\t%s\t%+.2f (Welch p=%.3f)\n", ci(idle1), ci(idleN), d.Delta/float64(nodes-1), d.P)
	return tw.Flush()
}

func mean(xs []float64) float64 { return stats.MeanCI(xs, 0.95).Mean }

func ci(xs []float64) string {
	iv := stats.MeanCI(xs, 0.95)
	return fmt.Sprintf("%.2f ± %.2f", iv.Mean, iv.Half)
}

func up(ctx context.Context, tare, dir string, extra ...string) (*lab.State, error) {
	args := append([]string{"lab", "up", "--dir", dir, "-o", "json"}, extra...)
	out, err := exec.CommandContext(ctx, tare, args...).Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		return nil, fmt.Errorf("lab up: %w\n%s", err, stderr)
	}
	var st lab.State
	if err := json.Unmarshal(out, &st); err != nil {
		return nil, fmt.Errorf("lab up output: %w", err)
	}
	return &st, nil
}

func down(ctx context.Context, tare, dir string, keep bool) error {
	args := []string{"lab", "down", "--dir", dir}
	if keep {
		args = append(args, "--keep")
	}
	if out, err := exec.CommandContext(ctx, tare, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("lab down: %w\n%s", err, out)
	}
	return nil
}

func at(st *lab.State, step string) float64 {
	for _, s := range st.Steps {
		if s.Name == step {
			return s.At.Seconds()
		}
	}
	return 0
}

// idleCPU starts a lab with a profile, lets it settle, measures it and returns each component's mean CPU.
func idleCPU(ctx context.Context, tare, profile string, window, settle time.Duration, extra ...string) (map[string]float64, error) {
	dir, err := os.MkdirTemp("", "tare-bench-lab-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = down(ctx, tare, dir, false) }()
	if _, err := up(ctx, tare, dir, append([]string{"--profile", profile}, extra...)...); err != nil {
		return nil, err
	}
	time.Sleep(settle)
	out, err := exec.CommandContext(ctx, tare, "measure", "-o", "json", "--duration", window.String(),
		"--kubeconfig", dir+"/kubeconfig").Output()
	if err != nil {
		return nil, fmt.Errorf("measure: %w", err)
	}
	var s summary.Summary
	if err := json.Unmarshal(out, &s); err != nil {
		return nil, err
	}
	m := map[string]float64{}
	for _, g := range s.Groups {
		m[g.Name] = g.CPU.Mean // includes the group's short-lived children
	}
	res := map[string]float64{}
	for _, c := range components {
		res[c] = m[c]
		res["all lab"] += m[c]
		if e, _ := component.Lookup(c); e.Role == component.RoleControlPlane {
			res["control plane"] += m[c]
		}
	}
	for _, c := range podRuntime {
		res["all lab"] += m[c]
	}
	return res, nil
}
