package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/lab"

	"github.com/tare-dev/tare/internal/sample"
)

// Version is stamped at build time with -ldflags "-X github.com/tare-dev/tare/internal/cli.Version=...".
var Version = "dev"

// ExitCoder is an error that asks for a specific exit status.
type ExitCoder interface {
	error
	ExitCode() int
}

type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }
func (e exitError) ExitCode() int { return e.code }

// usageError marks bad flags or arguments: exit status 2, like kubectl.
func usageError(format string, a ...any) error {
	return asUsage(fmt.Errorf(format, a...))
}

// asUsage marks err, a usage error cobra found (unknown flag or command, bad flag value, wrong number of
// arguments), as usageError does.
func asUsage(err error) error {
	return exitError{code: 2, err: err}
}

// streams are the standard streams a verb may use.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// globalOptions are flags shared by every verb.
type globalOptions struct {
	output       string
	kubeconfig   string
	context      string // kubectl's --context: the kubeconfig context to use instead of the current one
	saidLab      bool   // stderr said that the lab's kubeconfig is used (cluster)
	procRoot     string
	sysRoot      string
	hostRoot     string // where the measured host's / is mounted (its /boot)
	cgroupRoot   string // the cgroup hierarchy node busy is read from; "" finds one under sysRoot
	cpuProfile   string
	allocProfile string
}

// sampleOptions fills in where the measured host's files are: every verb that samples passes its options
// through here, so the roots given on the command line reach the sampler.
func (g *globalOptions) sampleOptions(o sample.Options) sample.Options {
	o.ProcRoot, o.SysRoot, o.HostRoot, o.CgroupRoot = g.procRoot, g.sysRoot, g.hostRoot, g.cgroupRoot
	return o
}

// validate checks the global flags; the root runs it before every verb.
func (g *globalOptions) validate() error {
	switch g.output {
	case "table", "json":
	default:
		return usageError("unknown output format %q: use -o table or -o json", g.output)
	}
	if g.kubeconfig != "" {
		if err := kube.CheckKubeconfig(g.kubeconfig, g.context); err != nil {
			return usageError("--kubeconfig: %w", err)
		}
	} else if g.context != "" {
		// As kubectl: a context the kubeconfig found lacks is refused before anything runs. With no
		// kubeconfig at all, the verb says so (or uses the lab) when it needs a cluster.
		if err := kube.CheckKubeconfig("", g.context); err != nil && !errors.Is(err, kube.ErrNoKubeconfig) {
			return usageError("--context: %w", err)
		}
	}
	return nil
}

// Execute runs tare with args and returns the error to report; it has already been printed to stderr.
func Execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return ExecuteAs(ctx, "tare", args, stdin, stdout, stderr)
}

// ExecuteAs is Execute for a program run by the name argv0. Run as kubectl-tare (PluginName), tare is
// kubectl's plugin "kubectl tare": it names itself so in help and errors, and takes kubectl's flags as
// they come (kubectl passes a plugin every argument after its name and parses none): --kubeconfig and
// --context (global) and -n/--namespace (the verbs with a namespace) have the same meaning as kubectl's.
func ExecuteAs(ctx context.Context, argv0 string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if code, asked := lab.Reap(stdin, stdout, stderr); asked { // tare started as a reaper (an experiment's, a test's labs')
		if code != 0 {
			return exitError{code: code, err: errors.New("the reaper failed")}
		}
		return nil
	}
	s := streams{in: stdin, out: stdout, err: stderr}
	root := newRoot(s)
	name := "tare"
	if isPlugin(argv0) {
		name = "kubectl tare"
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: name}
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return nil
	}
	fmt.Fprintf(stderr, "Error: %v\n", err)
	var ec ExitCoder
	if errors.As(err, &ec) && ec.ExitCode() == 2 {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", strings.Join(append([]string{name}, commandPath(root, args)...), " "))
	}
	return err
}

func commandPath(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == root {
		return nil
	}
	return strings.Fields(strings.TrimPrefix(cmd.CommandPath(), root.CommandPath()+" "))
}

