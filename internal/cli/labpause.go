package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/lab"
)

func newLabPause(s streams, g *globalOptions, dir *string) *cobra.Command {
	var freezer string
	cmd := &cobra.Command{
		Use:   "pause",
		Short: "Freeze the lab's control plane and node agents with the cgroup freezer; pods keep running",
		Long: `Freeze etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, kubelet and kube-proxy
with the cgroup freezer (v1 freezer.state, or cgroup v2's cgroup.freeze): they use no CPU and keep their
memory. containerd, the shims and the pods' own processes are not frozen, so user pods keep running and
answer on their IPs; nothing talks to the API meanwhile. pause moves the frozen processes into cgroups of
their own under the lab's cgroup root (tare-lab/paused/NAME in the freezer hierarchy, and in cpuacct on
cgroup v1); unpause thaws them, puts them back where they were and removes those cgroups.
unpause thaws etcd, kube-apiserver, the node agents and kwok first and waits until every node's lease is
renewed, then the controller manager and the scheduler, so that a pause of minutes does not have the
node lifecycle controller mark the node NotReady.

--freezer chooses the freezer. v1: the v1 freezer controller (freezer.state), the processes also moved
into the v1 cpuacct hierarchy so the kernel counts their CPU apart (cpuacct.usage). v2: cgroup v2's core
freezer (cgroup.freeze, cgroup.events), in the cgroup2 mount (/sys/fs/cgroup, or /sys/fs/cgroup/unified
on a hybrid machine, where no controller needs enabling); the kernel counts their CPU in the same
cgroup's cpu.stat. auto (the default): v1 when its freezer controller is mounted, else v2. unpause and
lab down use the freezer pause used.

A pause interrupted (Ctrl-C) before every process is frozen is undone: nothing is left frozen. lab
status shows a paused lab; lab down thaws it before stopping it.`,
		Example: `  sudo tare lab pause
  sudo tare lab pause --freezer v2   # cgroup v2's freezer, even where the v1 controller is mounted
  sudo tare measure --duration 60s   # the paused lab's cost
  sudo tare lab unpause`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := lab.ParseFreezer(freezer)
			if err != nil {
				return usageError("--freezer: %w", err)
			}
			l, err := lab.Open(*dir)
			if err != nil {
				return err
			}
			r, err := l.Pause(cmd.Context(), lab.PauseOptions{Freezer: f})
			if err != nil {
				return err
			}
			if cmd.Context().Err() != nil { // Ctrl-C came after the freeze was complete
				fmt.Fprintln(s.err, "interrupted after the pause completed: the lab is paused (tare lab unpause resumes it)")
			}
			return render(s, g, viewOf(r, printPause))
		},
	}
	cmd.Flags().StringVar(&freezer, "freezer", string(lab.FreezerAuto), "cgroup freezer: auto (v1 when its controller is mounted, else v2), v1 (freezer.state) or v2 (cgroup.freeze)")
	return cmd
}

func printPause(w io.Writer, r *lab.PauseReport) error {
	_, err := fmt.Fprintf(w, "paused %s in %s (frozen with the %s freezer in %s): tare lab unpause resumes it\n",
		strings.Join(r.Frozen, ", "), r.Took.Round(time.Millisecond), r.Freezer, r.Cgroup)
	return err
}

func newLabUnpause(s streams, g *globalOptions, dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "unpause",
		Short: "Thaw a paused lab and wait until the API server's /readyz is ok",
		Long: `Thaw what lab pause froze, put each process back in the cgroups it came from, remove the cgroups
pause made, and wait (up to a minute) for the API server's /readyz to answer ok. Also undoes a pause that
was interrupted.`,
		Example: `  sudo tare lab unpause`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := lab.Open(*dir)
			if err != nil {
				return err
			}
			r, err := l.Unpause(cmd.Context())
			if r != nil {
				if rerr := render(s, g, viewOf(r, printUnpause)); rerr != nil {
					return errors.Join(err, rerr)
				}
			}
			return err
		},
	}
}

func printUnpause(w io.Writer, r *lab.UnpauseReport) error {
	fmt.Fprintf(w, "thawed %d processes in %s after %s paused", r.ProcessesNow, r.ThawTook.Round(time.Millisecond), r.Paused.Round(time.Second))
	if r.Interrupted || r.ReadyAfter <= 0 {
		_, err := fmt.Fprintln(w, "; /readyz not ok yet")
		return err
	}
	fmt.Fprintf(w, "; /readyz ok after %s", r.ReadyAfter.Round(time.Millisecond))
	if r.LeasesRenewed > 0 {
		fmt.Fprintf(w, "; node leases renewed after %s, before the controller manager and scheduler thawed", r.LeasesRenewed.Round(time.Millisecond))
	}
	if r.NodesReady > 0 {
		fmt.Fprintf(w, "; node Ready again after %s (the kubelet's PLEG check trips after a pause of 3 min)", r.NodesReady.Round(time.Millisecond))
	}
	for _, note := range []string{r.LeaseNote, r.NodeNote} {
		if note != "" {
			fmt.Fprintf(w, "\nnote: %s", note)
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}
