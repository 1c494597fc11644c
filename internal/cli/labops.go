package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
			r, err := lab.Down(cmd.Context(), *dir, keep)
			if r != nil {
				if rerr := render(s, g, viewOf(r, printDown)); rerr != nil {
					return rerr
				}
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the directory (data, certificates, logs) for a warm start")
	return cmd
}

func printDown(w io.Writer, r *lab.DownReport) error {
	fmt.Fprintf(w, "stopped %d processes", len(r.Stopped))
	if len(r.Strays) > 0 {
		fmt.Fprintf(w, " and %d found by command line", len(r.Strays))
	}
	fmt.Fprintf(w, "; removed %d cgroups", r.Cgroups)
	if r.Kept {
		fmt.Fprintf(w, "; kept %s\n", r.Dir)
		return printDownKubeconfig(w, r)
	}
	fmt.Fprintf(w, "; removed %s\n", r.Dir)
	return printDownKubeconfig(w, r)
}

// printDownKubeconfig says what down did with the context lab up added to the user's kubeconfig.
func printDownKubeconfig(w io.Writer, r *lab.DownReport) error {
	if r.Kubeconfig == "" {
		return nil
	}
	_, err := fmt.Fprintln(w, r.Kubeconfig)
	return err
}

func newLabStatus(s streams, g *globalOptions, dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the lab's processes, API readiness and nodes (exit 1 if anything is unhealthy or there is no lab)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var r *lab.StatusReport
			l, err := lab.Open(*dir)
			if err == nil {
				r, err = l.Status(cmd.Context())
			}
			if err != nil && !errors.Is(err, lab.ErrNotRunning) {
				return err
			}
			st := labStatus{Dir: *dir, Exists: err == nil, StatusReport: r}
			if r != nil {
				st.Dir = r.Dir
			} else if abs, aerr := filepath.Abs(*dir); aerr == nil {
				st.Dir = abs
			}
			if rerr := render(s, g, viewOf(st, printStatus)); rerr != nil {
				return rerr
			}
			switch {
			case err != nil:
				return err
			case !r.Healthy:
				return errors.New("the lab is not healthy (see above; tare lab logs COMPONENT shows why)")
			}
			return nil
		},
	}
}

// labStatus is lab status's answer: the lab's report, or that there is no lab in the directory.
type labStatus struct {
	Dir    string `json:"dir"`
	Exists bool   `json:"exists"`
	*lab.StatusReport
}

func printStatus(w io.Writer, st labStatus) error {
	r := st.StatusReport
	if r == nil {
		_, err := fmt.Fprintf(w, "no lab in %s\n", st.Dir)
		return err
	}
	fmt.Fprintf(w, "lab in %s, profile %s, up since %s (%s)\n", r.Dir, r.Profile, r.Started.Format(time.RFC3339), time.Since(r.Started).Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tPID\tSTATE")
	for _, c := range r.Components {
		state := "running"
		switch {
		case !c.Running:
			state = "NOT RUNNING (log: " + c.Log + ")"
		case c.Frozen:
			state = "frozen (paused)"
		}
		name := c.Name
		if c.Node != "" {
			name += " (" + c.Node + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", name, c.PID, state)
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
	if r.Overlay != "" {
		fmt.Fprintf(w, "pods between nodes: %s\n", r.Overlay)
	}
	fmt.Fprintf(w, "export KUBECONFIG=%s\n", r.Kubeconfig)
	return nil
}

func newLabEnv(s streams, g *globalOptions, dir *string) *cobra.Command {
	var onlyKubeconfig bool
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Print the shell exports to use the lab (eval \"$(tare lab env)\")",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			l, err := lab.Open(*dir)
			if err != nil {
				return err
			}
			env := labEnv{Kubeconfig: l.Kubeconfig(), Dir: l.Dir, only: onlyKubeconfig}
			return render(s, g, viewOf(env, printEnv))
		},
	}
	cmd.Flags().BoolVar(&onlyKubeconfig, "kubeconfig", false, "print only the kubeconfig path")
	return cmd
}

// labEnv is what a shell needs to use the lab.
type labEnv struct {
	Kubeconfig string `json:"kubeconfig"`
	Dir        string `json:"dir"`
	only       bool   // print the kubeconfig's path alone
}

func printEnv(w io.Writer, e labEnv) error {
	if e.only {
		_, err := fmt.Fprintln(w, e.Kubeconfig)
		return err
	}
	_, err := fmt.Fprintf(w, "export KUBECONFIG=%s\nexport TARE_LAB_DIR=%s\n", shellQuote(e.Kubeconfig), shellQuote(e.Dir))
	return err
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
