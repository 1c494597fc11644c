package machine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// Kubelet, kube-proxy and the CNI bridge plugin add iptables rules while a lab with a node runs; a lab with
// several nodes adds one chain of its own on the machine, CNI-TARE-NODES (nodenet.go). The lab's down
// removes them (RemoveRuleChains), and its leftovers check lists any still present (RuleChains).

// ruleChain says whether an iptables chain is one the lab's components add: kubelet and kube-proxy
// (KUBE-…) and the CNI bridge plugin's masquerade chains (CNI-…).
func ruleChain(name string) bool {
	return strings.HasPrefix(name, "KUBE-") || strings.HasPrefix(name, "CNI-")
}

// iptablesCleanup turns iptables-save output into an iptables-restore --noflush script that deletes
// every rule jumping into a lab chain from another chain, then flushes and deletes the lab chains. It
// returns "" when there is nothing to remove.
func iptablesCleanup(save string) string {
	var out strings.Builder
	var table string
	var chains, deletes []string
	flush := func() {
		if table == "" || (len(chains) == 0 && len(deletes) == 0) {
			return
		}
		fmt.Fprintf(&out, "*%s\n", table)
		for _, d := range deletes {
			fmt.Fprintf(&out, "-D %s\n", d)
		}
		for _, c := range chains {
			fmt.Fprintf(&out, "-F %s\n", c)
		}
		for _, c := range chains {
			fmt.Fprintf(&out, "-X %s\n", c)
		}
		out.WriteString("COMMIT\n")
	}
	sc := bufio.NewScanner(strings.NewReader(save))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "*"):
			flush()
			table, chains, deletes = line[1:], nil, nil
		case strings.HasPrefix(line, ":"):
			if f := strings.Fields(line[1:]); len(f) > 0 && ruleChain(f[0]) {
				chains = append(chains, f[0])
			}
		case strings.HasPrefix(line, "-A "):
			f := strings.Fields(line)
			if len(f) < 2 || ruleChain(f[1]) {
				continue // rules inside lab chains go with the chain
			}
			if i := slices.Index(f, "-j"); i >= 0 && i+1 < len(f) && ruleChain(f[i+1]) {
				deletes = append(deletes, strings.TrimPrefix(line, "-A "))
			} else if i := slices.Index(f, "-g"); i >= 0 && i+1 < len(f) && ruleChain(f[i+1]) {
				deletes = append(deletes, strings.TrimPrefix(line, "-A "))
			}
		case line == "COMMIT":
			flush()
			table = ""
		}
	}
	return out.String()
}

// RemoveRuleChains deletes the lab's iptables and ip6tables rules and chains.
func RemoveRuleChains() error {
	var errs []error
	for _, family := range []string{"iptables", "ip6tables"} {
		save, err := exec.Command(family + "-save").Output()
		if err != nil {
			if _, lerr := exec.LookPath(family + "-save"); lerr != nil {
				continue
			}
			errs = append(errs, fmt.Errorf("%s-save: %w", family, err))
			continue
		}
		script := iptablesCleanup(string(save))
		if script == "" {
			continue
		}
		cmd := exec.Command(family+"-restore", "--noflush")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s-restore: %w: %s", family, err, bytes.TrimSpace(out)))
		}
	}
	return errors.Join(errs...)
}

// chainsIn lists the lab chains in iptables-save output as "table CHAIN".
func chainsIn(save string) []string {
	var out []string
	var table string
	for _, line := range strings.Split(save, "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
		case strings.HasPrefix(line, ":"):
			if f := strings.Fields(line[1:]); len(f) > 0 && ruleChain(f[0]) {
				out = append(out, table+" "+f[0])
			}
		}
	}
	return out
}

// RuleChains lists the lab chains present in iptables and ip6tables, as "iptables nat KUBE-SERVICES".
func RuleChains() []string {
	var out []string
	for _, family := range []string{"iptables", "ip6tables"} {
		save, err := exec.Command(family + "-save").Output()
		if err != nil {
			continue
		}
		for _, c := range chainsIn(string(save)) {
			out = append(out, family+" "+c)
		}
	}
	return out
}
