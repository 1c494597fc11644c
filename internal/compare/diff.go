package compare

import (
	"fmt"
	"time"

	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/summary"
)

// diffFamilies are the metric families a recording holds (no API request rate: a recording has none).
var diffFamilies = []string{NodeBusy, ControlPlaneCPU, ComponentCPU, ComponentMemory, EtcdWrites}

// Diff compares two recordings the way an experiment compares variants: each is cut into blocks of the
// given length (consecutive seconds of CPU are correlated; block means much less so), every block is one
// observation, and the blocks of b are tested against those of a.
func Diff(a, b record.Recording, nameA, nameB string, block time.Duration, alpha float64) (Results, error) {
	if nameA == nameB {
		nameA, nameB = nameA+" (A)", nameB+" (B)"
	}
	d := Design{Name: fmt.Sprintf("diff %s → %s (%s blocks)", nameA, nameB, block), Alpha: alpha, Tolerance: 20,
		Variants: []string{nameA, nameB}, Observation: "block"}
	var trials []Trial
	for _, x := range []struct {
		name string
		rec  record.Recording
	}{{nameA, a}, {nameB, b}} {
		blocks := splitBlocks(x.rec.Samples, block)
		if len(blocks) == 0 {
			return Results{}, fmt.Errorf("%s is shorter than one %s block: record for longer or pass a shorter --block", x.name, block)
		}
		for i, bl := range blocks {
			sum := summary.Build(x.rec.Meta, bl, summary.Options{})
			trials = append(trials, Trial{Seq: len(trials) + 1, Round: i + 1, Variant: x.name, Started: bl[0].Time, Status: "ok",
				Metrics: Measure(sum, -1, diffFamilies)})
		}
	}
	return Analyze(d, trials), nil
}

// splitBlocks cuts samples into consecutive windows of at least length d; each block starts with the
// previous block's last sample (its baseline). A remainder shorter than half a block is dropped.
func splitBlocks(samples []sample.Sample, d time.Duration) [][]sample.Sample {
	var out [][]sample.Sample
	start := 0
	var el time.Duration
	for i := 1; i < len(samples); i++ {
		el += samples[i].Elapsed
		if el >= d {
			out = append(out, samples[start:i+1])
			start, el = i, 0
		}
	}
	if el >= d/2 && start < len(samples)-1 {
		out = append(out, samples[start:])
	}
	return out
}
