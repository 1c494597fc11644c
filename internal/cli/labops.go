package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/redact"
)

func newLabDown(s streams, g *globalOptions, dir *string) *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop every lab process and remove what the lab added to the machine",
		Long: `Stop every process the lab started (by recorded PID and start time, and any process whose command
line names the lab directory, such as shims or a component started just before tare was killed), then
remove the mounts, pod network namespaces, the tare0 bridge, the KUBE-/CNI- iptables chains, the lab's
cgroups and container log links, and put back the sysctls kubelet and kube-proxy changed. The directory
is removed unless --keep (the next up starts warm). down checks that nothing is left and names what is.`,
		Example: `  sudo tare lab down
  sudo tare lab down --keep`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.validate(); err != nil {
				return err
			}
			r, err := lab.Down(cmd.Context(), *dir, keep)
			if r != nil {
				if g.output == "json" {
					if jerr := writeJSON(s.out, r); jerr != nil {
						return jerr
					}
				} else {
					fmt.Fprintf(s.out, "stopped %d processes", len(r.Stopped))
					if len(r.Strays) > 0 {
						fmt.Fprintf(s.out, " and %d found by command line", len(r.Strays))
					}
					fmt.Fprintf(s.out, "; removed %d cgroups", r.Cgroups)
					if r.Kept {
						fmt.Fprintf(s.out, "; kept %s\n", r.Dir)
					} else {
						fmt.Fprintf(s.out, "; removed %s\n", r.Dir)
					}
				}
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the directory (data, certificates, logs) for a warm start")
	return cmd
}

func newLabStatus(s streams, g *globalOptions, dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the lab's processes, API readiness and nodes (exit 1 if anything is unhealthy)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.validate(); err != nil {
				return err
			}
			r, err := lab.Status(cmd.Context(), *dir)
			if err != nil {
				return err
			}
			if g.output == "json" {
				if err := writeJSON(s.out, r); err != nil {
					return err
				}
			} else if err := printStatus(s.out, r); err != nil {
				return err
			}
			if !r.Healthy {
				return errors.New("the lab is not healthy (see above; tare lab logs COMPONENT shows why)")
			}
			return nil
		},
	}
}

func printStatus(w io.Writer, r *lab.StatusReport) error {
	fmt.Fprintf(w, "lab in %s, profile %s, up since %s (%s)\n", r.Dir, r.Profile, r.Started.Format(time.RFC3339), time.Since(r.Started).Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tPID\tSTATE")
	for _, c := range r.Components {
		state := "running"
		if !c.Running {
			state = "NOT RUNNING (log: " + c.Log + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", c.Name, c.PID, state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.APIReady {
		fmt.Fprintf(w, "API %s: ready\n", r.Server)
	} else {
		fmt.Fprintf(w, "API %s: NOT READY: %s\n", r.Server, redact.Text(r.APIError))
	}
	for _, n := range r.Nodes {
		ready, kind := "Ready", ""
		if !n.Ready {
			ready = "NOT READY"
		}
		if n.Fake {
			kind = " (kwok)"
		}
		fmt.Fprintf(w, "node %s%s: %s\n", n.Name, kind, ready)
	}
	fmt.Fprintf(w, "export KUBECONFIG=%s\n", r.Kubeconfig)
	return nil
}

func newLabEnv(s streams, dir *string) *cobra.Command {
	var onlyKubeconfig bool
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Print the shell exports to use the lab (eval \"$(tare lab env)\")",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			st, err := lab.LoadState(*dir)
			if err != nil {
				return err
			}
			if onlyKubeconfig {
				fmt.Fprintln(s.out, st.Kubeconfig)
				return nil
			}
			fmt.Fprintf(s.out, "export KUBECONFIG=%s\nexport TARE_LAB_DIR=%s\n", shellQuote(st.Kubeconfig), shellQuote(st.Dir))
			return nil
		},
	}
	cmd.Flags().BoolVar(&onlyKubeconfig, "kubeconfig", false, "print only the kubeconfig path")
	return cmd
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-", r)
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func newLabLogs(s streams, dir *string) *cobra.Command {
	var lines int
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs COMPONENT",
		Short: "Print a lab component's log, secrets redacted",
		Example: `  sudo tare lab logs kube-apiserver --tail 50
  sudo tare lab logs kubelet -f`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if lines < 0 {
				return usageError("--tail %d: want 0 (all) or more", lines)
			}
			path, err := lab.LogPath(*dir, args[0])
			if err != nil {
				return err
			}
			return printLog(cmd.Context(), s.out, path, lines, follow)
		},
	}
	cmd.Flags().IntVar(&lines, "tail", 0, "print only the last N lines (0: all)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until interrupted")
	return cmd
}

// printLog prints a log file (the last n lines when n > 0) through redaction, following it if asked.
func printLog(ctx context.Context, w io.Writer, path string, n int, follow bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var ring []string
	for {
		line, err := r.ReadString('\n')
		if line != "" && strings.HasSuffix(line, "\n") {
			if n > 0 {
				ring = append(ring, line)
				if len(ring) > n {
					ring = ring[1:]
				}
			} else {
				fmt.Fprint(w, redact.Text(line))
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		for _, l := range ring {
			fmt.Fprint(w, redact.Text(l))
		}
		ring, n = nil, 0
		if !follow {
			if line != "" {
				fmt.Fprintln(w, redact.Text(line))
			}
			return nil
		}
		// Partial line: wait for the rest.
		if _, err := f.Seek(-int64(len(line)), io.SeekCurrent); err != nil {
			return err
		}
		r.Reset(f)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}