func newRoot(s streams) *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:   "tare",
		Short: "Measure what a Kubernetes node costs before any workload runs",
		Long: `tare measures the overhead of a Kubernetes node (or any Linux host): node CPU, every component,
pod and process, short-lived children credited to their parents, and its own cost, with totals that
reconcile against the node's counters.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	pf := root.PersistentFlags()
	pf.StringVarP(&g.output, "output", "o", "table", "output format: table or json")
	pf.StringVar(&g.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default as kubectl: $KUBECONFIG, else ~/.kube/config, where tare lab up adds its context; else a running lab's)")
	pf.StringVar(&g.context, "context", "", "kubeconfig context to use (default its current context)")
	pf.StringVar(&g.procRoot, "proc-root", "/proc", "where procfs is mounted (a host's /proc seen from a container)")
	pf.StringVar(&g.sysRoot, "sys-root", "/sys", "where sysfs is mounted")
	pf.StringVar(&g.hostRoot, "host-root", "/", "where the host's / is mounted: its /boot/config-RELEASE gives the tick rate and IRQ time accounting when /proc/config.gz is missing")
	pf.StringVar(&g.cgroupRoot, "cgroup-root", "", "cgroup hierarchy node busy is read from: a cgroup v2 root or a v1 cpuacct hierarchy (default: under --sys-root, v2 at fs/cgroup, else v1 cpuacct, else v2 at fs/cgroup/unified)")
	pf.StringVar(&g.cpuProfile, "cpu-profile", "", "write a Go CPU profile of tare itself to this file (to study tare's own overhead)")
	_ = pf.MarkHidden("cpu-profile")
	pf.StringVar(&g.allocProfile, "alloc-profile", "", "write a Go profile of tare's own allocations to this file when the command ends (to study its garbage collection)")
	_ = pf.MarkHidden("alloc-profile")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if err := g.validate(); err != nil {
			return err
		}
		if g.allocProfile != "" {
			root.PersistentPostRun = func(*cobra.Command, []string) { writeAllocProfile(g.allocProfile) }
		}
		if g.cpuProfile == "" {
			return nil
		}
		f, err := os.Create(g.cpuProfile)
		if err != nil {
			return fmt.Errorf("creating the CPU profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("starting the CPU profile: %w", err)
		}
		root.PersistentPostRun = func(*cobra.Command, []string) {
			pprof.StopCPUProfile()
			f.Close()
			if g.allocProfile != "" {
				writeAllocProfile(g.allocProfile)
			}
		}
		return nil
	}
	root.AddCommand(newMeasure(s, g), newReport(s, g), newExplain(s, g), newExperiment(s, g), newDiff(s, g), newExport(s, g), newLab(s, g), newAgent(s, g), newCluster(s, g), newDensity(s, g), newFit(s, g), newDatapath(s, g), newProfile(s, g), newPlugin(s))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return asUsage(err) })
	usageArgs(root)
	return root
}

// writeAllocProfile writes the allocations profile (pprof's "allocs") to path, best effort: a profile that
// cannot be written says so on stderr and loses nothing of the command's output.
func writeAllocProfile(path string) {
	f, err := os.Create(path)
	if err == nil {
		err = errors.Join(pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tare: writing the allocation profile: %v\n", err)
	}
}

// usageArgs makes every wrong argument cobra finds a usage error: each command's Args validator is wrapped,
// and a command that only groups others (tare, tare lab) prints its help when run alone and refuses an
// unknown subcommand. Flag errors are wrapped by the root's flag error function, which every command
// inherits.
func usageArgs(cmd *cobra.Command) {
	switch {
	case cmd.HasSubCommands() && !cmd.Runnable():
		cmd.Args = unknownSubcommand
		cmd.SuggestionsMinimumDistance = max(cmd.SuggestionsMinimumDistance, 2) // cobra's default
		cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	case cmd.Args != nil:
		check := cmd.Args
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return asUsage(err)
			}
			return nil
		}
	}
	for _, c := range cmd.Commands() {
		usageArgs(c)
	}
}

// unknownSubcommand refuses any argument of a command that only groups others, suggesting the nearest
// subcommands as cobra does.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageError("%s", msg)
}
