package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tare-dev/tare/internal/datapath"
	"github.com/tare-dev/tare/internal/htmlreport"
	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/lab/images"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/session"
)

// This file holds what tare datapath net and disk share: the measuring session, the cluster their pods
// run in, and how a run's result is printed and its page written.

// datapathSession is what both verbs' runs measure with: progress lines on stderr, this machine's name
// and the measuring session's options for trials of length d.
func datapathSession(s streams, g *globalOptions, d time.Duration) (say func(string, ...any), host string, opts session.Options) {
	say = func(format string, a ...any) { fmt.Fprintf(s.err, format+"\n", a...) }
	opts = session.Options{Sampler: g.sampleOptions(sample.Options{Interval: datapathInterval(d), Detail: 5 * time.Second}), Version: Version}
	return say, sample.HostName(g.procRoot), opts
}

// datapathInterval is the sampling interval of trials of length d: five samples a trial, between 250 ms
// and 1 s.
func datapathInterval(d time.Duration) time.Duration {
	return min(time.Second, max(250*time.Millisecond, d/5))
}

// clusterAccess is what a datapath run needs of its cluster: a client, exec into its pods, and the
// names of pods for the session's groups.
type clusterAccess struct {
	source   string
	cs       kubernetes.Interface
	exec     func(ctx context.Context, ns, pod, container string, cmd []string, stdout, stderr io.Writer) error
	podNames func(uid, ctr string) (string, string, string, bool)
	lab      *lab.Lab // the tare lab; nil on another cluster
}

// podCluster connects to the cluster found as kubectl finds it (--kubeconfig, --context, $KUBECONFIG,
// ~/.kube/config), else to the lab at labDir, and on that lab (reached through any kubeconfig: its own,
// or the context tare lab up added) imports the tools image into its nodes when the run uses it.
func podCluster(ctx context.Context, s streams, g *globalOptions, labDir, image, host string, say func(string, ...any)) (clusterAccess, error) {
	var a clusterAccess
	t := g.cluster(s, labDir)
	c, err := t.client(kube.Options{UserAgent: "tare-datapath", Timeout: 0, QPS: 50, Burst: 100})
	if err != nil {
		return a, fmt.Errorf("tare datapath runs its pods through the API server: %w", err)
	}
	if l, lerr := lab.Open(labDir); lerr == nil && (t.lab != nil || sameCluster(c, l.Kubeconfig())) {
		a.lab = l
	}
	isLab := a.lab != nil
	if !isLab && image == images.Tools.Name {
		return a, usageError("--image tools is the tare lab's image and no lab runs at --lab-dir %s for this kubeconfig: on another cluster give --image, an image with the tools on its PATH", labDir)
	}
	cset, err := c.Clientset()
	if err != nil {
		return a, err
	}
	a.source, a.cs = c.Source, cset
	a.exec = func(ctx context.Context, ns, pod, container string, cmd []string, stdout, stderr io.Writer) error {
		return c.Exec(ctx, cset, ns, pod, container, cmd, stdout, stderr)
	}
	names, note := podNamer(ctx, t, host)
	a.podNames = names
	if note != "" {
		say("warning: %s", note)
	}
	if isLab && image == images.Tools.Name {
		say("importing %s into the lab's nodes", image)
		if err := a.lab.ImportToolsImage(ctx); err != nil {
			return a, fmt.Errorf("tare datapath: %w", err)
		}
	}
	return a, nil
}

// sameCluster says whether c reaches the cluster of the kubeconfig file other: the same API server,
// trusted through the same CA (a lab's context in the user's kubeconfig embeds the lab's CA).
func sameCluster(c *kube.Client, other string) bool {
	o, err := kube.NewClient(other, kube.Options{})
	if err != nil {
		return false
	}
	ca := func(cfg *rest.Config) []byte {
		if len(cfg.CAData) > 0 {
			return cfg.CAData
		}
		b, _ := os.ReadFile(cfg.CAFile)
		return b
	}
	x, y := ca(c.Config), ca(o.Config)
	return c.Config.Host == o.Config.Host && len(x) > 0 && bytes.Equal(x, y)
}

// datapathResult prints what a datapath run measured and writes its page to html (when given), also when
// the run stopped early (Ctrl-C, an error), and says why it stopped: an existing namespace is a usage
// error.
func datapathResult(s streams, g *globalOptions, v rendered, html string, r datapath.Result, source string, err error) error {
	verb := r.Verb
	if len(r.Trials) > 0 {
		if rerr := render(s, g, v); rerr != nil {
			return rerr
		}
		if html != "" {
			if herr := writeHTML(s, html, htmlreport.Datapath(r.View(), fmt.Sprintf("tare datapath %s with %s", verb, source), Version)); herr != nil {
				return herr
			}
		}
	}
	switch {
	case errors.Is(err, kube.ErrNamespaceExists):
		return usageError("%w", err)
	case err != nil:
		return fmt.Errorf("tare datapath %s (with %s): %w", verb, source, err)
	}
	return nil
}
