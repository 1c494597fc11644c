package cli

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/testload"
)

// secretShape is a command line that carries a secret: program is its argv[0], args the rest.
type secretShape struct {
	program string
	args    []string
	secret  string
}

// secretShapes are the five shapes that once leaked (issue 35), each with a secret of its own; the long
// runs as a process for the whole measurement, the short as children started every 100 ms.
func secretShapes(tag string) []secretShape {
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0YXJl" + tag + "In0.c2lnbmF0dXJl" + tag
	return []secretShape{
		{"redis-cli", []string{"-h", "127.0.0.1", "-a", "REDISPW" + tag, "ping"}, "REDISPW" + tag},
		{"curl", []string{"-u", "alice:CURLPW" + tag, "http://127.0.0.1:1/"}, "CURLPW" + tag},
		{"docker", []string{"login", "-p", "DOCKERPW" + tag, "registry.example.com"}, "DOCKERPW" + tag},
		{"webhook", []string{"--header", jwt}, jwt},
		{"dbtool", []string{"--password", "-DASHPW" + tag, "--verbose"}, "-DASHPW" + tag},
	}
}

// TestSecretShapesNeverLeave runs each shape as a long-lived process (argv[0] its program) and as
// short-lived children, and searches every output for the secrets: measure's table, JSON and HTML, the
// recording and its report, and the agent's /summary served with command lines. Each output must show the
// processes (else the test proves nothing).
func TestSecretShapesNeverLeave(t *testing.T) {
	requireRoot(t)
	requireTiming(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	var secrets []string
	for _, s := range secretShapes("L") {
		link := filepath.Join(bin, s.program)
		if err := os.Symlink(exe, link); err != nil {
			t.Fatal(err)
		}
		startIdleAs(t, link, s.args)
		secrets = append(secrets, s.secret)
	}
	// The children: bash's exec -a gives /bin/true the shape's argv[0]; true ignores its arguments.
	var loop strings.Builder
	loop.WriteString("while :; do ")
	for _, s := range secretShapes("S") {
		fmt.Fprintf(&loop, "(exec -a %s /bin/true %s); ", s.program, strings.Join(s.args, " "))
		secrets = append(secrets, s.secret)
	}
	loop.WriteString("sleep 0.1; done")
	children := exec.Command("bash", "-c", loop.String())
	if err := children.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = children.Process.Kill()
		_ = children.Wait()
	})

	ctx := context.Background()
	dir := t.TempDir()
	db, html := filepath.Join(dir, "rec.db"), filepath.Join(dir, "m.html")
	table, errOut, err := run(ctx, "measure", "--duration", "3s", "--record", db, "--html", html)
	if err != nil {
		t.Fatalf("measure: %v\n%s", err, errOut)
	}
	jsonOut, _, err := run(ctx, "measure", "--duration", "3s", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	report, _, err := run(ctx, "report", db, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{"measure table": table, "measure stderr": errOut, "measure -o json": jsonOut, "report -o json": report,
		"agent /summary": agentSummary(t), "agent /metrics": agentMetrics}
	if b, err := os.ReadFile(html); err == nil {
		outputs["measure --html"] = string(b)
	}
	files, _ := filepath.Glob(db + "*")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		outputs[f] = string(b)
	}
	// The processes are there, masked: the short-lived children by their program as the parent's children.
	for _, want := range []string{"redis-cli -h 127.0.0.1 -a ***", "docker login -p ***", "curl -u alice:***"} {
		for _, name := range []string{"measure -o json", "agent /summary"} {
			if strings.Count(outputs[name], want) < 2 { // the long-lived process and the children
				t.Errorf("%s shows %q %d times: want the long-lived process and the children (else the test proves nothing)",
					name, want, strings.Count(outputs[name], want))
			}
		}
	}
	for name, out := range outputs {
		for _, secret := range secrets {
			if i := strings.Index(out, secret); i >= 0 {
				t.Errorf("%s holds the secret %s: …%s…", name, secret, out[max(0, i-60):min(len(out), i+len(secret)+20)])
			}
		}
	}
}

// agentMetrics is the /metrics agentSummary's agent served.
var agentMetrics string

// agentSummary runs tare agent in-process with --serve-cmdlines for a few samples and returns its
// /summary (and keeps its /metrics in agentMetrics).
func agentSummary(t *testing.T) string {
	t.Helper()
	a := startAgentCLI(t, "--interval", "200ms", "--window", "10s", "--detail-interval", "200ms", "--serve-cmdlines")
	defer a.stop(t)
	time.Sleep(3 * time.Second) // children started and ended within the window
	_, agentMetrics = a.get("/metrics")
	code, body := a.get("/summary?window=3s")
	if code != http.StatusOK {
		t.Fatalf("/summary: %d %s", code, body)
	}
	return body
}

// startIdleAs runs the test binary as an idle helper under the name of link (its argv[0]) with args, until
// the test ends.
func startIdleAs(t *testing.T, link string, args []string) {
	t.Helper()
	cmd := exec.Command(link, args...)
	cmd.Env = append(os.Environ(), testload.EnvMode+"=idle")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// Running once its command line is the shape's (the idle mode prints nothing).
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
		if strings.Contains(string(b), args[len(args)-1]) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the helper %s is not running: cmdline %q", link, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
