package lab

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/lab/images"
)

// nodeRuntime is the containerd of one real node of a running lab.
type nodeRuntime struct{ node, socket string }

// ImportToolsImage makes images.Tools available to the pods of the lab: it builds the image's
// archive if needed (images.ToolsArchive) and imports it into the containerd of every real node of the lab,
// node 1 and the extra nodes, together. A node whose containerd already holds this build of the image is
// left alone, so a second call only checks (well under a second). The lab must run with nodes (not
// control plane only) and every node's containerd must be running. Safe to call while pods run.
func (l *Lab) ImportToolsImage(ctx context.Context) error {
	return l.importHostImage(ctx, images.Tools, func(ctx context.Context) (string, error) {
		a, err := images.ToolsArchive(ctx)
		return a.Path, err
	})
}

// ImportHostImages imports into every real node of the lab those of refs (image references a
// pod names) that the lab builds from the machine's programs only on demand: images.Tools and
// images.Exporters. Other references are left to containerd (the lab's own images are imported at every
// up). A node that already holds the image's build is left alone.
func (l *Lab) ImportHostImages(ctx context.Context, refs []string) error {
	seen := map[string]bool{}
	for _, ref := range refs {
		if seen[ref] {
			continue
		}
		seen[ref] = true
		var err error
		switch ref {
		case images.Tools.Name:
			err = l.ImportToolsImage(ctx)
		case images.Exporters.Name:
			err = l.importHostImage(ctx, images.Exporters, images.ExportersArchive)
		}
		if err != nil {
			return fmt.Errorf("importing %s: %w", ref, err)
		}
	}
	return nil
}

// importHostImage imports img, whose archive build returns (building it when missing), into the
// containerd of every real node of the lab, as ImportToolsImage says.
func (l *Lab) importHostImage(ctx context.Context, img images.Image, build func(context.Context) (string, error)) error {
	st, err := l.fresh()
	if err != nil {
		return err
	}
	dir := st.Dir
	nodes, err := nodeRuntimes(dir, st)
	if err != nil {
		return err
	}
	ctr, err := exec.LookPath("ctr")
	if err != nil {
		return fmt.Errorf("importing %s needs ctr on PATH (containerd's package): %w", img.Name, ErrPrerequisite)
	}
	archive, err := build(ctx)
	if err != nil {
		return err
	}
	want, err := images.ManifestDigest(archive)
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	for _, n := range nodes {
		g.Go(func() error {
			if got, err := imageDigest(ctx, ctr, n.socket, img.Name); err == nil && got == want {
				return nil
			}
			if err := importImages(ctx, ctr, n.socket, []string{archive}); err != nil {
				return fmt.Errorf("node %s: %w", n.node, err)
			}
			got, err := imageDigest(ctx, ctr, n.socket, img.Name)
			if err == nil && got != want {
				err = fmt.Errorf("it holds %s, not the imported %s", got, want)
			}
			if err != nil {
				return fmt.Errorf("node %s: checking the imported %s: %w", n.node, img.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// nodeRuntimes lists the containerd of every real node the lab's state records, each of which must run.
func nodeRuntimes(dir string, st *State) ([]nodeRuntime, error) {
	p := paths{dir}
	var out []nodeRuntime
	for _, pr := range st.Processes {
		if pr.Name != component.Containerd {
			continue
		}
		n := nodeRuntime{node: st.Node, socket: p.containerdSocket()}
		if pr.Node != "" {
			n = nodeRuntime{node: pr.Node, socket: p.node(pr.Node).containerdSocket()}
		}
		if !alive(pr) {
			return nil, fmt.Errorf("the containerd of node %s (pid %d) is not running: see tare lab status --dir %s", n.node, pr.PID, dir)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the lab in %s runs no containerd (it is control plane only): the datapath tools need a lab with nodes (tare lab up as root): %w",
			dir, ErrPrerequisite)
	}
	return out, nil
}

// imageDigest is the digest containerd (at socket, namespace k8s.io) has for the image ref, "" if none.
func imageDigest(ctx context.Context, ctr, socket, ref string) (string, error) {
	out, err := exec.CommandContext(ctx, ctr, "--address", socket, "-n", "k8s.io", "images", "ls", "name=="+ref).Output()
	if err != nil {
		return "", fmt.Errorf("ctr images ls: %w", err)
	}
	return parseImageDigest(string(out), ref), nil
}

// parseImageDigest reads the digest of ref from `ctr images ls` (REF TYPE DIGEST SIZE PLATFORMS LABELS).
func parseImageDigest(out, ref string) string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == ref && strings.HasPrefix(f[2], "sha256:") {
			return f[2]
		}
	}
	return ""
}
