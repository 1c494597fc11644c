package audit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/valyala/fastjson"
)

// Options restrict what is counted.
type Options struct {
	From, To time.Time // count requests received in [From, To); zero: no bound
	// MaxBadLines is how many bad lines are kept with their number and reason (all are counted). 0: 20.
	MaxBadLines int
}

// BadLine is a line that could not be read as an audit event.
type BadLine struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// ErrNoLog says the audit log does not exist; the message says how to enable one.
var ErrNoLog = errors.New("no audit log")

// EnableHint says how to get an audit log.
const EnableHint = "start kube-apiserver with --audit-log-path=FILE and --audit-policy-file=POLICY (a policy with one rule, level: Metadata, is enough), or start the lab with `tare lab up --audit`"

// File streams an audit log from disk. A missing file is ErrNoLog with the hint to enable one.
func File(ctx context.Context, path string, opts Options) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w at %s: %s", ErrNoLog, path, EnableHint)
		}
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	defer f.Close()
	r, err := Stream(ctx, f, opts)
	if r != nil {
		r.Source = path
	}
	return r, err
}

// Stream reads JSON lines from r and counts every request. Memory is bounded by the number of distinct
// (client, verb, resource, namespace) keys and minutes, never by the size of the log. Bad lines (not JSON,
// cut short, not an Event) are counted and skipped. A cancelled context returns what was counted so far
// along with the context's error.
func Stream(ctx context.Context, r io.Reader, opts Options) (*Report, error) {
	if opts.MaxBadLines == 0 {
		opts.MaxBadLines = 20
	}
	agg := newAggregator(opts)
	br := bufio.NewReaderSize(r, 1<<20)
	var p fastjson.Parser
	var long []byte // a line longer than the reader's buffer, assembled
	line := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			continue
		}
		if long != nil {
			chunk = append(long, chunk...)
			long = nil
		}
		if len(chunk) > 0 {
			line++
			if line&0xffff == 0 && ctx.Err() != nil {
				return agg.report(), ctx.Err()
			}
			agg.line(&p, line, bytes.TrimRight(chunk, "\r\n"))
		}
		if err == io.EOF {
			return agg.report(), nil
		}
		if err != nil {
			return agg.report(), fmt.Errorf("reading audit log at line %d: %w", line+1, err)
		}
	}
}
