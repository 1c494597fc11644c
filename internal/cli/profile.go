package cli

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/htmlreport"
	"github.com/tare-dev/tare/internal/lab"
	tprofile "github.com/tare-dev/tare/internal/profile"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/userfile"
)

type profileOptions struct {
	duration  time.Duration
	frequency int
	filter    tprofile.Filter
	pprofOut  string
	html      string
	top       int
}

func newProfile(s streams, g *globalOptions) *cobra.Command {
	o := &profileOptions{}
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "Sample every CPU's call stacks and show which functions each group spends its CPU in",
		Long: `Sample the call stacks (kernel and user, by frame pointers) of every CPU with perf events, hardware
cycles where the machine has them, else the cpu-clock timer, and print each group's top functions (-o table),
or write a pprof profile (--pprof) whose samples carry the labels group, kind, pod, container, command and pid.
tare's own CPU (its process's, from the start of the recording until the frames are named) is printed.

Kernel frames are named from /proc/kallsyms, user frames from each binary's ELF symbols (Go's included),
read through /proc/PID/root. A process's memory map is read at its first sample: a process that exited
before that (within about 100 ms) has [unknown] frames. Idle CPUs are not sampled.

Needs CAP_PERFMON (or root), or kernel.perf_event_paranoid=-1. The perf binary is not needed.`,
		Example: `  # 30 s at 99 Hz on every CPU: each group's top functions
  sudo tare profile

  # Write a pprof profile and look at one group with go tool pprof
  sudo tare profile --duration 1m --pprof node.pb.gz
  go tool pprof -top -tagfocus group=kube-apiserver node.pb.gz

  # Compare two runs
  tare profile diff before.pb.gz after.pb.gz
  go tool pprof -top -diff_base before.pb.gz after.pb.gz`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProfile(cmd.Context(), s, g, o)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.duration, "duration", 30*time.Second, "how long to sample")
	f.IntVar(&o.frequency, "frequency", 99, "samples per second on each CPU")
	f.IntVar(&o.filter.PID, "pid", 0, "keep only this process's samples")
	f.StringVar(&o.filter.Group, "group", "", "keep only this group's samples (as tare measure names it: kube-apiserver, pod NS/NAME, kernel threads, other)")
	f.StringVar(&o.filter.Pod, "pod", "", "keep only this pod's samples, NAMESPACE/NAME (or its UID without a kubeconfig)")
	f.StringVar(&o.pprofOut, "pprof", "", "write the profile to this file (gzipped protobuf, for go tool pprof)")
	f.IntVar(&o.top, "top", 10, "functions shown per group in the table")
	htmlFlag(f, &o.html)
	cmd.AddCommand(newProfileDiff(s, g))
	return cmd
}

func (o *profileOptions) validate() error {
	switch {
	case o.duration <= 0:
		return usageError("--duration must be positive, got %s", o.duration)
	case o.frequency < 1 || o.frequency > 10000:
		return usageError("--frequency %d: want 1 to 10000 samples per second", o.frequency)
	case o.filter.PID < 0:
		return usageError("--pid %d: want a process ID", o.filter.PID)
	case o.filter.Pod != "" && strings.Count(o.filter.Pod, "/") > 1:
		return usageError("--pod %q: want NAMESPACE/NAME", o.filter.Pod)
	}
	if err := checkTop(o.top); err != nil {
		return err
	}
	return checkHTML(o.html)
}

