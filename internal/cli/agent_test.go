package cli

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAgentServes runs tare agent in-process: it serves /healthz and /metrics under the node name from
// $NODE_NAME, and Ctrl-C (the context cancelled) ends it with no error.
func TestAgentServes(t *testing.T) {
	t.Setenv("NODE_NAME", "node-from-env")
	a := startAgentCLI(t, "--interval", "100ms", "--window", "2s")
	if code, body := a.get("/metrics"); code != http.StatusOK || !strings.Contains(body, `node="node-from-env"`) {
		t.Errorf("GET /metrics: %d, want 200 with tare_agent_info{node=\"node-from-env\"}:\n%.3000s", code, body)
	}
	if r := a.stop(t); r.err != nil {
		t.Errorf("tare agent after Ctrl-C: %v, want no error\n%s", r.err, r.stderr)
	}
}

// agentCLI is tare agent run in-process on a free loopback address.
type agentCLI struct {
	addr   string
	client *http.Client
	cancel context.CancelFunc
	done   chan agentResult
}

type agentResult struct {
	stderr string
	err    error
}

// startAgentCLI runs tare agent with args and --listen on a free loopback address, and waits until its
// /healthz answers 200 (its first sample). The agent is stopped when the test ends, if stop was not called.
func startAgentCLI(t *testing.T, args ...string) *agentCLI {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a := &agentCLI{addr: freeAddr(t), client: &http.Client{Timeout: 5 * time.Second}, cancel: cancel, done: make(chan agentResult, 1)}
	go func() {
		_, stderr, err := run(ctx, append([]string{"agent", "--listen", a.addr}, args...)...)
		a.done <- agentResult{stderr, err}
	}()
	t.Cleanup(func() {
		cancel()
		a.client.CloseIdleConnections()
	})
	deadline := time.Now().Add(20 * time.Second)
	for code, _ := a.get("/healthz"); code != http.StatusOK; code, _ = a.get("/healthz") {
		select {
		case r := <-a.done:
			t.Fatalf("tare agent ended before serving: %v\n%s", r.err, r.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("tare agent was not healthy within 20s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return a
}

// get GETs path of the agent: its status and body, or 0 and the error.
func (a *agentCLI) get(path string) (int, string) {
	resp, err := a.client.Get("http://" + a.addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// stop cancels the agent's context (Ctrl-C) and returns how it ended.
func (a *agentCLI) stop(t *testing.T) agentResult {
	t.Helper()
	a.cancel()
	select {
	case r := <-a.done:
		return r
	case <-time.After(15 * time.Second):
		t.Fatal("tare agent did not stop within 15s of Ctrl-C")
		return agentResult{}
	}
}

// TestAgentBadInput: bad flags are usage errors (exit 2); an address in use is a plain error (exit 1) that
// names it.
func TestAgentBadInput(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--interval", "1ms"}, 2, "10ms floor"},
		{[]string{"--interval", "1s", "--window", "1s"}, 2, "at least two"},
		{[]string{"--top-processes", "-1"}, 2, "--top-processes"},
		{[]string{"--listen", busy.Addr().String()}, 1, "listening on " + busy.Addr().String()},
		{[]string{"--listen", freeAddr(t), "--proc-root", "/nonexistent-proc"}, 1, "/nonexistent-proc"},
		{[]string{"--auth", "tokens"}, 2, "--auth \"tokens\""},
		{[]string{"--listen", "0.0.0.0:0", "--auth", "none"}, 2, "reaches beyond this machine"},
		{[]string{"--listen", "[::]:0", "--auth", "none"}, 2, "reaches beyond this machine"},
		{[]string{"--listen", "nohostport"}, 2, "--listen"},
		{[]string{"--tls-cert-file", "x.crt"}, 2, "go with --auth kubernetes"},
	} {
		_, stderr, err := run(context.Background(), append([]string{"agent"}, tc.args...)...)
		code := 0
		if err != nil {
			code = 1
			var ec ExitCoder
			if errors.As(err, &ec) {
				code = ec.ExitCode()
			}
		}
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("tare agent %v: exit %d, stderr %q; want exit %d saying %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	// Beyond loopback, callers are checked with the API server: with no cluster to ask, it does not start.
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, stderr, err := run(context.Background(), "agent", "--listen", "0.0.0.0:0")
	if err == nil || !strings.Contains(stderr, "checks callers with the API server") || !strings.Contains(stderr, "listen on 127.0.0.1") {
		t.Errorf("tare agent --listen 0.0.0.0:0 without a cluster: %v, stderr %q: want refused, saying what to do", err, stderr)
	}
}

// TestAgentNodeName: --node wins over $NODE_NAME, which wins over the host name.
func TestAgentNodeName(t *testing.T) {
	t.Setenv("NODE_NAME", "env")
	if got := (&agentOptions{node: "flag"}).nodeName("/proc"); got != "flag" {
		t.Errorf("with --node: %q", got)
	}
	if got := (&agentOptions{}).nodeName("/proc"); got != "env" {
		t.Errorf("with $NODE_NAME: %q", got)
	}
	t.Setenv("NODE_NAME", "")
	if got := (&agentOptions{}).nodeName("/proc"); got == "" || got == "env" {
		t.Errorf("with neither: %q, want the host name", got)
	}
}

// freeAddr is a loopback address nothing listens on (it was free a moment ago).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}
