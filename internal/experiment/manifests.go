package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/tare-dev/tare/internal/userfile"
)

// maxManifest bounds one manifest file: a DaemonSet with its RBAC is a few kilobytes.
const maxManifest = 4 << 20

// checkManifests checks the shape of a variant's manifests and Helm release (what Parse can see without
// the files): paths given once each, names Kubernetes allows, and a target they can run on. Load reads the
// files (resolveManifests).
func (s *Spec) checkManifests(v Variant) error {
	if !v.installs() {
		return nil
	}
	lt := s.Target.Lab
	switch {
	case lt == nil:
		return fmt.Errorf("manifests and helm are installed on tare's lab, whose node tare measures; they need the lab target")
	case lt.ControlPlaneOnly:
		return fmt.Errorf("manifests and helm: a DaemonSet's pods need a node; drop control_plane_only from target.lab")
	case v.Pause:
		return fmt.Errorf("manifests or helm, and pause: a paused lab runs no pods; give one or the other")
	}
	seen := map[string]bool{}
	for _, m := range v.Manifests {
		if strings.TrimSpace(m) == "" {
			return fmt.Errorf("manifests: an empty path")
		}
		if seen[m] {
			return fmt.Errorf("manifests: %s is listed twice", m)
		}
		seen[m] = true
	}
	if h := v.Helm; h != nil {
		if strings.TrimSpace(h.Chart) == "" {
			return fmt.Errorf("helm: no chart (a chart directory or archive, relative to the spec)")
		}
		for what, name := range map[string]string{"release": h.Release, "namespace": h.Namespace} {
			if name != "" && len(validation.IsDNS1123Label(name)) > 0 {
				return fmt.Errorf("helm.%s %q: want a DNS-1123 label (lower case letters, digits and '-', at most 63)", what, name)
			}
		}
		if h.Release == "" && len(validation.IsDNS1123Label(v.Name)) > 0 {
			return fmt.Errorf("helm: the release is named for the variant by default, and %q is no DNS-1123 label: give helm.release", v.Name)
		}
	}
	return nil
}

// installs says whether the variant installs anything: manifests or a Helm release.
func (v Variant) installs() bool { return len(v.Manifests) > 0 || v.Helm != nil }

// hasManifests says whether any variant installs manifests or a release: then every trial reports the
// daemonset metrics (zero for the variants without any), and removes what a killed tare may have left
// installed.
func (s *Spec) hasManifests() bool { return slices.ContainsFunc(s.Variants, Variant.installs) }

// resolveManifests makes every variant's manifest and chart paths absolute, relative to dir (the spec's
// directory), and reads the manifests, so that a missing file or an object tare cannot install is an error
// before any trial. A chart is rendered only when a trial runs (it needs helm).
func (s *Spec) resolveManifests(dir string) error {
	abs := func(p string) (string, error) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return filepath.Abs(p)
	}
	for i := range s.Variants {
		v := &s.Variants[i]
		for k, m := range v.Manifests {
			a, err := abs(m)
			if err != nil {
				return fmt.Errorf("variant %s: manifest %s: %w", v.Name, m, err)
			}
			v.Manifests[k] = a
		}
		if h := v.Helm; h != nil {
			a, err := abs(h.Chart)
			if err == nil {
				_, err = os.Stat(a)
			}
			if err != nil {
				return fmt.Errorf("variant %s: helm.chart: %w", v.Name, err)
			}
			h.Chart = a
		}
		if len(v.Manifests) > 0 {
			objs, err := readObjects(v.Manifests)
			if err == nil && v.Helm == nil {
				err = checkObjects(objs)
			}
			if err != nil {
				return fmt.Errorf("variant %s: %w", v.Name, err)
			}
		}
	}
	return nil
}

// readManifests reads the objects of the manifest files, in order, and checks them (checkObjects).
func readManifests(paths []string) ([]*unstructured.Unstructured, error) {
	objs, err := readObjects(paths)
	if err != nil {
		return nil, err
	}
	return objs, checkObjects(objs)
}

