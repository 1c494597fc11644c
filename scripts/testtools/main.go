// Command testtools builds, before the tests run, every program the tests build on first use into tare's
// cache (~/.cache/tare): the lab's Kubernetes components and kwok, upstream Prometheus, helm, the Prometheus
// Operator and, as root, the datapath tools image. On a fresh machine that is most of ten minutes of
// compiling; done here, it is out of the tests' per-package timeouts and its time is printed apart. A
// program already cached costs nothing. make test runs it first.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"text/tabwriter"
	"time"

	"github.com/tare-dev/tare/internal/lab"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	log := func(name string) {
		fmt.Fprintf(os.Stderr, "testtools: %s (%s elapsed)\n", name, time.Since(start).Round(time.Second))
	}
	comps, err := lab.Install(ctx, lab.InstallOptions{Progress: func(st lab.InstallStep) {
		if !st.Done {
			log(st.Name)
		}
	}})
	for _, step := range []struct {
		name    string
		install func(context.Context) (lab.Component, error)
	}{{"prometheus", lab.InstallPrometheus}, {"helm", lab.InstallHelm}, {"prometheus-operator", lab.InstallPrometheusOperator}} {
		if err != nil {
			break
		}
		log(step.name)
		var c lab.Component
		c, err = step.install(ctx)
		comps = append(comps, c)
	}
	if err == nil && os.Geteuid() == 0 {
		log("datapath tools")
		var cs []lab.Component
		cs, err = lab.InstallDatapathTools(ctx)
		comps = append(comps, cs...)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tVERSION\tSOURCE\tTOOK")
	for _, c := range comps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.Version, c.Source, c.Took.Round(time.Millisecond))
	}
	_ = tw.Flush()
	fmt.Printf("testtools: %s in all\n", time.Since(start).Round(time.Second))
	if err != nil {
		// Not fatal: each test that needs what is missing says so (and fails under TARE_REQUIRE_ROOT).
		fmt.Fprintf(os.Stderr, "testtools: %v: the tests that need it will say so\n", err)
	}
}
