package density

import (
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/tare-dev/tare/internal/userfile"
)

// maxStored bounds what ReadOverhead reads: a density result is tens of kilobytes.
const maxStored = 64 << 20

// ReadOverhead reads what `tare density -o json` wrote to path and returns its per-pod overhead as the
// RuntimeClass it printed charges it (overhead.podFixed), and the node it was measured on.
func ReadOverhead(path string) (corev1.ResourceList, string, error) {
	b, err := userfile.ReadAll(path, "density result", maxStored)
	if err != nil {
		return nil, "", err
	}
	over, node, err := parseOverhead(b)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return over, node, nil
}

// errNoOverhead says a density result holds no per-pod overhead.
var errNoOverhead = errors.New("holds no per-pod overhead (its run measured fewer than two pod counts): run tare density with two or more --pods counts and -o json")

func parseOverhead(b []byte) (corev1.ResourceList, string, error) {
	var o Output
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, "", fmt.Errorf("not the output of tare density -o json: %w", err)
	}
	if o.Node == "" || o.Model.Busy.N == 0 {
		return nil, "", errors.New("not the output of tare density -o json: it names no node and no measured windows")
	}
	rc := o.RuntimeClass
	if rc == nil || rc.Overhead == nil || len(rc.Overhead.PodFixed) == 0 {
		return nil, "", errNoOverhead
	}
	for name, q := range rc.Overhead.PodFixed {
		if q.Sign() < 0 {
			return nil, "", fmt.Errorf("its overhead %s is negative (%s)", name, q.String())
		}
	}
	return rc.Overhead.PodFixed.DeepCopy(), o.Node, nil
}