func runProfile(ctx context.Context, s streams, g *globalOptions, o *profileOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	if err := checkOutput("--pprof", o.pprofOut); err != nil {
		return err
	}
	names, nameNote := podNamer(ctx, g.cluster(s, lab.DefaultDir()), sample.HostName(g.procRoot))
	if nameNote != "" {
		fmt.Fprintf(s.err, "warning: %s\n", nameNote)
	}
	// tare's own cost is its process's CPU (every thread) from the start of the recording until the frames
	// are named: naming is part of the cost, so it happens inside that span, user binaries opened as
	// samples hit them (while their processes run), every symbol read once the recording is over. A
	// measuring session beside the recording would read every process of the node to report the same.
	live := liveLine(s, g)
	live.Start("profiling", o.duration)
	cpu0, t0 := tprofile.OwnCPU(), time.Now()
	sym := tprofile.NewSymbolizer(g.procRoot, nil)
	defer sym.Close()
	raw, recErr := tprofile.Record(ctx, tprofile.Options{ProcRoot: g.procRoot, Frequency: o.frequency, Duration: o.duration, OnSample: sym.Prepare})
	var p *profile.Profile
	if recErr == nil {
		k, kerr := tprofile.ReadKallsyms(g.procRoot)
		if kerr != nil {
			warner(s, live)(kerr.Error())
		}
		if dir, err := lab.CacheDir(); err == nil {
			k.UseCache(dir) // the kernel image's symbols, kept per boot
		}
		sym.UseKallsyms(k)
		p = tprofile.Build(raw, sym, tprofile.BuildOptions{SelfPID: os.Getpid(), PodNames: names, Filter: o.filter})
	}
	cpu1, span := tprofile.OwnCPU(), time.Since(t0)
	live.Done()
	if recErr != nil {
		return recErr
	}
	sum := tprofile.Summarize(raw, p, o.top)
	sum.MissingSymbols = sym.Missing
	if cpu0 >= 0 && cpu1 >= cpu0 && span > 0 {
		sum.SelfMillicores = (cpu1 - cpu0).Seconds() / span.Seconds() * 1000
	}
	if o.pprofOut != "" {
		if err := writeProfile(o.pprofOut, p); err != nil {
			return err
		}
		fmt.Fprintf(s.err, "pprof profile: %s (go tool pprof -top -tagfocus group=NAME %s)\n", o.pprofOut, o.pprofOut)
	}
	if err := renderProfile(s, g, sum); err != nil {
		return err
	}
	if o.html != "" {
		if err := writeHTML(s, o.html, htmlreport.Profile(sum, tprofile.GroupedByGroup(p), Version)); err != nil {
			return err
		}
	}
	if len(p.Sample) == 0 {
		if o.filter != (tprofile.Filter{}) {
			return fmt.Errorf("no samples matched %s: check the name with tare measure, or widen the filter", describeFilter(o.filter))
		}
		return errors.New("no samples: the CPUs were idle for the whole window")
	}
	return nil
}

func describeFilter(f tprofile.Filter) string {
	var parts []string
	if f.PID != 0 {
		parts = append(parts, fmt.Sprintf("--pid %d", f.PID))
	}
	if f.Group != "" {
		parts = append(parts, fmt.Sprintf("--group %q", f.Group))
	}
	if f.Pod != "" {
		parts = append(parts, fmt.Sprintf("--pod %q", f.Pod))
	}
	return strings.Join(parts, " ")
}

func renderProfile(s streams, g *globalOptions, sum tprofile.Summary) error {
	if g.output == "json" {
		enc := json.NewEncoder(s.out)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	return tprofile.WriteTable(s.out, sum)
}

// writeProfile writes p gzipped through a temporary file, so a failure leaves no half-written profile.
func writeProfile(path string, p *profile.Profile) error {
	err := userfile.Write(path, func(w io.Writer) error {
		// Gzipped at the fastest level, as the Go runtime writes its own profiles: the default level costs
		// tare profile a few milliseconds more for a few percent smaller file.
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		if err := p.WriteUncompressed(zw); err != nil {
			return err
		}
		return zw.Close()
	})
	if err != nil {
		return fmt.Errorf("writing the profile %s: %w", path, err)
	}
	return nil
}

func newProfileDiff(s streams, g *globalOptions) *cobra.Command {
	top := 20
	cmd := &cobra.Command{
		Use:   "diff A.pb.gz B.pb.gz",
		Short: "Compare two profiles: CPU per group and the functions that changed most",
		Long: `Compare two profiles written by tare profile --pprof: each group's CPU and each function's own CPU in
millicores (CPU over each profile's duration, so runs of different lengths compare), largest change first.
go tool pprof -top -diff_base A.pb.gz B.pb.gz shows the same with call stacks.`,
		Args: cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := checkTop(top); err != nil {
				return err
			}
			a, err := tprofile.ReadFile(args[0])
			if err != nil {
				return err
			}
			b, err := tprofile.ReadFile(args[1])
			if err != nil {
				return err
			}
			d := tprofile.Compare(a, b, top)
			if g.output == "json" {
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				return enc.Encode(d)
			}
			return tprofile.WriteDiff(s.out, d)
		},
	}
	cmd.Flags().IntVar(&top, "top", top, "functions shown")
	return cmd
}
