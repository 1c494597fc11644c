package cli

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/experiment"
	"github.com/tare-dev/tare/internal/testload"
)

// TestExperimentConcurrent: a concurrent experiment on four control-plane-only labs, two a variant, whose
// variants differ in a scheduler flag and in a burner regulated on wall time to burnMC beside each lab
// of the second variant's share, named kube-scheduler so that it counts in the control plane. Every round
// measures both variants in one window; each trial counts only its share's labs and run commands, so the
// difference of a round's trials is the two burners (ground truth: the load's own regulation, not the
// counter tare reads) while each trial alone is a share's idle control planes. The shares are dealt at
// random every round: each trial's labs, lab by lab, are those its run command started beside (as the
// command itself wrote down), a burner's lab reads the burner and its idle control plane, an idle lab
// only the latter. Afterwards no lab is left.
func TestExperimentConcurrent(t *testing.T) {
	requireLab(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	notes := t.TempDir()
	const burnMC = 150.0
	spec := writeSpec(t, fmt.Sprintf(`name: concurrent
target: {lab: {settle: 5s, control_plane_only: true, replicas: 4, concurrent: true}}
trials: 2
warmup: 1s
window: 6s
guard: {api_latency: false}
variants:
  - {name: idle}
  - name: burner
    set: [kube-scheduler.v=2]
    run: echo $TARE_REPLICA >> %s/replicas; sleep 600 | %s=burn bash -c 'exec -a kube-scheduler "$0" "$1"' %s %g
`, notes, testload.EnvMode, self, burnMC))
	out := filepath.Join(t.TempDir(), "conc")
	stdout, stderr, err := run(context.Background(), "experiment", spec, "--out", out, "--lab-dir", t.TempDir(), "-o", "json")
	t.Log(stderr)
	if err != nil {
		t.Fatalf("experiment: %v", err)
	}
	assertNoLab(t, out)
	for k := 2; k <= 4; k++ {
		if _, err := os.Stat(filepath.Join(out, fmt.Sprintf("lab-%d", k))); err == nil {
			t.Errorf("lab-%d is left in %s", k, out)
		}
	}
	for _, want := range []string{"4 labs up in", "each of the 2 variants on 2 of them at once", "kube-scheduler restarted on 4 labs", "round 2: idle, burner at once on 4 labs"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the experiment's output lacks %q", want)
		}
	}
	b, err := os.ReadFile(filepath.Join(notes, "replicas"))
	if err != nil {
		t.Fatal(err)
	}
	var beside []int // the labs the burner ran beside: round 1's two, then round 2's
	for _, f := range strings.Fields(string(b)) {
		k, _ := strconv.Atoi(f)
		beside = append(beside, k)
	}
	if len(beside) != 4 {
		t.Fatalf("the burner started beside labs %v, want two a round over two rounds", beside)
	}
	r := decodeResults(t, stdout)
	byRound := map[int]map[string]float64{}
	recs := map[int]string{}
	for _, tr := range r.Trials {
		if tr.Status != "ok" {
			t.Fatalf("trial %d (%s): %s %s", tr.Seq, tr.Variant, tr.Status, tr.Error)
		}
		if byRound[tr.Round] == nil {
			byRound[tr.Round] = map[string]float64{}
			recs[tr.Round] = tr.Recording
		} else if recs[tr.Round] != tr.Recording {
			t.Errorf("round %d: its trials have recordings %s and %s, want one window", tr.Round, recs[tr.Round], tr.Recording)
		}
		byRound[tr.Round][tr.Variant] = tr.Metrics["control-plane-cpu"]
		if rate := tr.Metrics["api-requests"]; !(rate > 0) {
			t.Errorf("trial %d: no API request rate of its share (%v)", tr.Seq, rate)
		}
		var labs []int
		for _, l := range tr.Labs {
			labs = append(labs, l.Lab)
			cpu := l.Metrics["control-plane-cpu"]
			t.Logf("round %d, %s, lab %d: control plane %.1fm", tr.Round, tr.Variant, l.Lab, cpu)
			if tr.Variant == "burner" && math.Abs(cpu-burnMC) > 0.2*burnMC+60 {
				t.Errorf("round %d, lab %d: %.1fm, want its burner's %gm (±20%%) and an idle control plane (under 60m)", tr.Round, l.Lab, cpu, burnMC)
			}
			if tr.Variant == "idle" && !(cpu > 2 && cpu < 0.5*burnMC) {
				t.Errorf("round %d, lab %d: %.1fm, want an idle control plane (no burner's %gm)", tr.Round, l.Lab, cpu, burnMC)
			}
		}
		slices.Sort(labs)
		if tr.Variant == "burner" && tr.Round >= 1 && tr.Round <= 2 {
			want := slices.Sorted(slices.Values(beside[2*(tr.Round-1) : 2*tr.Round]))
			if !slices.Equal(labs, want) {
				t.Errorf("round %d: the burner's trial holds labs %v, its run command ran beside %v", tr.Round, labs, want)
			}
		}
		if len(labs) != 2 {
			t.Errorf("trial %d (%s): labs %v, want its share's 2", tr.Seq, tr.Variant, labs)
		}
	}
	if len(byRound) != 2 {
		t.Fatalf("%d rounds, want 2", len(byRound))
	}
	for round, m := range byRound {
		idle, burner := m["idle"], m["burner"]
		// Two idle control planes take 40-80m here; one share's must not hold the other's burners.
		if !(idle > 5 && idle < burnMC) {
			t.Errorf("round %d: the idle share's control plane %.1fm: not two idle labs (the burners' %gm counted in it, or nothing)", round, idle, 2*burnMC)
		}
		if d := burner - idle; math.Abs(d-2*burnMC) > 0.2*2*burnMC {
			t.Errorf("round %d: burner - idle = %.1fm, want the two burners' %gm ±20%%", round, d, 2*burnMC)
		}
	}
}

