package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tare-dev/tare/internal/lab"
)

// release is the name of a variant's Helm release and the namespace it goes in.
func (h *HelmRelease) release(variant string) (name, namespace string) {
	name, namespace = h.Release, h.Namespace
	if name == "" {
		name = variant
	}
	if namespace == "" {
		namespace = name
	}
	return name, namespace
}

// renderHelm renders a variant's chart with helm template (the chart's CRDs included) and returns its
// objects, the namespace first: a Namespace object of the release's namespace unless the chart makes one,
// so that the release is created in a namespace of its own and removed with it.
func renderHelm(ctx context.Context, helm, dir string, v Variant) ([]*unstructured.Unstructured, string, error) {
	h := v.Helm
	name, ns := h.release(v.Name)
	values, err := json.Marshal(h.Values)
	if err != nil {
		return nil, "", fmt.Errorf("helm.values: %w", err)
	}
	vf := filepath.Join(dir, "values-"+v.Name+".json") // JSON is YAML: helm reads it as a values file
	if err := os.WriteFile(vf, values, 0o600); err != nil {
		return nil, "", err
	}
	defer func() { _ = os.Remove(vf) }()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, helm, "template", name, h.Chart, "--namespace", ns, "--include-crds", "--values", vf)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, "", fmt.Errorf("helm template %s %s: %w: %s", name, h.Chart, err, tail(strings.TrimSpace(stderr.String())))
	}
	objs, err := parseManifest(stdout.Bytes())
	if err != nil {
		return nil, "", fmt.Errorf("the objects helm template rendered of %s: %w", h.Chart, err)
	}
	for _, o := range objs {
		if o.GetKind() == "Namespace" && o.GetAPIVersion() == "v1" && o.GetName() == ns {
			return objs, ns, nil
		}
	}
	n := &unstructured.Unstructured{}
	n.SetAPIVersion("v1")
	n.SetKind("Namespace")
	n.SetName(ns)
	return append([]*unstructured.Unstructured{n}, objs...), ns, nil
}

// objectsOf are what a variant installs: its manifests' objects (namespaced ones that name no namespace go
// in "default", as kubectl puts them), then its chart's (those in the release's namespace), checked
// together (checkObjects). helm is built into the cache the first time a chart needs it.
func (r *Runner) objectsOf(ctx context.Context, in *installer, v Variant) ([]*unstructured.Unstructured, error) {
	objs, err := readObjects(v.Manifests)
	if err != nil {
		return nil, err
	}
	if err := in.setNamespaces(objs, "default"); err != nil {
		return nil, err
	}
	if v.Helm != nil {
		helm := lab.HelmBin()
		if helm == "" {
			r.say("  building helm %s into tare's cache (once; a few minutes)", lab.HelmVersion)
			c, err := lab.InstallHelm(ctx)
			if err != nil {
				return nil, fmt.Errorf("helm: %w", err)
			}
			helm = c.Path
		}
		hobjs, ns, err := renderHelm(ctx, helm, r.Store.Dir, v)
		if err != nil {
			return nil, err
		}
		if err := in.setNamespaces(hobjs, ns); err != nil {
			return nil, err
		}
		objs = append(objs, hobjs...)
	}
	if err := checkObjects(objs); err != nil {
		return nil, err
	}
	return objs, nil
}
