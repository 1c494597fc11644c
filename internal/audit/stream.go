package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/valyala/fastjson"

	"github.com/tare-dev/tare/internal/userfile"
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
	f, err := userfile.Open(path, "audit log")
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

// chunkSize is how much of the log one worker parses at a time.
const chunkSize = 4 << 20

type chunk struct {
	data      []byte
	firstLine int // number of the chunk's first line
}

// Stream reads JSON lines from r and counts every request. One goroutine cuts the log into chunks at line
// ends; one parser per CPU counts them into its own tallies, merged at the end. Memory is bounded by a few
// chunks in flight and the number of distinct (client, verb, resource, namespace) keys and minutes, never
// by the size of the log. Bad lines (not JSON, cut short, not an Event) are counted and skipped. A
// cancelled context returns what was counted so far along with the context's error.
func Stream(ctx context.Context, r io.Reader, opts Options) (*Report, error) {
	if opts.MaxBadLines == 0 {
		opts.MaxBadLines = 20
	}
	workers := max(1, runtime.GOMAXPROCS(0))
	chunks := make(chan chunk, workers)
	aggs := make([]*aggregator, workers)
	var wg sync.WaitGroup
	for w := range aggs {
		a := newAggregator(opts)
		aggs[w] = a
		wg.Go(func() {
			var p fastjson.Parser
			for c := range chunks {
				a.chunk(&p, c)
			}
		})
	}
	err := split(ctx, r, chunks)
	close(chunks)
	wg.Wait()
	for _, a := range aggs[1:] {
		aggs[0].merge(a)
	}
	return aggs[0].report(), err
}

// split reads r into line-aligned chunks. A line longer than a chunk grows its chunk.
func split(ctx context.Context, r io.Reader, out chan<- chunk) error {
	line := 1
	var carry []byte
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		buf := make([]byte, len(carry), max(chunkSize, 2*len(carry)))
		copy(buf, carry)
		n, err := io.ReadFull(r, buf[len(carry):cap(buf)])
		buf = buf[:len(carry)+n]
		eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !eof {
			return fmt.Errorf("reading audit log after line %d: %w", line, err)
		}
		cut := len(buf)
		if !eof {
			cut = bytes.LastIndexByte(buf, '\n') + 1 // 0 when no line ends in buf: carry it all
		}
		if cut > 0 {
			out <- chunk{data: buf[:cut], firstLine: line}
			line += bytes.Count(buf[:cut], []byte{'\n'})
		}
		carry = buf[cut:]
		if eof {
			return nil
		}
	}
}