// readObjects reads the objects of the manifest files, in order.
func readObjects(paths []string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, p := range paths {
		b, err := userfile.ReadAll(p, "manifest", maxManifest)
		if err != nil {
			return nil, err
		}
		got, err := parseManifest(b)
		if err != nil {
			return nil, fmt.Errorf("manifest %s: %w", p, err)
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// checkObjects checks that a variant's objects hold at least one DaemonSet and no object twice.
func checkObjects(objs []*unstructured.Unstructured) error {
	seen := map[objectKey]bool{}
	ds := 0
	for _, o := range objs {
		k := keyOf(o)
		if seen[k] {
			return fmt.Errorf("manifests: %s is given twice", k)
		}
		seen[k] = true
		if isDaemonSet(o) {
			ds++
		}
	}
	if ds == 0 {
		return fmt.Errorf("manifests: no DaemonSet (apps/v1) among their %d objects; the variant measures what a DaemonSet costs", len(objs))
	}
	return nil
}

// parseManifest reads the objects of one YAML (or JSON) stream: documents separated by ---, each an
// object or a v1 List of objects (kubectl's -o json). Empty documents are skipped.
func parseManifest(b []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.IsList() {
			l, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("document %d: %w", doc, err)
			}
			for i := range l.Items {
				o := &l.Items[i]
				if err := checkObject(o); err != nil {
					return nil, fmt.Errorf("document %d, item %d: %w", doc, i+1, err)
				}
				out = append(out, o)
			}
			continue
		}
		if err := checkObject(u); err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		out = append(out, u)
	}
}

// checkObject refuses an object the API server could not take: no apiVersion, kind or name, or one a
// server-side apply cannot address (generateName).
func checkObject(o *unstructured.Unstructured) error {
	gv, err := schema.ParseGroupVersion(o.GetAPIVersion())
	switch {
	case o.GetAPIVersion() == "" || err != nil:
		return fmt.Errorf("no valid apiVersion (got %q)", o.GetAPIVersion())
	case o.GetKind() == "":
		return fmt.Errorf("no kind")
	case o.GetName() == "":
		return fmt.Errorf("%s has no metadata.name (generateName cannot be applied, nor found again to remove)", o.GetKind())
	case gv.Group == "apps" && o.GetKind() == "DaemonSet" && gv.Version != "v1":
		return fmt.Errorf("DaemonSet %s is %s; tare waits on apps/v1 DaemonSets", o.GetName(), o.GetAPIVersion())
	}
	return nil
}

func isDaemonSet(o *unstructured.Unstructured) bool {
	return o.GetAPIVersion() == "apps/v1" && o.GetKind() == "DaemonSet"
}

// objectKey names an object as kubectl does: kind.group, namespace and name.
type objectKey struct{ group, kind, namespace, name string }

func keyOf(o *unstructured.Unstructured) objectKey {
	gv, _ := schema.ParseGroupVersion(o.GetAPIVersion())
	return objectKey{gv.Group, o.GetKind(), o.GetNamespace(), o.GetName()}
}

func (k objectKey) String() string {
	kind := k.kind
	if k.group != "" {
		kind += "." + k.group
	}
	if k.namespace != "" {
		return kind + " " + k.namespace + "/" + k.name
	}
	return kind + " " + k.name
}

// installRank orders kinds for installing, as Helm does: what others live in or refer to first
// (namespaces, then custom resource definitions, then accounts, roles and configuration), workloads last.
// Removal runs the plan backwards.
func installRank(kind string) int {
	switch kind {
	case "Namespace":
		return 0
	case "CustomResourceDefinition":
		return 1
	case "PriorityClass", "ServiceAccount", "Secret", "ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim":
		return 2
	case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		return 3
	case "Service":
		return 4
	case "DaemonSet", "Deployment", "StatefulSet", "ReplicaSet", "Job", "CronJob", "Pod":
		return 6
	}
	return 5
}

// installPlan is the order objects are applied in (a stable sort by installRank: objects of one rank keep
// the manifests' order); removePlan is its reverse.
func installPlan(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := slices.Clone(objs)
	slices.SortStableFunc(out, func(a, b *unstructured.Unstructured) int { return installRank(a.GetKind()) - installRank(b.GetKind()) })
	return out
}

func removePlan(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := installPlan(objs)
	slices.Reverse(out)
	return out
}
