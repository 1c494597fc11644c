package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/lab"
)

func newLabRetune(s streams, g *globalOptions, dir *string) *cobra.Command {
	var sets, restart []string
	cmd := &cobra.Command{
		Use:   "retune",
		Short: "Change flags of a running lab by restarting only the components whose flags change",
		Long: `Change flags of a running lab: each --set COMPONENT.FLAG=VALUE replaces that flag's value from up or
an earlier retune (the others stay), and only the components whose flags change restart, every node's for
a node's component; --restart COMPONENT restarts one even when its flags do not change. Each flag is
checked against the component's --help first.

etcd keeps its data; the components restart in order, each once what it talks to is healthy (etcd and
the API server together, the API server retrying its storage, until /health and /readyz are ok; then
the controller manager and the scheduler with their leases dropped, the kubelet until its node is Ready,
kube-proxy), and after a restart of etcd or the API server every other
component is checked alive and healthy. A kubelet restart keeps the pods running. kwok, and kube-proxy in
a lab with extra nodes, cannot be restarted alone: lab down, then up with the flags. retune prints what it
restarted and when each stage ended.`,
		Example: `  sudo tare lab retune --set kube-apiserver.max-requests-inflight=100
  sudo tare lab retune --set etcd.snapshot-count=5000 --set kubelet.v=2
  sudo tare lab retune --restart kube-scheduler     # same flags, fresh process`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ts, err := parseSets(sets)
			if err != nil {
				return err
			}
			for _, name := range restart {
				if err := lab.CheckComponent(name); err != nil {
					return usageError("--restart: %w", err)
				}
			}
			l, err := lab.Open(*dir)
			if err != nil {
				return err // no lab: say so before asking the programs for their --help
			}
			if err := lab.CheckSets(cmd.Context(), "", ts); err != nil {
				return usageError("--set: %w", err)
			}
			r, err := l.Retune(cmd.Context(), lab.MergeSets(l.State.Sets(), ts), restart)
			if err != nil {
				return fmt.Errorf("lab retune: %w", err)
			}
			return render(s, g, viewOf(r, printRetune))
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "COMPONENT.FLAG=VALUE to pass to a component (repeatable); other flags set before stay")
	cmd.Flags().StringArrayVar(&restart, "restart", nil, "COMPONENT to restart even when its flags do not change (repeatable)")
	return cmd
}

func printRetune(w io.Writer, r *lab.RetuneReport) error {
	if len(r.Restarted) == 0 {
		_, err := fmt.Fprintf(w, "nothing to restart: no component's flags change (%s)\n", r.Took.Round(time.Millisecond))
		return err
	}
	if err := printSteps(w, r.Steps); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nrestarted %s in %s\n", strings.Join(r.Restarted, ", "), r.Took.Round(time.Millisecond))
	return err
}
