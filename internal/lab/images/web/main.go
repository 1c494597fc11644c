// Command web is the lab's small HTTP app: it answers every request with the pod's host name, and
// /healthz with ok. It listens on $PORT (default 8080) and exits on SIGTERM. With $BURN_MILLICORES set it
// also uses that much CPU, regulated against its own CPU clock: the calibrated load of tests.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	if mc := os.Getenv("BURN_MILLICORES"); mc != "" {
		n, err := strconv.Atoi(mc)
		if err != nil || n <= 0 || n > 64000 {
			return fmt.Errorf("BURN_MILLICORES=%q: want a whole number of millicores", mc)
		}
		for range n/700 + 1 {
			go burn(n)
		}
	}
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "%s %s\n", host, r.URL.Path) })
	srv := &http.Server{Addr: ":" + port, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// processCPU is the process's CPU time so far (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// burn keeps the process's CPU at mc millicores since it started: it spins while the process is behind
// and sleeps 5 ms when it is not, so preemption is caught up by the process's several burners.
func burn(mc int) {
	runtime.LockOSThread()
	start, cpu0 := time.Now(), processCPU()
	x := 1.0
	for {
		target := time.Duration(float64(time.Since(start)) * float64(mc) / 1000)
		if processCPU()-cpu0 >= target {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		for range 20000 {
			x = x*1.0000001 + 1e-9
		}
		if x < 0 {
			fmt.Println(x)
		}
	}
}
