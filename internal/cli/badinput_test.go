package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/summary"
)

// oneContextKubeconfig is a kubeconfig with one context, "one", whose server nothing answers.
const oneContextKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: one, context: {cluster: c, user: u}}]
current-context: one
`

func TestBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte("not sqlite"), 0o600); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(dir, "exists.db")
	if err := os.WriteFile(existing, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	corruptLab := filepath.Join(dir, "corrupt-lab")
	if err := os.MkdirAll(corruptLab, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(corruptLab, "state.json"), []byte("{\"version\": 1, \"processes\": [tru"), 0o600); err != nil {
		t.Fatal(err)
	}
	oneTrial := filepath.Join(dir, "one-trial.yaml")
	if err := os.WriteFile(oneTrial, []byte("name: x\ntrials: 1\nwindow: 10s\nvariants: [{name: a}, {name: b}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badComponent := filepath.Join(dir, "bad-component.yaml")
	if err := os.WriteFile(badComponent, []byte("name: x\ntrials: 4\nwindow: 10s\nvariants: [{name: a}, {name: b, set: [coredns.replicas=1]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	notKubeconfig := filepath.Join(dir, "kubeconfig.txt")
	if err := os.WriteFile(notKubeconfig, []byte("just some notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	oneContext := filepath.Join(dir, "one-context")
	if err := os.WriteFile(oneContext, []byte(oneContextKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyKubeconfig := filepath.Join(dir, "empty-kubeconfig")
	if err := os.WriteFile(emptyKubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	negTolerance := filepath.Join(dir, "neg-tolerance.yaml")
	if err := os.WriteFile(negTolerance, []byte("name: x\ntrials: 4\nwindow: 10s\nguard: {tolerance: -10%}\nvariants: [{name: a}, {name: b}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A sequential spec's rounds come from its pilot: no trials, pilot_rounds and no mde (--mde gives it).
	pilotOnly := filepath.Join(dir, "pilot-only.yaml")
	if err := os.WriteFile(pilotOnly, []byte("name: x\npilot_rounds: 4\nwindow: 10s\nvariants: [{name: a}, {name: b}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"experiment pilot_rounds without mde", []string{"experiment", pilotOnly}, 2, "give mde"},
		// --mde completes the spec before its check: the next step (the pilot it names) is what fails.
		{"experiment --mde completes the spec", []string{"experiment", pilotOnly, "--mde", "2%", "--pilot", filepath.Join(dir, "none")}, 1, "--pilot: no experiment in"},
		{"experiment bad --mde", []string{"experiment", pilotOnly, "--mde", "two"}, 2, "--mde: want a percentage"},
		{"experiment --budget without --mde", []string{"experiment", oneTrial, "--budget", "10m"}, 2, "give --mde"},
		{"experiment --mde with --resume", []string{"experiment", "--resume", dir, "--mde", "2%"}, 2, "--resume goes on with the stored plan"},
		{"kubeconfig that is not one", []string{"measure", "--duration", "1s", "--kubeconfig", notKubeconfig}, 2, "is not a kubeconfig"},
		{"kubeconfig without clusters", []string{"report", garbage, "--kubeconfig", emptyKubeconfig}, 2, "names no cluster"},
		{"context the kubeconfig lacks", []string{"density", "--kubeconfig", oneContext, "--context", "two"}, 2, `has no context "two"`},
		{"kubeconfig missing", []string{"measure", "--duration", "1s", "--kubeconfig", filepath.Join(dir, "nope")}, 2, "no such file"},
		{"experiment negative tolerance", []string{"experiment", negTolerance}, 2, "guard.tolerance -10%"},
		{"unknown flag", []string{"measure", "--durration", "1s"}, 2, "unknown flag: --durration"},
		{"measure detail interval 0", []string{"measure", "--duration", "1s", "--detail-interval", "0"}, 2, "--detail-interval must be positive"},
		{"agent detail interval 0", []string{"agent", "--detail-interval", "0"}, 2, "--detail-interval must be positive"},
		{"manifest port 0", []string{"agent", "manifest", "--port", "0"}, 2, "--port 0: want a port from 1 to 65535"},
		{"manifest port too high", []string{"agent", "manifest", "--port", "70000"}, 2, "--port 70000"},
		{"manifest interval 0", []string{"agent", "manifest", "--interval", "0"}, 2, "--interval must be positive"},
		{"density bad namespace", []string{"density", "--namespace", "Bad_NS!"}, 2, `--namespace "Bad_NS!"`},
		{"density pods too many", []string{"density", "--pods", "0,1000000000"}, 2, "pod count 1000000000 is above"},
		{"unknown verb", []string{"mesure"}, 2, "unknown command"},
		{"zero duration", []string{"measure", "--duration", "0s"}, 2, "--duration must be positive"},
		{"negative duration", []string{"measure", "--duration", "-5s"}, 2, "--duration must be positive"},
		{"not a duration", []string{"measure", "--duration", "soon"}, 2, "invalid argument"},
		{"zero interval", []string{"measure", "--interval", "0s"}, 2, "--interval must be positive"},
		{"interval longer than duration", []string{"measure", "--duration", "1s", "--interval", "2s"}, 2, "longer than --duration"},
		{"interval too short", []string{"measure", "--duration", "1s", "--interval", "1ms"}, 2, "below the 10ms floor"},
		{"bad output", []string{"measure", "-o", "yaml"}, 2, "unknown output format"},
		{"bad regexp", []string{"measure", "--match", "("}, 2, "--match"},
		{"stray argument", []string{"measure", "now"}, 2, "unknown command"},
		{"report without file", []string{"report"}, 2, "give a recording FILE (tare measure --record) or --prometheus URL"},
		{"report missing file", []string{"report", filepath.Join(dir, "nope.db")}, 1, "no such file"},
		{"report garbage", []string{"report", garbage}, 1, "not a tare recording"},
		{"record over a file", []string{"measure", "--duration", "1s", "--record", existing}, 1, "already exists"},
		{"record in a missing dir", []string{"measure", "--duration", "1s", "--record", filepath.Join(dir, "no", "r.db")}, 1, "no such file"},
		{"explain interval below 100ms", []string{"explain", "--interval", "50ms"}, 2, "below explain's 100ms floor"},
		{"explain bad pprof url", []string{"explain", "--pprof-url", "etcd"}, 2, "want NAME=http(s)://HOST:PORT"},
		{"explain two recordings", []string{"explain", garbage, existing}, 2, "accepts at most 1 arg"},
		{"explain garbage recording", []string{"explain", garbage}, 1, "not a tare recording"},
		{"explain missing recording", []string{"explain", filepath.Join(dir, "nope.db")}, 1, "no such file"},
		{"experiment without spec", []string{"experiment"}, 2, "give a spec file, or --resume DIR"},
		{"experiment spec and resume", []string{"experiment", oneTrial, "--resume", dir}, 2, "give a spec file, or --resume DIR"},
		{"experiment missing spec", []string{"experiment", filepath.Join(dir, "nope.yaml")}, 2, "no such file"},
		{"experiment one trial", []string{"experiment", oneTrial}, 2, "at least 2 are needed"},
		{"experiment unknown component", []string{"experiment", badComponent}, 2, "unknown component coredns"},
		{"experiment resume nothing", []string{"experiment", "--resume", filepath.Join(dir, "none")}, 1, "no experiment in"},
		{"diff one file", []string{"diff", garbage}, 2, "accepts 2 arg"},
		{"diff garbage", []string{"diff", garbage, garbage}, 1, "not a tare recording"},
		{"diff bad block", []string{"diff", garbage, garbage, "--block", "0s"}, 2, "--block must be positive"},
		{"export without format", []string{"export", garbage}, 2, "--format \"\": want csv, json, openmetrics"},
		{"export garbage", []string{"export", garbage, "--format", "csv"}, 1, "not a tare recording"},
		{"lab install with a bad bin dir", []string{"lab", "install", "--bin-dir", filepath.Join(dir, "nobin")}, 1, "--bin-dir"},
		{"lab install stray argument", []string{"lab", "install", "now"}, 2, "unknown command"},
		{"lab up unknown profile", []string{"lab", "up", "--dir", filepath.Join(dir, "lab"), "--profile", "fast"}, 2, "unknown profile \"fast\""},
		{"lab up bad --set", []string{"lab", "up", "--dir", filepath.Join(dir, "lab"), "--set", "kubelet"}, 2, "COMPONENT.FLAG=VALUE"},
		{"lab up unknown component", []string{"lab", "up", "--dir", filepath.Join(dir, "lab"), "--set", "kubectl.v=1"}, 2, "unknown component kubectl"},
		{"lab up negative kwok nodes", []string{"lab", "up", "--dir", filepath.Join(dir, "lab"), "--kwok-nodes", "-1"}, 2, "--kwok-nodes -1"},
		{"lab status without a lab", []string{"lab", "status", "--dir", dir}, 1, "no lab in " + dir},
		{"lab down without a lab", []string{"lab", "down", "--dir", dir}, 1, "no lab in " + dir},
		{"lab env without a lab", []string{"lab", "env", "--dir", dir}, 1, "no lab in " + dir},
		{"lab logs without a component", []string{"lab", "logs", "--dir", dir}, 2, "accepts 1 arg"},
		{"lab logs bad tail", []string{"lab", "logs", "etcd", "--tail", "-3", "--dir", dir}, 2, "--tail -3"},
		{"lab status corrupt state", []string{"lab", "status", "--dir", corruptLab}, 1, "is corrupt"},
		{"bad proc root", []string{"measure", "--duration", "1s", "--proc-root", filepath.Join(dir, "noproc")}, 1, "noproc"},
		{"measure top 0", []string{"measure", "--duration", "1s", "--top", "0"}, 2, "--top 0: want 1 or more"},
		{"fit density missing", []string{"fit", "--request", "cpu=1", "--density", filepath.Join(dir, "nope.json")}, 2, "no such file"},
		{"fit density not one", []string{"fit", "--request", "cpu=1", "--density", garbage}, 2, "not the output of tare density"},
		{"fit density and overhead", []string{"fit", "--request", "cpu=1", "--density", garbage, "--overhead", "cpu=1m"}, 2, "give one"},
		{"density negative max pods", []string{"density", "--max-pods", "-1"}, 2, "--max-pods -1"},
		{"density percentile 100", []string{"density", "--percentile", "100"}, 2, "--percentile 100: want one above 0 and below 100"},
		{"density allocatable with kwok", []string{"density", "--kwok", "--allocatable-out", filepath.Join(dir, "a.yaml")}, 2, "--allocatable-out and --kwok"},
		{"density allocatable into a missing dir", []string{"density", "--allocatable-out", filepath.Join(dir, "nodir", "a.yaml")}, 2, "--allocatable-out"},
		{"fit allocatable missing", []string{"fit", "--request", "cpu=1", "--allocatable", filepath.Join(dir, "nope.yaml")}, 2, "no such file"},
		{"fit allocatable not one", []string{"fit", "--request", "cpu=1", "--allocatable", garbage}, 2, "not a measured allocatable"},
		{"density no containers", []string{"density", "--containers-per-pod", "0"}, 2, "--containers-per-pod 0: want 1 to 64"},
		{"measure top 0 with a short detail interval", []string{"measure", "--duration", "1s", "--interval", "500ms", "--detail-interval", "100ms", "--top", "0"}, 2, "--top 0: want 1 or more"},
		{"report negative top", []string{"report", garbage, "--top", "-1"}, 2, "--top -1: want 1 or more"},
		{"explain top 0", []string{"explain", "--top", "0"}, 2, "--top 0: want 1 or more"},
		{"flag without its value", []string{"measure", "--duration"}, 2, "flag needs an argument"},
		{"unknown shorthand", []string{"measure", "-z"}, 2, "unknown shorthand flag"},
		{"unknown lab verb", []string{"lab", "stats"}, 2, `unknown command "stats" for "tare lab"; did you mean status?`},
		{"unknown lab flag", []string{"lab", "up", "--profil", "tuned"}, 2, "unknown flag: --profil"},
		{"lab status bad output", []string{"lab", "status", "--dir", dir, "-o", "yaml"}, 2, "unknown output format"},
		{"lab env bad output", []string{"lab", "env", "--dir", dir, "-o", "yaml"}, 2, "unknown output format"},
		// A failure whose message happens to read like cobra's is not a usage error.
		{"runtime error worded like a usage error", []string{"report", filepath.Join(dir, "unknown flag: --x.db")}, 1, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, err := run(context.Background(), tt.args...)
			if err == nil {
				t.Fatalf("tare %v succeeded; stdout:\n%s", tt.args, out)
			}
			code := 1
			var ec ExitCoder
			if errors.As(err, &ec) {
				code = ec.ExitCode()
			}
			if code != tt.code {
				t.Errorf("exit code %d, want %d (%v)", code, tt.code, err)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr %q does not say %q", errOut, tt.want)
			}
			if strings.Contains(errOut, "panic") || strings.Contains(out, "panic") {
				t.Errorf("panic in output")
			}
		})
	}
}

// TestGroupsPrintHelp: a command that only groups others (tare, tare lab) prints its help when run
// alone, and succeeds.
func TestGroupsPrintHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"lab"}} {
		out, errOut, err := run(context.Background(), args...)
		if err != nil || !strings.Contains(out, "Available Commands:") || errOut != "" {
			t.Errorf("tare %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, errOut)
		}
	}
}

// TestMeasureInterrupted: Ctrl-C (a cancelled context) stops early, still prints the summary of what was
// measured, and the recording keeps every sample.
func TestMeasureInterrupted(t *testing.T) {
	requireTiming(t)
	t.Parallel()
	db := filepath.Join(t.TempDir(), "r.db")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(1500 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	out, errOut, err := run(ctx, "measure", "--duration", "60s", "--interval", "200ms", "--record", db)
	if err != nil {
		t.Fatalf("interrupted measure failed: %v\n%s", err, errOut)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("measure took %s after Ctrl-C", time.Since(start))
	}
	for _, want := range []string{"interrupted", "CPU busy", "RECONCILIATION"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary after Ctrl-C lacks %q:\n%s", want, out)
		}
	}
	rec, err := record.Read(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Samples) < 5 || !rec.Meta.Interrupted {
		t.Errorf("recording after Ctrl-C: %d samples, interrupted=%v", len(rec.Samples), rec.Meta.Interrupted)
	}
}

// TestMeasureUnprivilegedSaysWhatIsMissing: without taskstats tare says what it could not use and why.
func TestMeasureUnprivilegedSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	out, _, err := run(context.Background(), "measure", "--duration", "1s", "--unprivileged")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "limitation:") || !strings.Contains(out, "cpu source schedstat") {
		t.Errorf("unprivileged run does not state its limitations:\n%s", out)
	}
}

func TestHelpStatesBusyDefinition(t *testing.T) {
	t.Parallel()
	out, _, err := run(context.Background(), "measure", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{summary.BusyDefinition, "--record", "Examples:", "--match"} {
		if !strings.Contains(out, want) {
			t.Errorf("measure --help lacks %q", want)
		}
	}
}

// TestExperimentWithoutLab: on a fresh machine (no lab installed) an experiment with a lab target is refused
// before it writes anything, and says what to run.
func TestExperimentWithoutLab(t *testing.T) {
	t.Setenv("TARE_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(spec, []byte("name: x\ntrials: 2\nwindow: 10s\ntarget: {lab: {control_plane_only: true}}\nvariants: [{name: a}, {name: b, set: [etcd.snapshot-count=5000]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	_, errOut, err := run(context.Background(), "experiment", spec, "--out", out, "--lab-dir", filepath.Join(dir, "lab"))
	var ec ExitCoder
	if err == nil || !errors.As(err, &ec) || ec.ExitCode() != 2 {
		t.Fatalf("experiment without a lab: %v, want exit 2\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "the lab is not installed") || !strings.Contains(errOut, "tare lab install") {
		t.Errorf("stderr does not say to install the lab: %s", errOut)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the experiment wrote %s before refusing (stat: %v)", out, err)
	}
}
