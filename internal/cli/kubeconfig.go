package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/lab"
)

// kubeTarget is the cluster a verb works on: a kubeconfig file ("" for kubectl's lookup) and a context
// ("" for the current one), and the lab's state when the kubeconfig is a lab's own, found because no
// other was.
type kubeTarget struct {
	kubeconfig string
	context    string
	lab        *lab.State
}

// options are o with the target's context.
func (t kubeTarget) options(o kube.Options) kube.Options {
	o.Context = t.context
	return o
}

// client connects to the target as kube.NewClient does.
func (t kubeTarget) client(o kube.Options) (*kube.Client, error) {
	return kube.NewClient(t.kubeconfig, t.options(o))
}

// cluster is the cluster a verb that needs one uses, found as kubectl finds it: --kubeconfig (with
// --context), else $KUBECONFIG's files, else ~/.kube/config (where tare lab up adds its context). When
// none is found and a lab runs in labDir, it is that lab's kubeconfig, and stderr says so once.
func (g *globalOptions) cluster(s streams, labDir string) kubeTarget {
	t := kubeTarget{kubeconfig: g.kubeconfig, context: g.context}
	if g.kubeconfig != "" || (g.context != "" && g.context != lab.ContextName(labDir)) {
		return t
	}
	if _, err := kube.NewClient("", kube.Options{Context: g.context}); !errors.Is(err, kube.ErrNoKubeconfig) {
		return t
	}
	l, err := lab.Open(labDir)
	if err != nil {
		return t
	}
	st := l.State
	if !st.Ready || st.Kubeconfig == "" {
		return t
	}
	if _, err := os.Stat(st.Kubeconfig); err != nil {
		return t
	}
	if !g.saidLab {
		fmt.Fprintf(s.err, "no kubeconfig found (--kubeconfig, $KUBECONFIG, ~/.kube/config): using the lab in %s (%s)\n", st.Dir, st.Kubeconfig)
		g.saidLab = true
	}
	return kubeTarget{kubeconfig: st.Kubeconfig, lab: st}
}
