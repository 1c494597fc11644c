package explain

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tare-dev/tare/internal/audit"
	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/summary"
)

// Finding is one cause of overhead: how much it costs, the evidence, the change that would cut it, how
// sure tare is, and how to prove the change works.
type Finding struct {
	ID         string   `json:"id"`
	Title      string   `json:"title"`
	Mc         float64  `json:"estimated_millicores"`
	SharePct   float64  `json:"share_of_busy_percent"`
	Evidence   []string `json:"evidence"`
	Change     string   `json:"change"`
	Confidence string   `json:"confidence"` // high, medium, low
	Verify     string   `json:"verify"`
}

// Inputs are everything the rules read. Any part may be missing; a rule that needs it is skipped.
type Inputs struct {
	Summary  summary.Summary
	Activity Activity
	Audit    *audit.Report
	Metrics  *audit.MetricsReport
	Facts    *ClusterFacts
}

// minFindingMc: a poller below this is listed with the pollers but not made a finding (bash's `sleep 5`
// between runs of the real work is one).
const minFindingMc = 1.0

// chattyPerMinute: a client above one request a second (and 20% of all requests) is called chatty.
const chattyPerMinute = 60.0

// Findings applies every rule and ranks the findings by estimated CPU.
func Findings(in Inputs) []Finding {
	var fs []Finding
	for _, c := range component.All() {
		if c.Lease == "" {
			continue
		}
		if f, ok := leaderElection(in, c.Name, c.Lease); ok {
			fs = append(fs, f)
		}
	}
	if f, ok := corednsReplicas(in); ok {
		fs = append(fs, f)
	}
	for _, p := range in.Activity.Pollers {
		if p.CPUMc >= minFindingMc {
			fs = append(fs, pollerFinding(p))
		}
	}
	fs = append(fs, chattyClients(in)...)
	if f, ok := kubeletHousekeeping(in); ok {
		fs = append(fs, f)
	}
	if st := in.Activity.Sawtooth; st != nil {
		fs = append(fs, Finding{ID: "sawtooth", Title: fmt.Sprintf("CPUs idle %.0f%% of the time between bursts of work every %.1f s", st.IdlePct, st.PeriodSeconds),
			Mc: 0, Evidence: []string{fmt.Sprintf("node busy swings between %.0fm and %.0fm (autocorrelation %.2f at %.1f s); mean %.0fm", st.LowMc, st.HighMc, st.Autocorr, st.PeriodSeconds, st.MeanMc),
				fmt.Sprintf("keeping CPUs as busy as in the bursts would do %.0f%% more work in the same time", 100*st.LostPct/(100-st.LostPct))},
			Change:     "find the loop that hands out work on a timer (a parent polling its workers' status) and shorten its interval or make it event-driven; seed 004 halved the idle gap by halving the status-check interval",
			Confidence: "medium", Verify: "tare experiment with the poll interval as a sweep, measuring throughput as the guard"})
	}
	busy := in.Summary.Reconcile.NodeBusy
	for i := range fs {
		fs[i].Mc = output.Round(fs[i].Mc, 1)
		fs[i].SharePct = output.Round(output.Percent(fs[i].Mc, busy), 1)
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Mc > fs[j].Mc })
	return fs
}

func groupMc(s summary.Summary, name string) float64 {
	for _, g := range s.Groups {
		if g.Name == name {
			return g.CPU.Mean
		}
	}
	return 0
}

func processCount(s summary.Summary, group string) int {
	n := 0
	for _, p := range s.Processes {
		if p.Group == group && !p.Exited {
			n++
		}
	}
	return n
}

// apiCostPerRequest estimates the node CPU one API request costs: kube-apiserver's and etcd's CPU over
// the window divided by the requests served. An estimate, and said to be one.
func apiCostPerRequest(in Inputs) (mcPerReqPerMin float64, ok bool) {
	var perMin float64
	switch {
	case in.Audit != nil && in.Audit.PerMinute > 0:
		perMin = in.Audit.PerMinute
	case in.Metrics != nil && in.Metrics.PerMinute > 0:
		perMin = in.Metrics.PerMinute
	default:
		return 0, false
	}
	server := groupMc(in.Summary, component.APIServer) + groupMc(in.Summary, component.Etcd)
	if server <= 0 {
		return 0, false
	}
	return server / perMin, true
}

