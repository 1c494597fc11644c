package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/summary"
	"github.com/tare-dev/tare/internal/testenv"
)

// openPTY opens a pseudo-terminal pair: tare writes to the terminal end as to a user's terminal, the
// test reads what it shows from the other.
func openPTY(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		testenv.Unavailable(t, "no pseudo-terminals here: %v", err)
	}
	ptm = os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("naming the pty: %v", err)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pty: %v", err)
	}
	// Raw output: no \n -> \r\n translation, so the test reads what tare wrote.
	tio, err := unix.IoctlGetTermios(int(pts.Fd()), unix.TCGETS)
	if err == nil {
		tio.Oflag &^= unix.OPOST
		_ = unix.IoctlSetTermios(int(pts.Fd()), unix.TCSETS, tio)
	}
	return ptm, pts
}

// runOnTerminal runs tare in-process with stdout and stderr on a real pseudo-terminal and returns all
// it showed.
func runOnTerminal(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ptm, pts := openPTY(t)
	shown := readTerminal(ptm)
	err := Execute(context.Background(), args, strings.NewReader(""), pts, pts)
	pts.Close()
	return shown(t), err
}

// runOnTerminals is runOnTerminal with stdout and stderr on two terminals (a user's terminal shows both,
// but warnings go to stderr), returning what each showed.
func runOnTerminals(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	outM, outS := openPTY(t)
	errM, errS := openPTY(t)
	shownOut, shownErr := readTerminal(outM), readTerminal(errM)
	err = Execute(context.Background(), args, strings.NewReader(""), outS, errS)
	outS.Close()
	errS.Close()
	return shownOut(t), shownErr(t), err
}

// readTerminal reads what the terminal whose other end is ptm shows; the function returned waits until
// that end is closed and returns it all.
func readTerminal(ptm *os.File) func(*testing.T) string {
	var shown bytes.Buffer
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(&shown, ptm) // ends with EIO once the terminal end is closed
		close(done)
	}()
	return func(t *testing.T) string {
		t.Helper()
		defer ptm.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the terminal's output did not end")
		}
		return shown.String()
	}
}

// TestProgressOnTerminal: on a terminal, measure shows a live status line (elapsed, remaining, node
// busy, the busiest groups, the burner's among them) redrawn in place and removed before the report; with
// -o json on the same terminal, or with stdout not a terminal, nothing but the output.
func TestProgressOnTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("burns CPU for seconds")
	}
	h := startHelper(t, "burn", "400")
	h.line(t, 10*time.Second)
	shown, err := runOnTerminal(t, "measure", "--duration", "3s", "--interval", "250ms")
	if err != nil {
		t.Fatalf("measure on a terminal: %v\n%s", err, shown)
	}
	lines := strings.Count(shown, "\r\x1b[2Kmeasuring ")
	if lines < 3 || !strings.Contains(shown, " left) · node ") || !strings.Contains(shown, "other ") {
		t.Errorf("%d status lines; want several with time left, node busy and the burner's group:\n%q", lines, shown[:min(len(shown), 2000)])
	}
	report := shown[strings.LastIndex(shown, "\r\x1b[2K")+len("\r\x1b[2K"):]
	// The report's first line names this machine as uname(2) does: it starts right after the cleared line.
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("NODE %s  kernel %s  ", unix.ByteSliceToString(uts.Nodename[:]), unix.ByteSliceToString(uts.Release[:]))
	if !strings.HasPrefix(report, head) {
		t.Errorf("the report does not start on a clean line with %q: %q", head, report[:min(200, len(report))])
	}

	// Warnings (a busy CI machine makes some) go to stderr, as off a terminal; no status line on either.
	shown, warned, err := runOnTerminals(t, "measure", "--duration", "1s", "--interval", "250ms", "-o", "json")
	if err != nil {
		t.Fatalf("measure -o json on a terminal: %v", err)
	}
	var s summary.Summary
	if err := json.Unmarshal([]byte(shown), &s); err != nil || strings.Contains(shown, "\x1b[") {
		t.Errorf("-o json on a terminal is not plain JSON (%v): %q … %q", err, shown[:min(len(shown), 300)], shown[max(0, len(shown)-300):])
	}
	if strings.Contains(warned, "\x1b[") || strings.Contains(warned, "left)") {
		t.Errorf("-o json on a terminal drew a status line on stderr: %q", warned)
	}
	out, errOut, err := run(context.Background(), "measure", "--duration", "1s", "--interval", "250ms")
	if err != nil || strings.Contains(out+errOut, "\x1b[") || strings.Contains(out+errOut, "left)") {
		t.Errorf("not a terminal: %v, status line in the output:\n%s%s", err, errOut, out)
	}
}
