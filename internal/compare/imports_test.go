package compare

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/tare-dev/tare/"

// forbidden says whether a package is one that tare diff and the HTML report must build without: the
// experiment runner, the lab and the Kubernetes client.
func forbidden(pkg string) bool {
	for _, p := range []string{module + "internal/experiment", module + "internal/lab", "k8s.io/client-go"} {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}
	return false
}

// pendingEdges are imports known to bring a forbidden package into the HTML report until another part of
// issue 19 removes them ("plain data types live with their consumer"), each with why. The test does not
// follow them, and fails once one is gone so that this list cannot go stale.
var pendingEdges = map[[2]string]string{}

// TestImportsNoRunner: the comparison and the HTML report do not depend on the experiment runner, the lab
// or client-go (go list -deps, the standard library left out). A failure names the chain of imports that
// brings one in.
func TestImportsNoRunner(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the imports: %v", err)
	}
	roots := []string{module + "internal/compare", module + "internal/htmlreport"}
	args := append([]string{"list", "-deps", "-f", `{{if not .Standard}}{{.ImportPath}} {{join .Imports " "}}{{end}}`}, roots...)
	out, err := exec.Command(goTool, args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			imports[f[0]] = f[1:]
		}
	}
	for edge, why := range pendingEdges {
		if !slices.Contains(imports[edge[0]], edge[1]) {
			t.Errorf("%s no longer imports %s (%s): remove the edge from pendingEdges", edge[0], edge[1], why)
		} else {
			t.Logf("not followed yet: %s → %s (%s)", edge[0], edge[1], why)
		}
	}
	for _, root := range roots {
		if chain := pathTo(imports, root, forbidden); chain != nil {
			t.Errorf("%s depends on %s through %s: move what it needs into a package without the runner", root, chain[len(chain)-1], strings.Join(chain, " → "))
		}
	}
}

// pathTo is the first chain of imports from root to a package that bad accepts (breadth first, skipping
// the pending edges), or nil.
func pathTo(imports map[string][]string, root string, bad func(string) bool) []string {
	from := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if bad(p) {
			var chain []string
			for q := p; q != ""; q = from[q] {
				chain = append([]string{q}, chain...)
			}
			return chain
		}
		for _, next := range imports[p] {
			if _, seen := from[next]; seen {
				continue
			}
			if _, pending := pendingEdges[[2]string{p, next}]; pending {
				continue
			}
			from[next] = p
			queue = append(queue, next)
		}
	}
	return nil
}