// leaderElection finds comp renewing its lease (named lease in kube-system) with no other replica to hand
// over to: in the audit log, as a client whose name starts with comp, or in the lease's renew time.
func leaderElection(in Inputs, comp, lease string) (Finding, bool) {
	f := Finding{ID: "leader-election-" + comp, Title: comp + " renews a leader-election lease with nothing to elect",
		Change: fmt.Sprintf("start %s with --leader-elect=false: with one replica there is no one to hand over to (the lab's tuned profile does this)", comp),
		Verify: fmt.Sprintf("tare experiment examples/experiments/leader-election.yaml (on vs off, interleaved trials; or `tare lab up --set %s.leader-elect=false` and explain again)", comp)}
	var renewPerMin float64
	evidenced := false
	if in.Audit != nil {
		for _, l := range in.Audit.LeaderElection {
			if strings.HasPrefix(l.Client, comp) && l.Renewals > 0 {
				renewPerMin += l.PerMinute
				evidenced = true
				reads := ""
				if l.Reads > 0 {
					reads = fmt.Sprintf(" and read it %d times", l.Reads)
				}
				f.Evidence = append(f.Evidence, fmt.Sprintf("audit: %s renewed lease %s/%s %d times (%.1f/min)%s",
					l.Client, l.Namespace, l.Name, l.Renewals, l.PerMinute, reads))
			}
		}
	}
	if in.Facts != nil {
		for _, l := range in.Facts.Leases {
			if l.Name == lease && l.RenewedAgo >= 0 && l.RenewedAgo <= float64(max(l.DurationSeconds, 15)) {
				evidenced = true
				f.Evidence = append(f.Evidence, fmt.Sprintf("lease kube-system/%s held by %s, renewed %.1f s ago (lease %d s, %d transitions)",
					l.Name, l.Holder, l.RenewedAgo, l.DurationSeconds, l.Transitions))
			}
		}
	}
	if !evidenced {
		return f, false
	}
	replicas, how := in.replicas(comp)
	if replicas > 1 {
		return f, false // several replicas need an elected leader
	}
	f.Evidence = append(f.Evidence, how)
	f.Confidence = "medium"
	if in.Audit != nil && replicas == 1 {
		f.Confidence = "high"
	}
	// Cost: the renewals' (and reads') share of the API server's and etcd's CPU. The component's own
	// renewal loop is small and not counted.
	if per, ok := apiCostPerRequest(in); ok && renewPerMin > 0 {
		f.Mc = per * renewPerMin * 2 // each renewal is a get and an update
		f.Evidence = append(f.Evidence, fmt.Sprintf("≈%.1fm of kube-apiserver + etcd: %.1f lease requests/min at %.2fm per request/min", f.Mc, renewPerMin*2, per))
	}
	return f, true
}

// replicas counts a component's replicas: kube-system pods labelled with it, else its processes here.
func (in Inputs) replicas(comp string) (int, string) {
	if in.Facts != nil && in.Facts.ControlPlanePods[comp] > 0 {
		n := in.Facts.ControlPlanePods[comp]
		return n, fmt.Sprintf("%d %s pod(s) in kube-system", n, comp)
	}
	if n := processCount(in.Summary, comp); n > 0 {
		return n, fmt.Sprintf("%d %s process(es) on this node and no %s pods in kube-system (replicas elsewhere would not be seen)", n, comp, comp)
	}
	return 0, "replicas unknown: no " + comp + " pod or process seen"
}

func corednsReplicas(in Inputs) (Finding, bool) {
	if in.Facts == nil || in.Facts.CoreDNS == nil || in.Facts.Nodes != 1 || in.Facts.CoreDNS.Replicas <= 1 {
		return Finding{}, false
	}
	d := in.Facts.CoreDNS
	var mc float64
	for _, g := range in.Summary.Groups {
		if strings.HasPrefix(g.Name, d.Namespace+"/"+d.Name+"-") {
			mc += g.CPU.Mean
		}
	}
	extra := mc * float64(d.Replicas-1) / float64(d.Replicas)
	return Finding{ID: "coredns-replicas", Title: fmt.Sprintf("%d %s replicas on a one-node cluster", d.Replicas, d.Name),
		Mc: extra, Confidence: "high",
		Evidence: []string{fmt.Sprintf("deployment %s/%s wants %d replicas; the cluster has 1 node, so they cannot spread for availability", d.Namespace, d.Name, d.Replicas),
			fmt.Sprintf("its pods use %.1fm here; all but one replica: ≈%.1fm", mc, extra)},
		Change: fmt.Sprintf("kubectl -n %s scale deployment %s --replicas=1 (minikube does this)", d.Namespace, d.Name),
		Verify: fmt.Sprintf("tare experiment with a variant that scales %s to 1, DNS lookup latency as the guard", d.Name)}, true
}

