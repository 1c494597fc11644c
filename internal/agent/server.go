package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tare-dev/tare/internal/blockio"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/session"
)

// shutdownGrace is how long requests in flight may finish once the agent is told to stop.
const shutdownGrace = 5 * time.Second

// Run samples the node and serves /metrics, /summary and /healthz until ctx is cancelled (Ctrl-C,
// SIGTERM), then shuts the server down gracefully and returns nil. It fails before sampling when the
// address cannot be bound or the proc root cannot be read; a source the sampler cannot open is a
// limitation in /summary's meta and a tare_warnings_total{kind="limitation"} increment, not an error.
func Run(ctx context.Context, o Options) error {
	err := o.validate()
	if err == nil {
		err = checkProcRoot(o.Sampler.ProcRoot)
	}
	if err != nil {
		if o.Listener != nil {
			_ = o.Listener.Close()
		}
		return err
	}
	ln := o.Listener
	if ln == nil {
		var lc net.ListenConfig
		l, err := lc.Listen(ctx, "tcp", o.Listen)
		if err != nil {
			return fmt.Errorf("listening on %s: %w: pass a free host:port with --listen", o.Listen, err)
		}
		ln = l
	}
	ln = limitConns(ln, maxConns, o.Log) // under the TLS listener: net/http must see the *tls.Conn
	st := newState(o.ringLen(), o.Window)
	so := o.Sampler
	so.Interval, so.Detail = o.Interval, o.Detail
	so.LongRunning = true // the iterator at once, young processes' memory from statm (sample.Options)
	ses, err := session.Open(ctx, session.Options{Sampler: so, Duration: o.Window, Version: o.Version, Limitations: o.Limitations, BlockIO: o.BlockIO,
		OnWarning: func(w session.Warning) {
			st.warn(string(w.Kind))
			if o.Log != nil {
				fmt.Fprintf(o.Log, "warning: %s\n", w.Message)
			}
		}})
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("opening the sampler: %w", err)
	}
	defer ses.Close()
	handler, health, err := newHandler(st, o)
	if err == nil && o.Access != nil {
		var cfg *tls.Config
		if cfg, err = tlsConfig(o.Access, o.Node); err == nil {
			ln = tls.NewListener(ln, cfg)
		}
	}
	var healthLn net.Listener
	if err == nil {
		healthLn, err = o.healthListener(ctx)
	}
	if err != nil {
		_ = ln.Close()
		return err
	}
	if healthLn != nil {
		healthLn = limitConns(healthLn, healthConns, o.Log)
		hs := &http.Server{Handler: health, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second,
			WriteTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second, MaxHeaderBytes: 4 << 10}
		go func() { _ = hs.Serve(healthLn) }()
		defer func() { _ = hs.Close() }()
	}
	srv := newServer(handler, o.Log)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	limitations := 0
	tracer := ses.BlockIO()
	streamErr := ses.Stream(ctx, func(x sample.Sample, meta sample.Meta) {
		st.add(x, meta)
		// Block I/O is read on detail samples: its counters are cumulative, and the processes that did it
		// and ended since are still known then (the ring holds them), so nothing is lost by waiting; on a
		// node whose disk never rests (etcd), reading the kernel's table each second cost the agent a tenth.
		if tracer != nil && meta.DetailSample(x.Seq) {
			readBlockIO(st, tracer, o.Log)
		}
		if n := len(meta.Limitations); n > limitations {
			st.mu.Lock()
			st.warnings["limitation"] += uint64(n - limitations)
			st.mu.Unlock()
			limitations = n
		}
		if o.OnSample != nil {
			o.OnSample(x)
		}
	})
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	shutErr := srv.Shutdown(shut)
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		shutErr = errors.Join(shutErr, fmt.Errorf("serving: %w", err))
	}
	return errors.Join(streamErr, shutErr)
}

// readBlockIO credits the block I/O since the previous read and forgets the records of processes that
// ended; it does not read the kernel's table while nothing completed since. A failed read is counted as a
// source warning and retried at the next sample.
func readBlockIO(st *state, t *blockio.Tracer, log io.Writer) {
	settled, err := t.Settled()
	if err == nil && !st.blockIOMoved(settled) {
		return
	}
	var snap blockio.Snapshot
	if err == nil {
		snap, err = t.Read()
	}
	if err == nil {
		forget := st.addBlockIO(snap, settled)
		if err = t.Forget(forget); err == nil {
			st.forgotten(forget)
		} else {
			st.retryBlockIO()
		}
	}
	if err != nil {
		st.warn("source")
		if log != nil {
			fmt.Fprintf(log, "warning: %v\n", err)
		}
	}
}

// checkProcRoot fails early, naming the path, when the proc root holds no readable procfs.
func checkProcRoot(root string) error {
	if root == "" {
		root = "/proc"
	}
	f, err := os.Open(filepath.Join(root, "stat"))
	if err != nil {
		return fmt.Errorf("reading the proc root %s: %w: pass --proc-root where the host's procfs is mounted", root, err)
	}
	return f.Close()
}

// healthListener binds HealthListen, or returns HealthListener, or nil when neither is set.
func (o Options) healthListener(ctx context.Context) (net.Listener, error) {
	if o.HealthListener != nil || o.HealthListen == "" {
		return o.HealthListener, nil
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", o.HealthListen)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w: pass a free host:port with --health-listen", o.HealthListen, err)
	}
	return l, nil
}

// newHandler serves the three endpoints, /metrics and /summary through the access gate when o.Access is
// set, and returns beside it the handler of /healthz alone.
func newHandler(st *state, o Options) (http.Handler, http.Handler, error) {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(),
		collector{s: st, node: o.Node, version: o.Version, top: o.TopProcesses},
	} {
		if err := reg.Register(c); err != nil {
			return nil, nil, fmt.Errorf("registering the metrics: %w", err)
		}
	}
	guard := func(h http.Handler) http.Handler { return h }
	if o.Access != nil {
		guard = newGate(o.Access, o.Log).wrap
	}
	healthz := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		st.mu.RLock()
		n := st.samples
		st.mu.RUnlock()
		if n == 0 {
			http.Error(w, errNoSample.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	health := http.NewServeMux()
	health.Handle("GET /healthz", healthz)
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", healthz)
	mux.Handle("GET /metrics", guard(slots(metricsSlots, promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))))
	mux.Handle("GET /summary", guard(slots(summarySlots, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := st.parseWindow(r.URL.Query().Get("window"), o.Interval)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sum, err := st.summarize(d, o.TopProcesses)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if !o.ServeCmdlines {
			withoutCmdlines(&sum)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = sum.JSON(w)
	}))))
	return mux, health, nil
}
