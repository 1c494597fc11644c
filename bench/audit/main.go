// Command audit is the audit-log benchmark (make bench): tare streaming a 1 GiB kube-apiserver audit log
// (MB/s, peak memory) side by side with `jq -r .userAgent | sort | uniq -c` on the same file.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/tare-dev/tare/internal/audit"
)

func main() {
	size := flag.Int64("size", 1<<30, "audit log size in bytes")
	reps := flag.Int("reps", 3, "runs of each, interleaved; the table shows the median")
	dir := flag.String("dir", os.TempDir(), "where to write the log (removed afterwards)")
	stream := flag.String("stream", "", "internal: stream this file with tare's reader and print its counts")
	flag.Parse()
	if *stream != "" {
		if err := streamOnce(*stream); err != nil {
			fmt.Fprintln(os.Stderr, "stream:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*size, *reps, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// streamOnce is the measured child: explain's own reader, as explain calls it.
func streamOnce(path string) error {
	r, err := audit.File(context.Background(), path, audit.Options{})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]int{"requests": r.Requests, "clients": len(r.Clients), "bad": r.BadLines})
}

type result struct {
	wall   time.Duration
	maxRSS int64 // KiB, the largest process of the run
}

func run(size int64, reps int, dir string) error {
	if _, err := exec.LookPath("jq"); err != nil {
		return fmt.Errorf("jq is needed for the comparison: apt-get install jq")
	}
	path := filepath.Join(dir, "tare-bench-audit.log")
	if os.Getenv("TARE_BENCH_KEEP") == "" {
		defer func() { _ = os.Remove(path) }()
	}
	fmt.Printf("writing a %.1f GiB audit log to %s …\n", float64(size)/(1<<30), path)
	lines, err := generate(path, size)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var tare, jq []result
	for i := 0; i < reps; i++ {
		r, err := measure(self, "-stream", path)
		if err != nil {
			return err
		}
		tare = append(tare, r)
		r, err = measure("bash", "-o", "pipefail", "-c", fmt.Sprintf("jq -r .userAgent %q | sort | uniq -c >/dev/null", path))
		if err != nil {
			return err
		}
		jq = append(jq, r)
	}
	mb := float64(size) / 1e6
	t, j := median(tare), median(jq)
	fmt.Printf("\n%d lines, %.0f MB, median of %d runs each\n", lines, mb, reps)
	fmt.Printf("%-40s %10s %10s %12s\n", "", "seconds", "MB/s", "peak RSS")
	fmt.Printf("%-40s %10.2f %10.0f %9.0f MiB\n", "tare (explain's audit reader)", t.wall.Seconds(), mb/t.wall.Seconds(), float64(t.maxRSS)/1024)
	fmt.Printf("%-40s %10.2f %10.0f %9.0f MiB\n", "jq -r .userAgent | sort | uniq -c", j.wall.Seconds(), mb/j.wall.Seconds(), float64(j.maxRSS)/1024)
	fmt.Printf("tare is %.1f× faster (goal ≥ 5×); peak memory goal < 200 MiB\n", j.wall.Seconds()/t.wall.Seconds())
	return nil
}

// measure runs a command and returns its wall time and the peak RSS of its largest descendant.
func measure(name string, args ...string) (result, error) {
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("%s: %w", name, err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return result{wall: time.Since(start), maxRSS: ru.Maxrss}, nil
}

func median(rs []result) result {
	sort.Slice(rs, func(i, j int) bool { return rs[i].wall < rs[j].wall })
	m := rs[len(rs)/2]
	sort.Slice(rs, func(i, j int) bool { return rs[i].maxRSS < rs[j].maxRSS })
	m.maxRSS = rs[len(rs)-1].maxRSS
	return m
}

// generate writes audit events shaped like a real cluster's (the lab's log at Metadata level): leader
// election, node heartbeats, controllers' lists and watches, kubectl, across namespaces and an hour.
func generate(path string, size int64) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	clients := []struct{ ua, user string }{
		{"kube-controller-manager/v1.32.4 (linux/amd64) kubernetes/59526cd/leader-election", "system:kube-controller-manager"},
		{"kube-scheduler/v1.32.4 (linux/amd64) kubernetes/59526cd/leader-election", "system:kube-scheduler"},
		{"kubelet/v1.32.4 (linux/amd64) kubernetes/59526cd", "system:node:node-1"},
		{"kubectl/v1.32.4 (linux/amd64) kubernetes/59526cd", "kubernetes-admin"},
		{"kube-controller-manager/v1.32.4 (linux/amd64) kubernetes/59526cd/system:serviceaccount:kube-system:deployment-controller", "system:serviceaccount:kube-system:deployment-controller"},
		{"coredns/1.11.1", "system:serviceaccount:kube-system:coredns"},
	}
	verbs := []string{"get", "update", "list", "watch", "patch", "create"}
	resources := []string{"leases", "pods", "configmaps", "endpointslices", "nodes", "events"}
	namespaces := []string{"kube-system", "default", "kube-node-lease", "monitoring"}
	start := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	var n int
	var written int64
	for written < size {
		c := clients[rng.IntN(len(clients))]
		verb, res, ns := verbs[rng.IntN(len(verbs))], resources[rng.IntN(len(resources))], namespaces[rng.IntN(len(namespaces))]
		stage := "ResponseComplete"
		if verb == "watch" {
			stage = "ResponseStarted"
		}
		at := start.Add(time.Duration(n) * 3 * time.Millisecond).Format(time.RFC3339Nano)
		line := fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"%08x-6e4e-4a0e-9d3c-%012x","stage":"%s","requestURI":"/api/v1/namespaces/%s/%s?timeout=10s","verb":"%s","user":{"username":"%s","groups":["system:authenticated"]},"sourceIPs":["10.0.2.15"],"userAgent":"%s","objectRef":{"resource":"%s","namespace":"%s","name":"obj-%d","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"%s","stageTimestamp":"%s","annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by ClusterRoleBinding \"system:basic-user\" of ClusterRole \"system:basic-user\" to Group \"system:authenticated\""}}`+"\n",
			n, n, stage, ns, res, verb, c.user, c.ua, res, ns, n%500, at, at)
		k, err := w.WriteString(line)
		if err != nil {
			return n, err
		}
		written += int64(k)
		n++
	}
	return n, w.Flush()
}