func pollerFinding(p Poller) Finding {
	conf := "medium"
	if p.Runs >= 5 && p.Irregularity <= 0.1 {
		conf = "high"
	}
	change := fmt.Sprintf("run it less often or only on change: every %.0f s instead of every %.1f s cuts it %.0f×", p.PeriodSeconds*12, p.PeriodSeconds, 12.0)
	if strings.Contains(p.Cmdline, "kubectl") && strings.Contains(p.Cmdline, "apply") {
		change = "apply on change (a controller with a watch, or kubectl apply from CI) instead of on a timer; minikube's addon manager spawned `kubectl apply` every 5 s until its interval was raised"
	}
	return Finding{ID: "poller", Title: "poller: " + describePoller(p), Mc: p.CPUMc, Confidence: conf,
		Evidence: []string{fmt.Sprintf("%d runs of `%s` started by pid %d (%s), median gap %.2f s (irregularity %.1f%%), %.1f ms CPU each",
			p.Runs, p.Cmdline, p.ParentPID, summary.Clip(p.ParentCmdline, 80), p.PeriodSeconds, 100*p.Irregularity, p.CPUPerRunMs)},
		Change: change,
		Verify: "tare experiment with the poll interval as a variant (or a sweep), node busy as the metric"}
}

func chattyClients(in Inputs) []Finding {
	if in.Audit == nil {
		return nil
	}
	per, costed := apiCostPerRequest(in)
	var out []Finding
	for _, c := range in.Audit.Clients {
		if c.PerMinute < chattyPerMinute || c.SharePct < 20 || strings.HasSuffix(c.Name, "/leader-election") {
			continue
		}
		f := Finding{ID: "chatty-client", Title: fmt.Sprintf("chatty API client %s: %.0f requests/min, %.0f%% of all", c.Name, c.PerMinute, c.SharePct),
			Confidence: "medium", Evidence: []string{fmt.Sprintf("audit: %d requests by %s (users %s)", c.Requests, c.Name, strings.Join(c.Users, ", "))},
			Change: "find what it repeats (rows below) and replace polling with a watch or a longer interval",
			Verify: "tare experiment with the client's interval as a variant; API requests per minute and node busy as metrics"}
		for _, r := range in.Audit.Rows {
			if r.Client == c.Name && len(f.Evidence) < 4 {
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s %s %s: %.1f/min", r.Verb, r.Resource, r.Namespace, r.PerMinute))
			}
		}
		if costed {
			f.Mc = per * c.PerMinute
		}
		out = append(out, f)
	}
	for _, r := range in.Audit.Hot {
		f := Finding{ID: "list-watch-storm", Title: fmt.Sprintf("%s %ss %s %.0f times a minute", r.Client, r.Verb, r.Resource, r.PerMinute),
			Confidence: "medium", Evidence: []string{fmt.Sprintf("audit: %d %s requests on %s in %q by %s; an informer lists once and then watches", r.Requests, r.Verb, r.Resource, r.Namespace, r.Client)},
			Change: "use a shared informer (list once, then watch) or a longer resync; if it is a watch being re-opened, find why it ends (timeouts, errors)",
			Verify: "tare explain again after the change: the row should be gone"}
		if costed {
			f.Mc = per * r.PerMinute
		}
		out = append(out, f)
	}
	return out
}

// kubeletHousekeeping: kubelet is a steady, periodic cost. Its housekeeping (cAdvisor stats of every
// container every 10 s) and status loops are the usual part.
func kubeletHousekeeping(in Inputs) (Finding, bool) {
	mc := groupMc(in.Summary, component.Kubelet)
	if mc < 5 {
		return Finding{}, false
	}
	f := Finding{ID: "kubelet-housekeeping", Title: fmt.Sprintf("kubelet uses %.1fm at idle", mc), Mc: mc, Confidence: "low",
		Evidence: []string{fmt.Sprintf("kubelet group: mean %.1fm, p95 %.1fm over the window", mc, p95(in.Summary, component.Kubelet))},
		Change:   "raise the kubelet's --housekeeping-interval (default 10s) and --node-status-update-frequency if stats may be staler; the gain scales with the number of containers",
		Verify:   "tare experiment with --set kubelet.housekeeping-interval=30s against the default, kubelet CPU as the metric"}
	for _, p := range in.Activity.Periodic {
		if p.Group == component.Kubelet {
			f.Evidence = append(f.Evidence, fmt.Sprintf("its CPU repeats every %.1f s (autocorrelation %.2f)", p.PeriodSeconds, p.Autocorr))
			f.Confidence = "medium"
		}
	}
	return f, true
}

func p95(s summary.Summary, name string) float64 {
	for _, g := range s.Groups {
		if g.Name == name {
			return g.CPU.P95
		}
	}
	return 0
}
