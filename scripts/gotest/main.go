// Command gotest runs `go test -json` with the given arguments and prints what plain `go test` prints (each
// package's verdict, and the output of failed tests and failed packages), then where the time went: every
// package and the slowest tests with their durations, so that each CI log says which tests make CI long.
// Its exit status is go test's. make test runs the test passes through it. With $TARE_TEST_EVENTS naming a
// file, every line go test printed is also appended there as it came (each test's log lines with their
// times: where the time went inside a slow test).
//
// Usage: go run ./scripts/gotest [go test flags] [packages]
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// timing is how long one test or package took.
type timing struct {
	name    string
	seconds float64
	failed  bool
}

// report keeps each test's output until its verdict and the durations for the summary.
type report struct {
	w        io.Writer
	pending  map[string][]string // package + "\x00" + test (test empty for the package's own lines) -> output
	tests    []timing
	packages []timing
}

func newReport(w io.Writer) *report { return &report{w: w, pending: map[string][]string{}} }

func (r *report) add(e event) {
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "output":
		r.pending[key] = append(r.pending[key], e.Output)
	case "pass", "skip", "fail":
		failed := e.Action == "fail"
		if e.Test != "" {
			if failed {
				r.print(r.pending[key])
			}
			delete(r.pending, key)
			if !strings.Contains(e.Test, "/") {
				r.tests = append(r.tests, timing{name: e.Package + " " + e.Test, seconds: e.Elapsed, failed: failed})
			}
			return
		}
		r.packageDone(e, failed)
	}
}

// packageDone prints a package's verdict: everything it printed when it failed (a panic, a timeout's
// stacks, and the output of tests that never ended), its ok line otherwise.
func (r *report) packageDone(e event, failed bool) {
	prefix := e.Package + "\x00"
	if failed {
		var open []string
		for k := range r.pending {
			if strings.HasPrefix(k, prefix) && k != prefix {
				open = append(open, k)
			}
		}
		sort.Strings(open)
		for _, k := range open {
			r.print(r.pending[k])
			delete(r.pending, k)
		}
		r.print(r.pending[prefix])
	} else {
		for _, l := range r.pending[prefix] {
			if l != "PASS\n" {
				fmt.Fprint(r.w, l)
			}
		}
		for k := range r.pending {
			if strings.HasPrefix(k, prefix) {
				delete(r.pending, k)
			}
		}
	}
	delete(r.pending, prefix)
	if e.Elapsed > 0 || failed {
		r.packages = append(r.packages, timing{name: e.Package, seconds: e.Elapsed, failed: failed})
	}
}

func (r *report) print(lines []string) {
	for _, l := range lines {
		fmt.Fprint(r.w, l)
	}
}

// summary prints the packages by time and the n slowest tests.
func (r *report) summary(n int) {
	byTime := func(ts []timing) {
		sort.SliceStable(ts, func(i, j int) bool { return ts[i].seconds > ts[j].seconds })
	}
	byTime(r.packages)
	byTime(r.tests)
	var total float64
	for _, p := range r.packages {
		total += p.seconds
	}
	fmt.Fprintf(r.w, "\n--- time by package (%.0f s in all)\n", total)
	for _, p := range r.packages {
		fmt.Fprintf(r.w, "%8.1f s  %s%s\n", p.seconds, p.name, mark(p.failed))
	}
	fmt.Fprintf(r.w, "--- the %d slowest tests\n", min(n, len(r.tests)))
	for _, t := range r.tests[:min(n, len(r.tests))] {
		fmt.Fprintf(r.w, "%8.1f s  %s%s\n", t.seconds, t.name, mark(t.failed))
	}
}

func mark(failed bool) string {
	if failed {
		return "  FAILED"
	}
	return ""
}

func main() {
	gobin := os.Getenv("GO")
	if gobin == "" {
		gobin = "go"
	}
	cmd := exec.Command(gobin, append([]string{"test", "-json"}, os.Args[1:]...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(2)
	}
	events := io.Discard
	if path := os.Getenv("TARE_TEST_EVENTS"); path != "" {
		// Unbuffered, and open until the process ends (it exits with go test's status).
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gotest: $TARE_TEST_EVENTS:", err)
			os.Exit(2)
		}
		events = f
	}
	r := newReport(os.Stdout)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		_, _ = events.Write(append(sc.Bytes(), '\n'))
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Println(sc.Text()) // not an event (a build error's line): as go test prints it
			continue
		}
		r.add(e)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "gotest: reading go test's output:", err)
	}
	err = cmd.Wait()
	r.summary(30)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(2)
	}
}
