package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tare-dev/tare/internal/datapath/netpath"
)

// TestDatapathOneNode: on a one-node lab the paths that need a second node are named with why and what to
// do, the other paths still run (here tcp-crr on host, pod-same-node and clusterip), and a run of only such
// paths is refused before anything is created in the cluster; Ctrl-C during a lab run prints the trials
// measured and removes the pods and the namespace. The lab is the package's shared one-node lab, after the
// disk data path's test (this file's name sorts after datapathdisk_test.go).
func TestDatapathOneNode(t *testing.T) {
	checkLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, errOut, err := run(ctx, "lab", "install", "--datapath"); err != nil {
		t.Fatalf("lab install --datapath: %v\n%s", err, errOut)
	}
	dir, kc := sharedLab(ctx, t)
	cs := clientsetOf(t, kc)
	const why = "needs a second node that takes pods (a lab with tare lab up --nodes 2)"
	_, errOut, err := run(ctx, "datapath", "net", "--kubeconfig", kc, "--lab-dir", dir, "--paths", "pod-cross-node,vxlan")
	if err == nil || !strings.Contains(errOut, "no path can be measured") ||
		!strings.Contains(errOut, "pod-cross-node "+why) || !strings.Contains(errOut, "vxlan "+why) {
		t.Errorf("only cross-node paths: %v, stderr %q", err, errOut)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "tare-datapath", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused run left namespace tare-datapath (%v)", err)
	}
	out, errOut, err := run(ctx, "datapath", "net", "--kubeconfig", kc, "--lab-dir", dir, "--paths", "host,pod-same-node,clusterip,pod-cross-node",
		"--modes", "tcp-crr", "--sizes", "1k", "--trials", "3", "--duration", "1s", "-o", "json")
	if err != nil {
		t.Fatalf("host, pod-same-node, clusterip and pod-cross-node: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "skipping path pod-cross-node: "+why) {
		t.Errorf("stderr does not name the skipped path: %q", errOut)
	}
	r := decodeDatapath(t, out)
	if r.Skipped["pod-cross-node"] != why || len(r.Skipped) != 1 || len(r.Trials) != 9 {
		t.Errorf("skipped %v, %d trials (want pod-cross-node skipped, 3 trials of each other path)", r.Skipped, len(r.Trials))
	}
	// tcp-crr in pods: a connection per transaction through the bridge, and through kube-proxy's DNAT.
	for _, tr := range r.Trials {
		if tr.Error != "" || tr.TPS <= 0 || tr.Failed != 0 || tr.P99us < tr.P50us {
			t.Errorf("trial %d (%s): %+v", tr.Seq, tr.Lane.Path, tr.Outcome)
		}
	}
	for _, p := range []string{"pod-same-node", "clusterip"} {
		x, ok := ratioOf(r, p, "host", netpath.TCPCRR, "transactions_per_s")
		if !ok || x.N != 3 {
			t.Errorf("%s tcp-crr against host: %+v", p, x)
		}
		t.Logf("%s tcp-crr connections/s ÷ host: %.3f [%.3f, %.3f] p=%.3f", p, x.Ratio, x.Lo, x.Hi, x.P)
	}
	waitNamespaceGone(ctx, t, cs, "tare-datapath")

	// Ctrl-C once the third trial has begun: the trials measured are printed, the pods and the namespace go.
	cctx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	var stdout strings.Builder
	progress := &cancelOn{marker: "trial 2/", cancel: cancelRun}
	err = Execute(cctx, []string{"datapath", "net", "--kubeconfig", kc, "--lab-dir", dir, "--paths", "host,pod-same-node",
		"--modes", "tcp-stream", "--sizes", "16k", "--trials", "5", "--duration", "1s", "-o", "json"}, strings.NewReader(""), &stdout, progress)
	if err == nil {
		t.Fatalf("cancelled run succeeded\n%s", progress.buf.String())
	}
	r = decodeDatapath(t, stdout.String())
	if len(r.Trials) == 0 || len(r.Trials) >= 10 || !r.Cancelled {
		t.Errorf("cancelled run kept %d trials, cancelled %v\n%s", len(r.Trials), r.Cancelled, progress.buf.String())
	}
	waitNamespaceGone(ctx, t, cs, "tare-datapath")
	noToolsLeft(t)
}
