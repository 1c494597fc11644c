package audit

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/valyala/fastjson"
)

// Fuzz targets of the audit log reader: one line at a time, and a whole log through the chunked stream.
// Seeded with the lines of testdata/audit.log.

// logLines returns the lines of the test log.
func logLines(f *testing.F) [][]byte {
	f.Helper()
	b, err := os.ReadFile("testdata/audit.log")
	if err != nil {
		f.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte("\n"))
}

func FuzzParseEvent(f *testing.F) {
	for _, l := range logLines(f) {
		f.Add(bytes.TrimSuffix(l, []byte("\n")))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var p fastjson.Parser
		e, err := parseEvent(&p, line)
		if err != nil {
			return
		}
		if e.at.IsZero() && !bytes.Contains(line, []byte("Timestamp")) {
			t.Fatalf("event %+v without a timestamp", e)
		}
		_ = e.counted()
		_ = ClientName(e.userAgent)
	})
}

func FuzzStream(f *testing.F) {
	lines := logLines(f)
	// Every fixture line alone, then runs of ten (bad lines among good ones), each as one log.
	for _, l := range lines {
		f.Add(l)
	}
	for i := 0; i < len(lines); i += 10 {
		f.Add(bytes.Join(lines[i:min(i+10, len(lines))], nil))
	}
	f.Fuzz(func(t *testing.T, log []byte) {
		r, err := Stream(context.Background(), bytes.NewReader(log), Options{MaxBadLines: 3})
		if err != nil {
			t.Fatalf("reading from memory: %v", err)
		}
		lines := bytes.Count(log, []byte("\n"))
		if len(log) > 0 && log[len(log)-1] != '\n' {
			lines++
		}
		if r.Lines != lines {
			t.Fatalf("%d lines counted, the log has %d", r.Lines, lines)
		}
		if r.Events+r.BadLines > r.Lines || r.Requests+r.OutOfWindow > r.Events || len(r.Bad) > 3 || len(r.Bad) > r.BadLines {
			t.Fatalf("counts do not add up: %d lines, %d events, %d bad (%d kept), %d requests, %d out of window",
				r.Lines, r.Events, r.BadLines, len(r.Bad), r.Requests, r.OutOfWindow)
		}
		sum := 0
		for _, c := range r.Clients {
			sum += c.Requests
		}
		if sum != r.Requests {
			t.Fatalf("clients' requests sum to %d, the report counts %d", sum, r.Requests)
		}
	})
}
