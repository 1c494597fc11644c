// Command tare measures what a Kubernetes node costs before any workload runs.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/tare-dev/tare/internal/cli"
)

func main() {
	// tare is an agent measuring the node it runs on: one processor is plenty, and with one the runtime
	// wakes no other thread for each short goroutine (node_exporter does the same). GOMAXPROCS overrides.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "tare: interrupted, finishing up (press Ctrl-C again to quit at once)")
		cancel()
		<-sigs
		os.Exit(130)
	}()
	// Run as kubectl-tare, tare is kubectl's plugin (kubectl tare ...).
	err := cli.ExecuteAs(ctx, os.Args[0], os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	cancel()
	if err != nil {
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			os.Exit(ec.ExitCode())
		}
		os.Exit(1)
	}
}
