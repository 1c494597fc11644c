package machine

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// testdata/iptables-save.txt was captured on this machine with a lab running a Deployment behind a
// Service, plus a user chain (USER-CHAIN, jumped to from INPUT) that must survive.
func TestIptablesCleanup(t *testing.T) {
	save, err := os.ReadFile("testdata/iptables-save.txt")
	if err != nil {
		t.Fatal(err)
	}
	chains := chainsIn(string(save))
	if len(chains) < 10 || !slices.Contains(chains, "nat KUBE-SERVICES") || !slices.ContainsFunc(chains, func(c string) bool { return strings.HasPrefix(c, "nat CNI-") }) {
		t.Fatalf("fixture chains = %v, want kube-proxy's and the bridge plugin's", chains)
	}
	script := iptablesCleanup(string(save))
	for _, c := range chains {
		table, name, _ := strings.Cut(c, " ")
		block := tableBlock(script, table)
		if !strings.Contains(block, "-F "+name+"\n") || !strings.Contains(block, "-X "+name+"\n") {
			t.Errorf("chain %s of %s is not flushed and deleted:\n%s", name, table, block)
		}
	}
	for _, line := range strings.Split(string(save), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[0] == "-A" && !ruleChain(f[1]) && ruleChain(f[len(f)-1]) {
			if !strings.Contains(script, "-D "+strings.TrimPrefix(line, "-A ")+"\n") {
				t.Errorf("jump %q into a lab chain is not deleted", line)
			}
		}
	}
	if strings.Contains(script, "USER-CHAIN") {
		t.Errorf("the user's chain would be touched:\n%s", script)
	}
	// Deletions come before flushes, flushes before chain removals, per table.
	for _, table := range []string{"nat", "filter", "mangle"} {
		b := tableBlock(script, table)
		if d, f, x := strings.LastIndex(b, "-D "), strings.Index(b, "-F "), strings.Index(b, "-X "); (d >= 0 && f >= 0 && d > f) || (f >= 0 && x >= 0 && f > x) {
			t.Errorf("%s: wrong order:\n%s", table, b)
		}
	}
	if iptablesCleanup("*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j ACCEPT\nCOMMIT\n") != "" {
		t.Error("a table without lab chains should produce no script")
	}
}

func tableBlock(script, table string) string {
	i := strings.Index(script, "*"+table+"\n")
	if i < 0 {
		return ""
	}
	j := strings.Index(script[i:], "COMMIT\n")
	return script[i : i+j]
}