// TestExperimentConcurrentInterrupted: a concurrent experiment on four labs interrupted (as by Ctrl-C)
// once its first round is saved keeps that round and stops every lab; --resume starts the labs again,
// measures only the rounds left, each whole, and leaves nothing behind.
func TestExperimentConcurrentInterrupted(t *testing.T) {
	requireLab(t)
	spec := writeSpec(t, `name: concurrent-interrupted
target: {lab: {settle: 5s, control_plane_only: true, replicas: 4, concurrent: true}}
trials: 3
warmup: 1s
window: 4s
guard: {api_latency: false}
variants:
  - {name: a}
  - {name: b, set: [kube-scheduler.v=2]}
`)
	out := filepath.Join(t.TempDir(), "conc")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			time.Sleep(500 * time.Millisecond)
			if st, trials, err := experiment.Open(ctx, out); err == nil {
				st.Close()
				if okTrials(trials) >= 2 {
					cancel()
				}
			}
		}
	}()
	_, stderr, err := run(ctx, "experiment", spec, "--out", out, "--lab-dir", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("interrupted experiment: %v\n%s", err, stderr)
	}
	assertNoLabs(t, out, 4)
	st, trials, err := experiment.Open(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	done := map[int]int{}
	for _, tr := range trials {
		if tr.Status == "ok" {
			done[tr.Round]++
		}
	}
	// A round is saved whole or not at all; the interruption came after the first and before the last.
	for round, n := range done {
		if n != 2 {
			t.Errorf("round %d: %d of its 2 trials saved", round, n)
		}
	}
	if len(done) == 0 || len(done) == 3 {
		t.Fatalf("%d of 3 rounds done after the interruption; want some but not all", len(done))
	}
	stdout, stderr, err := run(context.Background(), "experiment", "--resume", out, "--lab-dir", t.TempDir(), "-o", "json")
	t.Log(stderr)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	for round := range done {
		if strings.Contains(stderr, fmt.Sprintf("round %d:", round)) {
			t.Errorf("resume measured round %d again", round)
		}
	}
	r := decodeResults(t, stdout)
	if len(r.Trials) != 6 {
		t.Errorf("%d trials after the resume, want 6", len(r.Trials))
	}
	for _, tr := range r.Trials {
		if tr.Status != "ok" {
			t.Errorf("trial %d (round %d, %s): %s %s", tr.Seq, tr.Round, tr.Variant, tr.Status, tr.Error)
		}
	}
	assertNoLabs(t, out, 4)
	for k := 2; k <= 4; k++ {
		if _, err := os.Stat(filepath.Join(out, fmt.Sprintf("lab-%d", k))); err == nil {
			t.Errorf("lab-%d is left in %s", k, out)
		}
	}
}

// assertNoLabs checks that none of an experiment's n labs (in dir: lab, lab-2, ...) runs and that their
// API servers' ports are free.
func assertNoLabs(t *testing.T, dir string, n int) {
	t.Helper()
	for k := 1; k <= n; k++ {
		name := "lab"
		if k > 1 {
			name = fmt.Sprintf("lab-%d", k)
		}
		if st, err := labState(filepath.Join(dir, name)); err == nil {
			t.Errorf("lab %d still runs in %s: %+v", k, st.Dir, st.Processes)
		}
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", 6443+100*(k-1)))
		if err != nil {
			t.Errorf("lab %d's API server port still taken: %v", k, err)
			continue
		}
		l.Close()
	}
}
