package diskpath

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// FioOutcome is what fio reports for one trial, in the direction its pattern moves data.
type FioOutcome struct {
	Seconds float64 `json:"seconds"` // fio's own measured time, after its ramp
	IOs     int64   `json:"ios"`     // I/Os completed in that time
	IOPS    float64 `json:"iops"`
	MBps    float64 `json:"mb_per_s"` // bandwidth, 10⁶ bytes per second
	// P50us and P99us are the completion latency's percentiles (fio's clat: submission to completion).
	P50us float64 `json:"clat_p50_us"`
	P99us float64 `json:"clat_p99_us"`
}

// fioDirection is one direction of a fio job's report.
type fioDirection struct {
	IOBytes  int64   `json:"io_bytes"`
	BWBytes  float64 `json:"bw_bytes"`
	IOPS     float64 `json:"iops"`
	Runtime  int64   `json:"runtime"` // ms
	TotalIOs int64   `json:"total_ios"`
	Clat     struct {
		Percentile map[string]float64 `json:"percentile"`
	} `json:"clat_ns"`
}

// fioReport is the part of fio's --output-format=json that tare reads.
type fioReport struct {
	Jobs []struct {
		Error int          `json:"error"`
		Read  fioDirection `json:"read"`
		Write fioDirection `json:"write"`
	} `json:"jobs"`
}

// ErrFioOutput says fio's output is not a report of completed I/O.
var ErrFioOutput = errors.New("fio reported no completed I/O")

// ParseFio reads fio's --output-format=json report of one job: the write side when writes, else the read
// side. fio may print notes before its JSON; they are skipped. A job that failed or did no I/O is an
// error matching ErrFioOutput.
func ParseFio(b []byte, writes bool) (FioOutcome, error) {
	if i := bytes.IndexByte(b, '{'); i > 0 {
		b = b[i:]
	}
	var r fioReport
	if err := json.Unmarshal(b, &r); err != nil {
		return FioOutcome{}, fmt.Errorf("%w: its output is not its JSON report: %w", ErrFioOutput, err)
	}
	if len(r.Jobs) != 1 {
		return FioOutcome{}, fmt.Errorf("%w: %d jobs in its report, want 1", ErrFioOutput, len(r.Jobs))
	}
	j := r.Jobs[0]
	if j.Error != 0 {
		return FioOutcome{}, fmt.Errorf("%w: the job failed with error %d", ErrFioOutput, j.Error)
	}
	d := j.Read
	if writes {
		d = j.Write
	}
	p50, p99 := d.Clat.Percentile["50.000000"], d.Clat.Percentile["99.000000"]
	if d.TotalIOs <= 0 || d.Runtime <= 0 || d.IOPS <= 0 || p50 <= 0 || p99 < p50 {
		return FioOutcome{}, fmt.Errorf("%w: %d I/Os in %d ms, clat p50 %g ns, p99 %g ns", ErrFioOutput, d.TotalIOs, d.Runtime, p50, p99)
	}
	return FioOutcome{Seconds: float64(d.Runtime) / 1e3, IOs: d.TotalIOs, IOPS: d.IOPS, MBps: d.BWBytes / 1e6,
		P50us: p50 / 1e3, P99us: p99 / 1e3}, nil
}

// fioJob is the job every target runs, told apart only by its file: the same pattern, sizes, engine and
// length. Direct says whether it bypasses the page cache (O_DIRECT); buffered jobs start with fio's
// invalidation of the file's cached pages, so every trial starts with the file out of the cache.
type fioJob struct {
	File    string
	Size    int64
	Lane    Lane
	Direct  bool
	Ramp    time.Duration // left out of fio's figures
	Runtime time.Duration // measured by fio, after Ramp
}

// args are fio's command line for the job: a time-based run over the laid-out file, one JSON report.
func (j fioJob) args() []string {
	return append(j.common(), "--rw="+string(j.Lane.RW), "--bs="+strconv.Itoa(j.Lane.BS), "--iodepth="+strconv.Itoa(j.Lane.IODepth),
		"--time_based", "--runtime="+msec(j.Runtime), "--ramp_time="+msec(j.Ramp), "--randrepeat=0", "--group_reporting")
}

// layoutArgs write the job's file at its full size and run no I/O, so no trial pays for creating it.
func (j fioJob) layoutArgs() []string { return append(j.common(), "--create_only=1") }

// probeArgs read one block with the job's Direct setting: fio fails with EINVAL where the file system
// refuses O_DIRECT.
func (j fioJob) probeArgs() []string {
	return append(j.common(), "--rw=read", "--bs=4096", "--io_size=4096")
}

func (j fioJob) common() []string {
	direct := "0"
	if j.Direct {
		direct = "1"
	}
	return []string{"fio", "--name=tare", "--filename=" + j.File, "--size=" + strconv.FormatInt(j.Size, 10), "--ioengine=libaio",
		"--direct=" + direct, "--output-format=json"}
}

func msec(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }
