package lab

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tare-dev/tare/internal/component"
)

// Tuning is one flag a profile or --set changes, with the reason.
type Tuning struct {
	Component string `json:"component"`
	Flag      string `json:"flag"`
	Value     string `json:"value"`
	Reason    string `json:"reason"`
}

func (t Tuning) String() string { return t.Component + " --" + t.Flag + "=" + t.Value }

// Profiles: upstream keeps every upstream default; tuned applies the single-node reductions below.
const (
	ProfileUpstream = "upstream"
	ProfileTuned    = "tuned"
)

// tuned lists the single-node reductions the seeds measured, each with its reason.
var tuned = []Tuning{
	{component.ControllerManager, "leader-elect", "false",
		"one node has no standby to fail over to, and the lease is renewed every 2 s (30 writes a minute through the API server to etcd); minikube measured 18% less overhead with leader election off"},
	{component.Scheduler, "leader-elect", "false",
		"as for the controller manager: a single scheduler needs no lease, and renewing it costs 30 writes a minute"},
}

// etcd's --proxy-refresh-interval, which minikube's seed raised to 70 s, is not a tuning: it sets how often
// an etcd v2 proxy (--proxy on) re-reads the members' client URLs, and a member never reads it.

// labComponents are the components whose flags --set may change, in the registry's order.
var labComponents = component.Names(func(e component.Entry) bool { return e.Lab.Tunable })

// ProfileTunings returns the tunings of a profile.
func ProfileTunings(profile string) ([]Tuning, error) {
	switch profile {
	case ProfileUpstream, "":
		return nil, nil
	case ProfileTuned:
		return slices.Clone(tuned), nil
	}
	return nil, fmt.Errorf("unknown profile %q: want %s or %s", profile, ProfileUpstream, ProfileTuned)
}

// CheckComponent says whether name is a lab component whose flags --set may change.
func CheckComponent(name string) error {
	if !slices.Contains(labComponents, name) {
		return fmt.Errorf("unknown component %s (components: %s)", name, strings.Join(labComponents, ", "))
	}
	return nil
}

// ParseSet parses --set COMPONENT.FLAG=VALUE.
func ParseSet(s string) (Tuning, error) {
	bad := func(why string) (Tuning, error) {
		return Tuning{}, fmt.Errorf("--set %q: %s (want COMPONENT.FLAG=VALUE, e.g. kube-apiserver.max-requests-inflight=100; components: %s)",
			s, why, strings.Join(labComponents, ", "))
	}
	key, value, ok := strings.Cut(s, "=")
	if !ok {
		return bad("no =VALUE")
	}
	comp, flag, ok := strings.Cut(key, ".")
	if !ok || flag == "" {
		return bad("no .FLAG after the component")
	}
	if !slices.Contains(labComponents, comp) {
		return bad("unknown component " + comp)
	}
	flag = strings.TrimLeft(flag, "-")
	if flag == "" || strings.ContainsAny(flag, " \t") {
		return bad("bad flag name")
	}
	return Tuning{Component: comp, Flag: flag, Value: value, Reason: "--set"}, nil
}

// MergeSets is base with over applied: over's tunings replace base's of the same component and flag, and
// come last.
func MergeSets(base, over []Tuning) []Tuning {
	out := slices.DeleteFunc(slices.Clone(base), func(b Tuning) bool {
		return slices.ContainsFunc(over, func(o Tuning) bool { return o.Component == b.Component && o.Flag == b.Flag })
	})
	return append(out, over...)
}

// applyTunings returns args with every tuning of component applied: a flag already present (as --f=v or
// --f v) is replaced, otherwise it is appended. Later tunings win.
func applyTunings(component string, args []string, ts []Tuning) []string {
	out := slices.Clone(args)
	for _, t := range ts {
		if t.Component != component {
			continue
		}
		out = removeFlag(out, t.Flag)
		out = append(out, "--"+t.Flag+"="+t.Value)
	}
	return out
}

func removeFlag(args []string, flag string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--"+flag:
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++ // --flag value
			}
			continue
		case strings.HasPrefix(a, "--"+flag+"="):
			continue
		}
		out = append(out, a)
	}
	return out
}
